import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { createRuntime, LevelEventLog } from "../../src/index.js";
import { MemoryEventLog, scriptedProvider } from "../../src/testing/index.js";
import type { ScriptStep } from "../../src/testing/index.js";
import { workspace } from "../support/tools.js";
import { buildRequestHistory } from "../../src/providers/format-history.js";
import { anthropicMessagesViolations as validateAnthropicMessages, openAiChatViolations as validateOpenAiChat } from "../support/history-validators.js";

const dirs: string[] = [];
afterEach(async () => {
  await Promise.all(dirs.splice(0).map((dir) => rm(dir, { recursive: true, force: true })));
});

const read = (path: string, id?: string) => ({ ...(id ? { id } : {}), name: "read_file", arguments: JSON.stringify({ path }) });

describe("native history in the turn loop", () => {
  it("builds every provider request from the history projection, and records its diagnostics", async () => {
    const provider = scriptedProvider([{ content: "looking", toolCalls: [read("a.txt", "call_1"), read("b.txt")] }, { content: "alpha and beta" }]);
    const runtime = await createRuntime({ log: new MemoryEventLog(), provider, tools: workspace().tools, history: { system: "You are terse." } });
    const session = await runtime.openSession("s1");
    await session.send("read both");
    // The second request is exactly what session.history gives for the state before it.
    const second = provider.requests[1]!;
    expect(second.messages).toEqual([
      { role: "system", content: "You are terse." },
      { role: "user", content: "read both" },
      {
        role: "assistant",
        content: "looking",
        tool_calls: [
          { id: "call_1", type: "function", function: { name: "read_file", arguments: '{"path":"a.txt"}' } },
          { id: expect.stringMatching(/^call_/), type: "function", function: { name: "read_file", arguments: '{"path":"b.txt"}' } },
        ],
      },
      { role: "tool", tool_call_id: "call_1", content: "alpha" },
      { role: "tool", tool_call_id: expect.stringMatching(/^call_/), content: "beta" },
    ]);
    expect(validateOpenAiChat(second.messages)).toEqual([]);
    const diagnostics = (await runtime.events("s1")).filter((event) => event.type === "session.diagnostic.recorded").map((event) => (event.data as { name: string }).name);
    expect(diagnostics).toContain("structured-tool-history-selected");
    expect(diagnostics).toContain("structured-tool-history-serialized");
    expect(await runtime.replay("s1")).toMatchObject({ identical: true });
  });

  it("serializes the same log for Anthropic, and the result passes its rules", async () => {
    const provider = scriptedProvider([{ content: "looking", toolCalls: [read("a.txt"), read("missing.txt")] }, { content: "done" }], { format: "anthropic-messages" });
    const runtime = await createRuntime({ log: new MemoryEventLog(), provider, tools: workspace().tools });
    const session = await runtime.openSession("s1");
    await session.send("read");
    const messages = provider.requests[1]!.messages as { role: string; content: { type: string; is_error?: boolean }[] }[];
    expect(validateAnthropicMessages({ messages })).toEqual([]);
    expect(messages.map((message) => message.role)).toEqual(["user", "assistant", "user"]);
    expect(messages[2]?.content.map((block) => [block.type, block.is_error ?? false])).toEqual([
      ["tool_result", false],
      ["tool_result", true],
    ]);
  });

  it("compacts what no longer fits into one recorded summary, and replay reproduces it", async () => {
    const script: ScriptStep[] = [];
    for (let turn = 0; turn < 6; turn += 1) script.push({ content: `step ${turn} `.repeat(40), toolCalls: [read("a.txt")] });
    script.push({ content: "finished" });
    const provider = scriptedProvider(script);
    const runtime = await createRuntime({ log: new MemoryEventLog(), provider, tools: workspace().tools, history: { maxTokens: 600 } });
    const session = await runtime.openSession("s1");
    await session.send("work through the steps");
    await session.send("and once more"); // a new message: the earlier run is history now
    const events = await runtime.events("s1");
    const compactions = events.filter((event) => event.type === "session.history.compacted");
    expect(compactions.length).toBeGreaterThan(0);
    expect(compactions[0]?.data).toMatchObject({ compressor: "deterministic", unitsSummarized: expect.any(Number) });
    for (const request of provider.requests) expect(validateOpenAiChat(request.messages)).toEqual([]);
    // What was sent is what the log rebuilds at each request, compactions included.
    const requested = events.filter((event) => event.type === "turn.provider.requested");
    expect(requested).toHaveLength(provider.requests.length);
    for (const [index, event] of requested.entries()) {
      const state = await runtime.stateAt("s1", event.meta.streamPosition);
      expect(buildRequestHistory(state).messages).toEqual(provider.requests[index]?.messages);
    }
    expect(await runtime.replay("s1")).toMatchObject({ identical: true });
  });

  it("replays a reasoning echo to the same provider only, and never beside redacted arguments", async () => {
    const provider = scriptedProvider([
      { toolCalls: [read("a.txt")], echo: { reasoning_content: "I should read a.txt first." } },
      { toolCalls: [{ name: "read_file", arguments: JSON.stringify({ path: "b.txt", token: "ghp_TESTONLY0a1b2C3d4E5f6G7h8I9j0K1l2M3n" }) }], echo: { reasoning_content: "now b" } },
      { content: "done" },
    ]);
    const runtime = await createRuntime({ log: new MemoryEventLog(), provider, tools: workspace().tools });
    const session = await runtime.openSession("s1");
    await session.send("go");
    const assistant = (provider.requests[1]!.messages as { role: string; reasoning_content?: string }[]).find((message) => message.role === "assistant");
    expect(assistant?.reasoning_content).toBe("I should read a.txt first.");
    // Another format never gets it.
    expect(JSON.stringify(session.history({ format: "anthropic-messages" }).messages)).not.toContain("I should read a.txt first.");
    // The second response's echo sat beside a secret: it was not stored at all.
    const responses = (await runtime.events("s1")).filter((event) => event.type === "turn.provider.responded").map((event) => event.data as { echo?: unknown; echoDropped?: string });
    expect(responses[1]).toMatchObject({ echoDropped: "unsafe_arguments" });
    expect(responses[1]?.echo).toBeUndefined();
    expect(JSON.stringify(provider.requests[2]!.messages)).not.toContain("now b");
  });

  it("rebuilds byte-identical history from the log after a restart", async () => {
    const dir = await mkdtemp(join(tmpdir(), "turnlog-history-"));
    dirs.push(dir);
    const first = await LevelEventLog.open(dir, { durability: "sync" });
    const before = await createRuntime({
      log: first,
      provider: scriptedProvider([{ toolCalls: [read("a.txt"), { name: "write_file", arguments: '{"path":"c.txt","content":"x"}' }] }]),
      tools: workspace().tools,
    });
    const held = await before.openSession("s1");
    await held.send("copy");
    const openAi = JSON.stringify(held.history({ format: "openai-chat" }));
    const anthropic = JSON.stringify(held.history({ format: "anthropic-messages" }));
    expect(JSON.stringify(held.history({ format: "openai-chat" }))).toBe(openAi);
    await first.close();

    const log = await LevelEventLog.open(dir, { durability: "sync" });
    const runtime = await createRuntime({ log, provider: scriptedProvider([]), tools: workspace().tools });
    const reopened = await runtime.openSession("s1");
    expect(JSON.stringify(reopened.history({ format: "openai-chat" }))).toBe(openAi);
    expect(JSON.stringify(reopened.history({ format: "anthropic-messages" }))).toBe(anthropic);
    await log.close();
  });
});
