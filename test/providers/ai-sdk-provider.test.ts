import type { LanguageModelV3CallOptions, LanguageModelV3StreamPart, LanguageModelV3Usage } from "@ai-sdk/provider";
import { convertArrayToReadableStream, MockLanguageModelV3 } from "ai/test";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { aiSdkProvider } from "../../src/ai-sdk.js";
import { providerName, sessionSpans } from "../../src/otel/index.js";
import { createRuntime, defineTool, MemoryEventLog } from "../../src/index.js";
import type { SendOutcome } from "../../src/index.js";
import { eventsOf, runSession } from "./support/provider-session.js";

/*
 * aiSdkProvider with the AI SDK's own mock model (`MockLanguageModelV3` from `ai/test`): what the
 * model streams is finalized by turnlog's rules, what a provider needs echoed back (reasoning with
 * its providerMetadata, the metadata of text and tool calls) is recorded and sent back exactly on
 * the next request, and the session replays identical. The real provider packages against fake
 * servers speaking their wire formats are tested apart.
 */

const usage = (input: number, output: number): LanguageModelV3Usage => ({
  inputTokens: { total: input, noCache: input, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: output, text: output, reasoning: undefined },
});

const stream = (parts: LanguageModelV3StreamPart[]) => ({ stream: convertArrayToReadableStream(parts) });

/** OpenAI Responses' reasoning metadata as @ai-sdk/openai reports it: the item ID and its encrypted content. */
const reasoningMetadata = (item: string) => ({ openai: { itemId: item, reasoningEncryptedContent: `gAAAA-encrypted-${item}` } });

/** A first answer: reasoning, a little text, two tool calls whose input streamed in pieces, each with its own metadata. */
const firstAnswer: LanguageModelV3StreamPart[] = [
  { type: "stream-start", warnings: [] },
  { type: "response-metadata", id: "resp_1", modelId: "gpt-test" },
  { type: "reasoning-start", id: "rs_1:0", providerMetadata: { openai: { itemId: "rs_1", reasoningEncryptedContent: null } } },
  { type: "reasoning-delta", id: "rs_1:0", delta: "The user wants two words." },
  { type: "reasoning-end", id: "rs_1:0", providerMetadata: reasoningMetadata("rs_1") },
  { type: "text-start", id: "msg_1", providerMetadata: { openai: { itemId: "msg_1" } } },
  { type: "text-delta", id: "msg_1", delta: "Looking " },
  { type: "text-delta", id: "msg_1", delta: "both up." },
  { type: "text-end", id: "msg_1", providerMetadata: { openai: { itemId: "msg_1" } } },
  { type: "tool-input-start", id: "call_alpha", toolName: "lookup", providerMetadata: { openai: { itemId: "fc_1" } } },
  { type: "tool-input-delta", id: "call_alpha", delta: '{"word":' },
  { type: "tool-input-delta", id: "call_alpha", delta: '"alpha"}' },
  { type: "tool-input-end", id: "call_alpha" },
  { type: "tool-call", toolCallId: "call_alpha", toolName: "lookup", input: '{"word":"alpha"}', providerMetadata: { openai: { itemId: "fc_1" } } },
  { type: "tool-call", toolCallId: "call_beta", toolName: "lookup", input: '{"word":"beta"}', providerMetadata: { google: { thoughtSignature: "sig-beta" } } },
  { type: "finish", finishReason: { unified: "tool-calls", raw: undefined }, usage: usage(120, 31) },
];

/** A second answer after the tool results: more reasoning, then one more call. */
const secondAnswer: LanguageModelV3StreamPart[] = [
  { type: "reasoning-start", id: "rs_2:0", providerMetadata: reasoningMetadata("rs_2") },
  { type: "reasoning-end", id: "rs_2:0" },
  { type: "tool-call", toolCallId: "call_list", toolName: "list_words", input: "{}", providerMetadata: { openai: { itemId: "fc_2" } } },
  { type: "finish", finishReason: { unified: "tool-calls", raw: undefined }, usage: usage(180, 12) },
];

