import type { SharedV3ProviderOptions } from "@ai-sdk/provider";
import { afterEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { aiSdkProvider } from "../../src/ai-sdk.js";
import { createRuntime, defineTool } from "../../src/index.js";
import type { RuntimeOptions, SendOutcome } from "../../src/index.js";
import type { LanguageModelV3 } from "@ai-sdk/provider";
import { redactedThinking, startAnthropicThinkingServer, text, thinking, toolUse } from "./support/fake-servers/anthropic-thinking-server.js";
import type { FakeProviderServer } from "./support/fake-servers/checking-server.js";
import { answer, call, startGeminiServer, thought } from "./support/fake-servers/gemini-server.js";
import { anthropicModel, anthropicProviderOptions, fakeProviderKey, geminiModel, geminiProviderOptions, responsesModel, responsesProviderOptions } from "./support/fake-servers/provider-models.js";
import { functionCall, message, reasoning, startResponsesServer } from "./support/fake-servers/responses-server.js";
import { eventsOf, temporaryLevelLog } from "./support/provider-session.js";

/*
 * Whole turnlog sessions through the real provider packages — `@ai-sdk/openai` on the Responses
 * API, `@ai-sdk/anthropic` with extended thinking, `@ai-sdk/google` on a Gemini 3 model — each
 * pointed at a fake server on 127.0.0.1 that speaks the provider's streaming wire format and checks
 * every request: reasoning items, thinking signatures and thought signatures echoed unchanged,
 * every call answered, IDs paired (test/providers/support/fake-servers/). The log is a real
 * LevelDB log, and each session replays identical from it.
 */

/** What `read_file` finds: a small project, multi-line files as a coding agent reads them. */
const files = new Map([
  ["package.json", `{\n  "name": "demo",\n  "version": "1.4.2",\n  "type": "module",\n  "main": "./dist/index.js",\n  "scripts": { "test": "vitest run" }\n}\n`],
  ["src/index.ts", `export { parse } from "./parse.js";\nexport type { Options } from "./options.js";\n\n/** The library's version, kept in step with package.json. */\nexport const version = "1.4.2";\n`],
  ["README.md", "# demo\n\nParses things. Install with `npm install demo`, then:\n\n```ts\nimport { parse } from \"demo\";\nparse(\"a=1\");\n```\n"],
]);

function readFileTool() {
  const ran: string[] = [];
  const readFile = defineTool({
    name: "read_file",
    description: "Read a file of the project",
    risk: "read-only-local",
    input: z.object({ path: z.string() }),
    run: ({ path }) => {
      ran.push(path);
      return files.get(path) ?? `ENOENT: no such file or directory, open '${path}'`;
    },
  });
  return { ran, tools: [readFile] };
}

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** One `send` through `model` over a LevelDB log in a temporary directory. */
async function session(server: FakeProviderServer, model: LanguageModelV3, providerOptions: SharedV3ProviderOptions, runtimeOptions: Partial<RuntimeOptions> = {}) {
  cleanups.push(() => server.close());
  const { log, remove } = await temporaryLevelLog();
  cleanups.push(remove);
  const { ran, tools } = readFileTool();
  const runtime = await createRuntime({ log, provider: aiSdkProvider(model, { providerOptions }), tools, providerRetry: { baseDelayMs: 1, maxDelayMs: 20 }, history: { system: "You are a coding assistant." }, ...runtimeOptions });
  const opened = await runtime.openSession("s1");
  const outcome = await opened.send("What version does the project say it is, and is the README right about the entry point?");
  const events = await runtime.events("s1");
  return { runtime, outcome, events, ran };
}

const finalText = "The project is at version 1.4.2; the README's `import { parse }` matches src/index.ts.";

describe("aiSdkProvider through the real provider packages against fake servers", () => {
  it("@ai-sdk/openai on the Responses API: several tool turns, every reasoning item echoed with its encrypted content, and the session replays identical", async () => {
    const server = await startResponsesServer([
      { output: [reasoning("rs_1", "enc-one", ["The version is in package.json."]), functionCall("fc_1", "call_1", "read_file", { path: "package.json" })] },
      {
        output: [
          reasoning("rs_2", "enc-two"),
          message("msg_2", "Checking the entry point and the README."),
          functionCall("fc_2", "call_2", "read_file", { path: "src/index.ts" }),
          functionCall("fc_3", "call_3", "read_file", { path: "README.md" }),
        ],
      },
      { output: [reasoning("rs_3", "enc-three", ["Both agree.", "Answering."]), message("msg_3", finalText)] },
    ]);
    const { runtime, outcome, events, ran } = await session(server, responsesModel(server.url), responsesProviderOptions);

    expect(server.problems).toEqual([]);
    expect(server.remaining).toBe(0);
    expect(outcome).toMatchObject({ status: "completed", text: finalText });
    expect(ran).toEqual(["package.json", "src/index.ts", "README.md"]);
    // The last request carries both earlier reasoning items, their encrypted content unchanged.
    const last = server.requests.at(-1)?.body as { input: Record<string, unknown>[] };
    expect(last.input.filter((item) => item.type === "reasoning").map((item) => [item.id, item.encrypted_content])).toEqual([
      ["rs_1", "enc-one"],
      ["rs_2", "enc-two"],
    ]);
    expect(last.input.filter((item) => item.type === "function_call_output").map((item) => [item.call_id, item.output])).toEqual([
      ["call_1", files.get("package.json")],
      ["call_2", files.get("src/index.ts")],
      ["call_3", files.get("README.md")],
    ]);
    expect(JSON.stringify(events)).not.toContain(fakeProviderKey);
    expect(eventsOf(events, "turn.provider.responded").map((event) => event.data.finishReason)).toEqual(["tool_calls", "tool_calls", "stop"]);
    expect(await runtime.replay("s1")).toMatchObject({ identical: true, divergences: [] });
  });

  it("@ai-sdk/anthropic with extended thinking: every thinking block comes back with its signature, redacted ones too, and the session replays identical", async () => {
    const server = await startAnthropicThinkingServer([
      { content: [thinking("The version is in package.json; read it first.", "sig-one"), toolUse("toolu_1", "read_file", { path: "package.json" })] },
      {
        content: [
          thinking("1.4.2. Now the entry point and the README.", "sig-two"),
          redactedThinking("redacted-two"),
          text("Checking the entry point and the README."),
          toolUse("toolu_2", "read_file", { path: "src/index.ts" }),
          toolUse("toolu_3", "read_file", { path: "README.md" }),
        ],
      },
      { content: [thinking("Both agree.", "sig-three"), text(finalText)] },
    ]);
    const { runtime, outcome, events, ran } = await session(server, anthropicModel(server.url), anthropicProviderOptions);

    expect(server.problems).toEqual([]);
    expect(server.remaining).toBe(0);
    expect(outcome).toMatchObject({ status: "completed", text: finalText });
    expect(ran).toEqual(["package.json", "src/index.ts", "README.md"]);
    const last = server.requests.at(-1)?.body as { messages: { role: string; content: Record<string, unknown>[] | string }[] };
    const blocks = last.messages.flatMap((entry) => (entry.role === "assistant" && Array.isArray(entry.content) ? entry.content : []));
    expect(blocks.filter((block) => block.type === "thinking" || block.type === "redacted_thinking").map((block) => block.signature ?? block.data)).toEqual(["sig-one", "sig-two", "redacted-two"]);
    expect(JSON.stringify(events)).not.toContain(fakeProviderKey);
    expect(await runtime.replay("s1")).toMatchObject({ identical: true, divergences: [] });
  });

  it("@ai-sdk/google on Gemini 3: every function call comes back with its thought signature, and the session replays identical", async () => {
    const server = await startGeminiServer([
      { parts: [thought("The version is in package.json."), call("read_file", { path: "package.json" }, { signature: "sig-one" })] },
      { parts: [thought("Now the entry point and the README."), call("read_file", { path: "src/index.ts" }, { signature: "sig-two" }), call("read_file", { path: "README.md" })] },
      { parts: [answer(finalText, { signature: "sig-three" })] },
    ]);
    const { runtime, outcome, events, ran } = await session(server, geminiModel(server.url), geminiProviderOptions);

    expect(server.problems).toEqual([]);
    expect(server.remaining).toBe(0);
    expect(outcome).toMatchObject({ status: "completed", text: finalText });
    expect(ran).toEqual(["package.json", "src/index.ts", "README.md"]);
    const last = server.requests.at(-1)?.body as { contents: { role: string; parts: Record<string, unknown>[] }[] };
    const signed = last.contents.flatMap((entry) => entry.parts.flatMap((part) => (part.functionCall !== undefined ? [part.thoughtSignature] : [])));
    expect(signed).toEqual(["sig-one", "sig-two", undefined]);
    expect(JSON.stringify(events)).not.toContain(fakeProviderKey);
    expect(await runtime.replay("s1")).toMatchObject({ identical: true, divergences: [] });
  });

  it("@ai-sdk/openai on the Responses API: a crash between the answer and its tools, then resume() in a new runtime with a new model object, sends the reasoning items a crash-free run sends", async () => {
    const script = () => [
      { output: [reasoning("rs_1", "enc-one", ["Both files are needed."]), functionCall("fc_1", "call_1", "read_file", { path: "package.json" }), functionCall("fc_2", "call_2", "read_file", { path: "README.md" })] },
      { output: [reasoning("rs_2", "enc-two", ["Answering."]), message("msg_2", finalText)] },
    ];
    const lastInput = async (crash: boolean) => {
      const server = await startResponsesServer(script());
      return ((await crashRun(crash, server, () => responsesModel(server.url), responsesProviderOptions)) as { input: Record<string, unknown>[] }).input;
    };
    const crashFree = await lastInput(false);
    const resumed = await lastInput(true);
    // The reasoning item (encrypted content and summary) and both calls are what the crash-free run
    // sends; every call has an output, paired by call ID (the interrupted reads' outputs say what
    // happened to them instead of the files).
    const withoutOutputs = (input: Record<string, unknown>[]) => input.map((item) => (item.type === "function_call_output" ? { ...item, output: "(output)" } : item));
    expect(withoutOutputs(resumed)).toEqual(withoutOutputs(crashFree));
    expect(resumed.filter((item) => item.type === "reasoning")).toEqual([{ type: "reasoning", id: "rs_1", encrypted_content: "enc-one", summary: [{ type: "summary_text", text: "Both files are needed." }] }]);
    expect(resumed.filter((item) => item.type === "function_call_output").map((item) => item.call_id)).toEqual(["call_1", "call_2"]);
    // Both reads had started (read-only calls run together) when the process died; neither is run again.
    expect(resumed.filter((item) => item.type === "function_call_output").every((item) => String(item.output).includes("interrupted"))).toBe(true);
    expect(crashFree.filter((item) => item.type === "function_call_output").map((item) => item.output)).toEqual([files.get("package.json"), files.get("README.md")]);
  });

  it("@ai-sdk/anthropic with extended thinking: a crash between the answer and its tools, then resume(), sends the thinking blocks and signatures a crash-free run sends", async () => {
    const script = () => [
      { content: [thinking("Both files are needed.", "sig-one"), redactedThinking("redacted-one"), toolUse("toolu_1", "read_file", { path: "package.json" }), toolUse("toolu_2", "read_file", { path: "README.md" })] },
      { content: [thinking("Answering.", "sig-two"), text(finalText)] },
    ];
    type Block = Record<string, unknown>;
    const lastMessages = async (crash: boolean) => {
      const server = await startAnthropicThinkingServer(script());
      return ((await crashRun(crash, server, () => anthropicModel(server.url), anthropicProviderOptions)) as { messages: { role: string; content: Block[] | string }[] }).messages;
    };
    const crashFree = await lastMessages(false);
    const resumed = await lastMessages(true);
    const withoutResults = (messages: typeof resumed) =>
      messages.map((entry) => (Array.isArray(entry.content) ? { ...entry, content: entry.content.map((block) => (block.type === "tool_result" ? { type: block.type, tool_use_id: block.tool_use_id, content: "(result)" } : block)) } : entry));
    expect(withoutResults(resumed)).toEqual(withoutResults(crashFree));
    expect(resumed[1]).toMatchObject({
      role: "assistant",
      content: [
        { type: "thinking", thinking: "Both files are needed.", signature: "sig-one" },
        { type: "redacted_thinking", data: "redacted-one" },
        { type: "tool_use", id: "toolu_1" },
        { type: "tool_use", id: "toolu_2" },
      ],
    });
    const results = (messages: typeof resumed) => messages.flatMap((entry) => (Array.isArray(entry.content) ? entry.content.filter((block) => block.type === "tool_result").map((block) => block.tool_use_id) : []));
    expect(results(resumed)).toEqual(["toolu_1", "toolu_2"]);
    // The interrupted reads come back as errors (the AI SDK's error-text output), the crash-free ones as the files.
    const resultBlocks = (messages: typeof resumed) => messages.flatMap((entry) => (Array.isArray(entry.content) ? entry.content.filter((block) => block.type === "tool_result") : []));
    expect(resultBlocks(resumed).map((block) => block.is_error)).toEqual([true, true]);
    expect(resultBlocks(crashFree).map((block) => [block.is_error, block.content])).toEqual([
      [undefined, files.get("package.json")],
      [undefined, files.get("README.md")],
    ]);
  });

  it("@ai-sdk/google on Gemini 3: a crash between the answer and its tools, then resume(), sends the function calls with the thought signature a crash-free run sends", async () => {
    const script = () => [
      { parts: [thought("Both files are needed."), call("read_file", { path: "package.json" }, { signature: "sig-one" }), call("read_file", { path: "README.md" })] },
      { parts: [answer(finalText, { signature: "sig-two" })] },
    ];
    type Part = Record<string, unknown>;
    const lastContents = async (crash: boolean) => {
      const server = await startGeminiServer(script());
      return ((await crashRun(crash, server, () => geminiModel(server.url), geminiProviderOptions)) as { contents: { role: string; parts: Part[] }[] }).contents;
    };
    const crashFree = await lastContents(false);
    const resumed = await lastContents(true);
    // The server gave the calls no IDs, so @ai-sdk/google made some up (random, one run to the next)
    // and sends them back as `functionCall.id`; within a run they are the log's, and pair.
    const callIds = (contents: typeof resumed) => contents.flatMap((entry) => entry.parts.flatMap((part) => (part.functionCall !== undefined ? [(part.functionCall as Part).id] : [])));
    const responseIds = (contents: typeof resumed) => contents.flatMap((entry) => entry.parts.flatMap((part) => (part.functionResponse !== undefined ? [(part.functionResponse as Part).id] : [])));
    expect(responseIds(resumed)).toEqual(callIds(resumed));
    expect(responseIds(crashFree)).toEqual(callIds(crashFree));
    const comparable = (contents: typeof resumed) =>
      contents.map((entry) => ({
        ...entry,
        parts: entry.parts.map((part) => (part.functionResponse !== undefined ? { functionResponse: "(response)" } : part.functionCall !== undefined ? { ...part, functionCall: { ...(part.functionCall as Part), id: "(id)" } } : part)),
      }));
    expect(comparable(resumed)).toEqual(comparable(crashFree));
    const calls = resumed.flatMap((entry) => entry.parts.filter((part) => part.functionCall !== undefined));
    expect(calls.map((part) => part.thoughtSignature)).toEqual(["sig-one", undefined]);
    const responses = (contents: typeof resumed) => contents.flatMap((entry) => entry.parts.flatMap((part) => (part.functionResponse !== undefined ? [part.functionResponse] : [])));
    expect(responses(resumed)).toHaveLength(2);
    expect(JSON.stringify(responses(resumed))).toContain("interrupted");
    expect(JSON.stringify(responses(crashFree))).toContain("1.4.2");
  });

  it("@ai-sdk/openai on the Responses API: a 429, a stream reset inside a call and a call under max_output_tokens are retried by turnlog's rules, none of them runs a tool, and the session replays identical", async () => {
    const server = await startResponsesServer([
      { failure: { status: 429, message: "Rate limit reached", headers: { "retry-after": "0" } } },
      { output: [reasoning("rs_cut", "enc-cut"), functionCall("fc_cut", "call_cut", "read_file", { path: "package.json" })], cutAfterFrames: 6 },
      { output: [reasoning("rs_long", "enc-long"), functionCall("fc_long", "call_long", "read_file", { path: "package.json" })], incompleteReason: "max_output_tokens" },
      { output: [reasoning("rs_1", "enc-one", ["The version is in package.json."]), functionCall("fc_1", "call_1", "read_file", { path: "package.json" })] },
      { output: [reasoning("rs_2", "enc-two"), message("msg_2", finalText)] },
    ]);
    // Three failed attempts before the good one: one more than the default three attempts.
    const { runtime, outcome, events, ran } = await session(server, responsesModel(server.url), responsesProviderOptions, { providerAttempts: 4 });

    expect(server.problems).toEqual([]);
    expect(server.remaining).toBe(0);
    expect(outcome).toMatchObject({ status: "completed", text: finalText });
    expect(ran).toEqual(["package.json"]);
    expect(eventsOf(events, "turn.provider.failed").map((event) => event.data.kind)).toEqual(["http-status", "incomplete-stream", "truncated-tool-calls"]);
    // Only the answer that was kept is sent back: the cut and truncated answers' reasoning is not.
    const last = server.requests.at(-1)?.body as { input: Record<string, unknown>[] };
    expect(last.input.filter((item) => item.type === "reasoning").map((item) => item.id)).toEqual(["rs_1"]);
    expect(await runtime.replay("s1")).toMatchObject({ identical: true, divergences: [] });
  });

  it("@ai-sdk/openai on the Responses API: a call under max_output_tokens twice is refused, and never runs", async () => {
    const long = { output: [reasoning("rs_long", "enc-long"), functionCall("fc_long", "call_long", "read_file", { path: "package.json" })], incompleteReason: "max_output_tokens" };
    const server = await startResponsesServer([long, long]);
    const { runtime, outcome, events, ran } = await session(server, responsesModel(server.url), responsesProviderOptions);

    expect(server.problems).toEqual([]);
    expect(server.remaining).toBe(0);
    expect(outcome).toMatchObject({ status: "stopped", reason: "refused:truncated-tool-calls" });
    expect(ran).toEqual([]);
    expect(eventsOf(events, "turn.provider.failed").map((event) => event.data.kind)).toEqual(["truncated-tool-calls", "truncated-tool-calls"]);
    expect(await runtime.replay("s1")).toMatchObject({ identical: true, divergences: [] });
  });

  it("@ai-sdk/anthropic: a stream reset after a finished tool_use and a tool_use cut by max_tokens (both of which the package still emits as tool-call parts) run no tool; the retry's answer does", async () => {
    const server = await startAnthropicThinkingServer([
      { content: [thinking("Read it.", "sig-reset"), toolUse("toolu_reset", "read_file", { path: "package.json" })], cutAfterFrames: 9 },
      { content: [thinking("Read it.", "sig-cut"), { type: "tool_use", id: "toolu_cut", name: "read_file", inputJson: '{"path": "pack' }], stopReason: "max_tokens" },
      { content: [thinking("The version is in package.json.", "sig-one"), toolUse("toolu_1", "read_file", { path: "package.json" })] },
      { content: [thinking("Answering.", "sig-two"), text(finalText)] },
    ]);
    const { runtime, outcome, events, ran } = await session(server, anthropicModel(server.url), anthropicProviderOptions);

    expect(server.problems).toEqual([]);
    expect(server.remaining).toBe(0);
    expect(outcome).toMatchObject({ status: "completed", text: finalText });
    expect(ran).toEqual(["package.json"]);
    expect(eventsOf(events, "turn.provider.failed").map((event) => event.data.kind)).toEqual(["incomplete-stream", "truncated-tool-calls"]);
    // Neither failed answer's call is in the log, nor sent back.
    expect(JSON.stringify(events)).not.toContain("toolu_reset");
    expect(JSON.stringify(events)).not.toContain("toolu_cut");
    expect(JSON.stringify(server.requests.at(-1)?.body)).not.toContain("sig-cut");
    expect(await runtime.replay("s1")).toMatchObject({ identical: true, divergences: [] });
  });

  it("@ai-sdk/google: a function call under MAX_TOKENS is retried once, then refused, and never runs", async () => {
    const long = { parts: [thought("Read it."), call("read_file", { path: "package.json" }, { signature: "sig-long" })], finishReason: "MAX_TOKENS" as const };
    const server = await startGeminiServer([long, long]);
    const { runtime, outcome, events, ran } = await session(server, geminiModel(server.url), geminiProviderOptions);

    expect(server.problems).toEqual([]);
    expect(server.remaining).toBe(0);
    expect(outcome).toMatchObject({ status: "stopped", reason: "refused:truncated-tool-calls" });
    expect(ran).toEqual([]);
    expect(eventsOf(events, "turn.provider.failed").map((event) => event.data.kind)).toEqual(["truncated-tool-calls", "truncated-tool-calls"]);
    expect(await runtime.replay("s1")).toMatchObject({ identical: true, divergences: [] });
  });
});

/**
 * One session whose first answer calls `read_file`: in the crashing run the first read never
 * returns (the process dies with it running) and a new runtime, with a new model object as after a
 * restart, resumes the session from the log alone. Returns the body of the last request the server got.
 */
async function crashRun(crash: boolean, server: FakeProviderServer, makeModel: () => LanguageModelV3, providerOptions: SharedV3ProviderOptions): Promise<unknown> {
  cleanups.push(() => server.close());
  const { log, remove } = await temporaryLevelLog();
  cleanups.push(remove);
  let armed = crash;
  let onCrash: (() => void) | undefined;
  const crashed = new Promise<"crash">((resolve) => {
    onCrash = () => resolve("crash");
  });
  const readFile = defineTool({
    name: "read_file",
    description: "Read a file of the project",
    risk: "read-only-local",
    input: z.object({ path: z.string() }),
    run: ({ path }) => (armed ? new Promise<string>(() => onCrash?.()) : (files.get(path) ?? "")),
  });
  const open = async () => {
    const runtime = await createRuntime({ log, provider: aiSdkProvider(makeModel(), { providerOptions }), tools: [readFile], providerRetry: { baseDelayMs: 0 } });
    return { runtime, session: await runtime.openSession("s1") };
  };
  let { runtime, session } = await open();
  const sending = session.send("What version is the project, and what does the README say?");
  sending.catch(() => undefined);
  let outcome: SendOutcome | "crash" = await Promise.race([sending, crashed]);
  // The crashing run did crash, and the crash-free one did not.
  expect(outcome === "crash").toBe(crash);
  if (outcome === "crash") {
    armed = false;
    ({ runtime, session } = await open());
    outcome = await session.resume();
  }
  expect(outcome).toMatchObject({ status: "completed", text: finalText });
  expect(server.problems).toEqual([]);
  expect(server.remaining).toBe(0);
  expect(await runtime.replay("s1")).toMatchObject({ identical: true });
  return server.requests.at(-1)?.body;
}
