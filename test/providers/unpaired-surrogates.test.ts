import { describe, expect, it } from "vitest";
import { z } from "zod";
import { createRuntime, defineTool } from "../../src/index.js";
import { MemoryEventLog, scriptedProvider } from "../../src/testing/index.js";
import { wellFormedJsonText, wellFormedText, wellFormedValue } from "../../src/util/well-formed-text.js";
import { anthropicMessagesViolations, openAiChatViolations } from "../support/history-validators.js";
import { finishChunk, fragment, messageDelta, messageStart, messageStop, textChunk, toolChunk, toolUseStart } from "./stream-builders.js";

/** A tool that records what it was given. */
function echoTool() {
  const inputs: string[] = [];
  const tool = defineTool({
    name: "echo",
    description: "Echo a value",
    risk: "read-only-local",
    input: z.object({ value: z.string() }),
    run: ({ value }) => {
      inputs.push(value);
      return `got ${value.length}`;
    },
  });
  return { tool, inputs };
}

type Logged = { type: string; data: Record<string, unknown> };

describe("a provider stream that carries half of an emoji (a lone UTF-16 surrogate)", () => {
  it("OpenAI: text, reasoning, IDs and arguments (raw or as a JSON escape) are kept with U+FFFD, and the session goes on", async () => {
    const { tool, inputs } = echoTool();
    // As SSE carries it: JSON text whose escapes decode to lone surrogates.
    const chunks = JSON.parse(
      JSON.stringify([
        textChunk("smile \ud83d"),
        { ...textChunk(""), choices: [{ index: 0, delta: { reasoning_content: "think \udc00" }, finish_reason: null }] },
        toolChunk(fragment(0, { id: "call_\ud83d", name: "echo", arguments: '{"value":"a\\ud83d b\\ud83d\\ude00"}' })),
        toolChunk(fragment(1, { id: "call_2", name: "echo", arguments: '{"value":"x\ud800"}' })),
        finishChunk("tool_calls"),
      ]),
    ) as unknown[];
    const provider = scriptedProvider([{ chunks }, { content: "done" }]);
    const runtime = await createRuntime({ log: new MemoryEventLog(), provider, tools: [tool] });
    const session = await runtime.openSession("s1");

    // Before: the append of turn.provider.responded threw a TypeError out of send(), and the session was left unfinished.
    expect(await session.send("go")).toEqual({ status: "completed", text: "done", pendingApprovals: [] });
    expect(inputs).toEqual(["a\ufffd b\u{1F600}", "x\ufffd"]);
    const events = (await runtime.events("s1")) as unknown as Logged[];
    const responded = events.find((event) => event.type === "turn.provider.responded")!.data;
    expect(responded.content).toBe("smile \ufffd");
    expect(responded.echo).toEqual({ reasoning_content: "think \ufffd" });
    expect(responded.toolCalls).toMatchObject([{ id: "call_\ufffd", argumentsText: '{"value":"a\\ufffd b\\ud83d\\ude00"}' }, { id: "call_2" }]);
    // The ID lost its meaning: the call got a derived one, valid for both providers.
    const normalized = events.find((event) => event.type === "turn.tool_calls.normalized")!.data as { calls: { id: string; idSource: string }[] };
    expect(normalized.calls.map((call) => call.idSource)).toEqual(["derived", "provider"]);
    expect(openAiChatViolations(session.history({ format: "openai-chat" }).messages)).toEqual([]);
    expect(anthropicMessagesViolations({ messages: session.history({ format: "anthropic-messages" }).messages })).toEqual([]);
    expect(await runtime.replay("s1")).toMatchObject({ identical: true });
  });

  it("Anthropic: a tool_use input streamed with a lone surrogate escape runs with U+FFFD in its place", async () => {
    const { tool, inputs } = echoTool();
    const events = [
      messageStart(),
      toolUseStart(0, { id: "toolu_1", name: "echo" }),
      { type: "content_block_delta", index: 0, delta: { type: "input_json_delta", partial_json: '{"value":"\\udbff' } },
      { type: "content_block_delta", index: 0, delta: { type: "input_json_delta", partial_json: '!"}' } },
      { type: "content_block_stop", index: 0 },
      messageDelta("tool_use"),
      messageStop,
    ];
    const provider = scriptedProvider([{ chunks: events }, { content: "done" }], { format: "anthropic-messages" });
    const runtime = await createRuntime({ log: new MemoryEventLog(), provider, tools: [tool] });
    const session = await runtime.openSession("s1");
    expect(await session.send("go")).toMatchObject({ status: "completed" });
    expect(inputs).toEqual(["\ufffd!"]);
    expect(anthropicMessagesViolations({ messages: session.history({ format: "anthropic-messages" }).messages })).toEqual([]);
  });

  it("arguments that are not JSON and start with an astral character are a rejected plan, not a crash", async () => {
    const { tool, inputs } = echoTool();
    const provider = scriptedProvider([{ toolCalls: [{ id: "call_1", name: "echo", arguments: "\u{1F600}" }] }, { content: "sorry" }]);
    const runtime = await createRuntime({ log: new MemoryEventLog(), provider, tools: [tool] });
    const session = await runtime.openSession("s1");
    expect(await session.send("go")).toMatchObject({ status: "completed", text: "sorry" });
    expect(inputs).toEqual([]);
    const planned = ((await runtime.events("s1")) as unknown as Logged[]).find((event) => event.type === "turn.tool_calls.planned")!.data;
    expect(planned.plans).toMatchObject([{ status: "rejected", reason: "malformed-arguments" }]);
  });
});

describe("wellFormedText, wellFormedJsonText, wellFormedValue", () => {
  it("replace lone surrogates, raw or escaped, and leave pairs and escaped backslashes alone", () => {
    expect(wellFormedText("a\ud83d b\ude00 \ud83d\ude00")).toBe("a\ufffd b\ufffd \u{1F600}");
    expect(wellFormedJsonText('{"v":"\\ud800"}')).toBe('{"v":"\\ufffd"}');
    expect(wellFormedJsonText('{"v":"\\ud83d\\ude00"}')).toBe('{"v":"\\ud83d\\ude00"}');
    expect(wellFormedJsonText('{"v":"\\\\ud800"}')).toBe('{"v":"\\\\ud800"}');
    expect(wellFormedJsonText('{"v":"\\udc00\\ud800x"}')).toBe('{"v":"\\ufffd\\ufffdx"}');
    expect(wellFormedJsonText('{"v":"\\ud83d\\n\\ude00"}')).toBe('{"v":"\\ufffd\\n\\ufffd"}');
    const same = { a: "\u{1F600}" };
    expect(wellFormedValue(same)).toBe(same);
    expect(wellFormedValue({ "k\ud800": ["x\udc00"] })).toEqual({ "k\ufffd": ["x\ufffd"] });
  });
});