const finalAnswer: LanguageModelV3StreamPart[] = [
  { type: "text-start", id: "msg_3" },
  { type: "text-delta", id: "msg_3", delta: "alpha and beta." },
  { type: "text-end", id: "msg_3" },
  { type: "finish", finishReason: { unified: "stop", raw: "completed" }, usage: usage(220, 5) },
];

function mockModel(answers: LanguageModelV3StreamPart[][]) {
  return new MockLanguageModelV3({ provider: "openai.responses", modelId: "gpt-test", doStream: answers.map(stream) });
}

const promptOf = (call: LanguageModelV3CallOptions | undefined) => call?.prompt ?? [];

describe("aiSdkProvider with the AI SDK's mock model", () => {
  it("runs several tool turns, sends the reasoning and provider metadata of each answer back exactly, and replays identical", async () => {
    const model = mockModel([firstAnswer, secondAnswer, finalAnswer]);
    const deltas: string[] = [];
    const { runtime, outcome, events, ran } = await runSession(aiSdkProvider(model), "Look up alpha and beta", {
      onDelta: (text) => deltas.push(text),
      runtime: { history: { system: "Be brief." } },
    });

    expect(outcome).toMatchObject({ status: "completed", text: "alpha and beta." });
    expect(ran).toEqual(["lookup alpha", "lookup beta", "list_words"]);
    // Reasoning is never visible text.
    expect(deltas).toEqual(["Looking ", "both up.", "alpha and beta."]);
    expect(model.doStreamCalls).toHaveLength(3);

    // The second request: the first answer as the AI SDK's own loop would send it back — the
    // reasoning part with its final providerMetadata, the text with its item ID, each tool call
    // with its metadata — then one result per call, IDs paired.
    const second = promptOf(model.doStreamCalls[1]);
    expect(second).toEqual([
      { role: "system", content: "Be brief." },
      { role: "user", content: [{ type: "text", text: "Look up alpha and beta" }] },
      {
        role: "assistant",
        content: [
          { type: "reasoning", text: "The user wants two words.", providerOptions: reasoningMetadata("rs_1") },
          { type: "text", text: "Looking both up.", providerOptions: { openai: { itemId: "msg_1" } } },
          { type: "tool-call", toolCallId: "call_alpha", toolName: "lookup", input: { word: "alpha" }, providerOptions: { openai: { itemId: "fc_1" } } },
          { type: "tool-call", toolCallId: "call_beta", toolName: "lookup", input: { word: "beta" }, providerOptions: { google: { thoughtSignature: "sig-beta" } } },
        ],
      },
      {
        role: "tool",
        content: [
          { type: "tool-result", toolCallId: "call_alpha", toolName: "lookup", output: { type: "text", value: "the first letter" } },
          { type: "tool-result", toolCallId: "call_beta", toolName: "lookup", output: { type: "text", value: "the second letter" } },
        ],
      },
    ]);
    // The third request carries both answers' echoes: the first unchanged, the second's empty
    // reasoning (encrypted content only) kept.
    const third = promptOf(model.doStreamCalls[2]);
    expect(third.slice(0, 4)).toEqual(second);
    expect(third[4]).toEqual({
      role: "assistant",
      content: [
        { type: "reasoning", text: "", providerOptions: reasoningMetadata("rs_2") },
        { type: "tool-call", toolCallId: "call_list", toolName: "list_words", input: {}, providerOptions: { openai: { itemId: "fc_2" } } },
      ],
    });
    expect(model.doStreamCalls[0]?.tools?.map((tool) => tool.name)).toEqual(["lookup", "list_words"]);

    // What was recorded: the echo on the response event, usage and finish reasons mapped.
    const responded = eventsOf(events, "turn.provider.responded");
    expect(responded.map((event) => event.data.finishReason)).toEqual(["tool_calls", "tool_calls", "stop"]);
    expect(responded[0]?.data.usage).toEqual({ inputTokens: 120, outputTokens: 31 });
    expect(responded[0]?.data.echo).toEqual({
      parts: [
        { type: "reasoning", text: "The user wants two words.", providerMetadata: reasoningMetadata("rs_1") },
        { type: "text", text: "Looking both up.", providerMetadata: { openai: { itemId: "msg_1" } } },
        { type: "tool-call", call: 0, providerMetadata: { openai: { itemId: "fc_1" } } },
        { type: "tool-call", call: 1, providerMetadata: { google: { thoughtSignature: "sig-beta" } } },
      ],
    });
    expect(responded[2]?.data.echo).toBeUndefined();
    expect(eventsOf(events, "turn.provider.requested")[0]?.data).toMatchObject({ format: "ai-sdk", providerId: "ai-sdk:openai.responses:gpt-test" });

    expect(await runtime.replay("s1")).toMatchObject({ identical: true, divergences: [] });
  });

  it("the history built from the log is, message for message, the prompt the model was sent", async () => {
    // The history is built from the log alone, so a runtime resuming from it sends what a run without a restart sends.
    const model = mockModel([firstAnswer, secondAnswer, finalAnswer]);
    const { session } = await runSession(aiSdkProvider(model), "Look up alpha and beta");
    const history = session.history({ format: "ai-sdk" });
    expect(history.messages).toEqual(promptOf(model.doStreamCalls[2]).concat([{ role: "assistant", content: [{ type: "text", text: "alpha and beta." }] }]));
  });

  it("a tool call cut by the length limit before it finished is retried once, then refused; it never runs", async () => {
    const truncated: LanguageModelV3StreamPart[] = [
      { type: "tool-input-start", id: "call_cut", toolName: "lookup" },
      { type: "tool-input-delta", id: "call_cut", delta: '{"word":"al' },
      { type: "finish", finishReason: { unified: "length", raw: "max_output_tokens" }, usage: usage(50, 4096) },
    ];
    const model = mockModel([truncated, truncated]);
    const { outcome, events, ran } = await runSession(aiSdkProvider(model), "Look up alpha");
    expect(ran).toEqual([]);
    expect(eventsOf(events, "turn.provider.failed").map((event) => event.data.kind)).toEqual(["truncated-tool-calls", "truncated-tool-calls"]);
    expect(outcome).toMatchObject({ status: "stopped", reason: "refused:truncated-tool-calls" });
    expect(JSON.stringify(events)).not.toContain('"word":"al');
  });

  it("a stream that ends inside a tool call is an incomplete-stream failure, retried, and the call is never surfaced", async () => {
    const broken: LanguageModelV3StreamPart[] = [
      { type: "tool-input-start", id: "call_cut", toolName: "lookup" },
      { type: "tool-input-delta", id: "call_cut", delta: '{"word":"al' },
    ];
    const model = mockModel([broken, finalAnswer]);
    const { outcome, events, ran } = await runSession(aiSdkProvider(model), "Look up alpha");
    expect(ran).toEqual([]);
    expect(eventsOf(events, "turn.provider.failed").map((event) => event.data.kind)).toEqual(["incomplete-stream"]);
    expect(outcome).toMatchObject({ status: "completed", text: "alpha and beta." });
  });

  it("a crash between the answer and its tools, then resume(), sends the model the reasoning and metadata a crash-free run sends", async () => {
    // The first answer calls `lookup` twice; in the crashing run the first lookup never returns
    // (the process dies with it running) and a new runtime — a new model object, as after a
    // restart — resumes the session from the log alone.
    const run = async (crash: boolean) => {
      const log = new MemoryEventLog();
      let onCrash: (() => void) | undefined;
      let armed = crash;
      const lookup = defineTool({
        name: "lookup",
        description: "Look a word up",
        risk: "read-only-local",
        input: z.object({ word: z.string() }),
        run: ({ word }) => (armed ? new Promise<string>(() => onCrash?.()) : `entry for ${word}`),
      });
      const open = async (model: MockLanguageModelV3) => {
        const runtime = await createRuntime({ log, provider: aiSdkProvider(model), tools: [lookup], providerRetry: { baseDelayMs: 0 } });
        return { runtime, session: await runtime.openSession("s1") };
      };
      const before = mockModel([firstAnswer, finalAnswer]);
      let { runtime, session } = await open(before);
      const crashed = new Promise<"crash">((resolve) => {
        onCrash = () => resolve("crash");
      });
      const sending = session.send("Look up alpha and beta");
      sending.catch(() => undefined);
      let outcome: SendOutcome | "crash" = await Promise.race([sending, crashed]);
      let after = before;
      if (outcome === "crash") {
        armed = false;
        after = mockModel([finalAnswer]);
        ({ runtime, session } = await open(after));
        outcome = await session.resume();
      }
      expect(outcome).toMatchObject({ status: "completed" });
      expect(await runtime.replay("s1")).toMatchObject({ identical: true });
      // The crashing run did crash: the request after it went to the new model object.
      expect(after === before).toBe(!crash);
      return after.doStreamCalls.at(-1);
    };
    const crashFree = promptOf(await run(false));
    const resumed = promptOf(await run(true));
    // The user message and the first answer — reasoning, text, calls and all their metadata — are
    // what the crash-free run sends; every call is answered, IDs paired (the interrupted call's
    // result says what happened to it instead of its entry).
    expect(resumed.slice(0, 2)).toEqual(crashFree.slice(0, 2));
    expect(resumed[1]).toMatchObject({ role: "assistant", content: [{ type: "reasoning", providerOptions: reasoningMetadata("rs_1") }, { type: "text" }, { type: "tool-call" }, { type: "tool-call" }] });
    const ids = (message: (typeof resumed)[number] | undefined) => (message?.role === "tool" ? message.content.map((part) => (part.type === "tool-result" ? part.toolCallId : "")) : []);
    expect(ids(resumed[2])).toEqual(["call_alpha", "call_beta"]);
    expect(ids(resumed[2])).toEqual(ids(crashFree[2]));
  });

  it("fork, audit and OpenTelemetry spans read an ai-sdk session as any other", async () => {
    const model = mockModel([firstAnswer, secondAnswer, finalAnswer]);
    const { runtime, events } = await runSession(aiSdkProvider(model), "Look up alpha and beta");
    expect((await runtime.audit("s1")).map((row) => row.tool)).toEqual(["lookup", "lookup", "list_words"]);
    const spans = sessionSpans(events, { sessionId: "s1" });
    const chats = spans.filter((span) => span.attributes["gen_ai.operation.name"] === "chat");
    expect(chats).toHaveLength(3);
    expect(chats[0]?.attributes).toMatchObject({ "gen_ai.provider.name": "openai", "gen_ai.request.model": "gpt-test", "gen_ai.usage.input_tokens": 120, "gen_ai.usage.output_tokens": 31 });
    expect(chats[0]?.name).toBe("chat gpt-test");
    // The model's own provider, in the conventions' names; an ID the host chose names none.
    const names = ["openai.responses", "anthropic.messages", "google.generative-ai", "google.vertex.chat", "amazon-bedrock", "mistral.chat", "ollama.chat"].map((provider) => providerName("ai-sdk", `ai-sdk:${provider}:m`));
    expect(names).toEqual(["openai", "anthropic", "gcp.gemini", "gcp.vertex_ai", "aws.bedrock", "mistral_ai", "ollama"]);
    expect(providerName("ai-sdk", "my-gateway")).toBe("ai-sdk");
    // A fork at the second request carries the first answer's echo: its history is that request's prompt.
    const secondRequest = eventsOf(events, "turn.provider.requested")[1]!;
    await runtime.fork("s1", { at: secondRequest.meta.streamPosition, to: "f1" });
    const fork = await runtime.openSession("f1");
    expect(fork.history({ format: "ai-sdk" }).messages).toEqual(promptOf(model.doStreamCalls[1]));
  });
});
