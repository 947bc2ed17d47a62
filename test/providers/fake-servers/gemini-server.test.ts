import { type ModelMessage, stepCountIs, streamText } from "ai";
import { afterEach, describe, expect, it } from "vitest";
import type { FakeProviderServer } from "../support/fake-servers/checking-server.js";
import { answer, call, startGeminiServer, thought } from "../support/fake-servers/gemini-server.js";
import { geminiModel, geminiProviderOptions } from "../support/fake-servers/provider-models.js";
import { readFileTool } from "../support/fake-servers/read-file-tool.js";

// The fake Gemini server (test/providers/support/fake-servers/gemini-server.ts) driven by the real
// `@ai-sdk/google` package through the AI SDK's own loop: the package must parse its stream, and its
// checks must pass the history the SDK sends back and catch one that lost a thought signature or a
// function response.

let server: FakeProviderServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

// Gemini 3 signs the first function call of a response only; the parallel second call has no signature.
const twoTurns = [
  { parts: [thought("Both files are needed."), call("read_file", { path: "a.txt" }, { signature: "sig-one" }), call("read_file", { path: "b.txt" })] },
  { parts: [answer("a.txt and b.txt say hello.", { signature: "sig-two" })] },
];

async function converse(url: string, prepareStep?: (messages: ModelMessage[]) => ModelMessage[]) {
  const { ran, tools } = readFileTool();
  const errors: string[] = [];
  const result = streamText({
    model: geminiModel(url),
    prompt: "What do a.txt and b.txt say?",
    tools,
    stopWhen: stepCountIs(3),
    maxRetries: 0,
    providerOptions: geminiProviderOptions,
    onError: ({ error }) => {
      errors.push(error instanceof Error ? error.message : String(error));
    },
    ...(prepareStep ? { prepareStep: ({ messages }: { messages: ModelMessage[] }) => ({ messages: prepareStep(messages) }) } : {}),
  });
  const text = await result.text;
  return { ran, text, errors, steps: await result.steps };
}

/** The messages with the assistant's tool calls stripped of their provider options (the thought signatures). */
function withoutCallSignatures(messages: ModelMessage[]): ModelMessage[] {
  return messages.map((entry) => {
    if (entry.role !== "assistant" || !Array.isArray(entry.content)) return entry;
    return { ...entry, content: entry.content.map((part) => (part.type === "tool-call" ? { ...part, providerOptions: {} } : part)) };
  });
}

describe("the fake Gemini server", () => {
  it("streams a thought and signed function calls that @ai-sdk/google parses, and passes the history the AI SDK echoes", async () => {
    server = await startGeminiServer(twoTurns);
    const { ran, text, steps } = await converse(server.url);

    expect(server.problems).toEqual([]);
    expect(ran).toEqual(["a.txt", "b.txt"]);
    expect(text).toBe("a.txt and b.txt say hello.");
    expect(server.remaining).toBe(0);
    expect(steps[0]?.toolCalls.map((toolCall) => toolCall.providerMetadata?.google)).toEqual([{ thoughtSignature: "sig-one" }, undefined]);

    const second = server.requests[1]?.body as { contents: { role: string; parts: Record<string, unknown>[] }[] };
    expect(server.requests[1]?.path).toBe("/v1beta/models/gemini-3-pro-preview:streamGenerateContent?alt=sse");
    const [, modelTurn, toolTurn] = second.contents;
    // The package names each call with an ID of its own (the API gave none) and sends it on the call and its response.
    const callIds = steps[0]?.toolCalls.map((toolCall) => toolCall.toolCallId) ?? [];
    expect(modelTurn).toEqual({
      role: "model",
      parts: [
        { text: "Both files are needed.", thought: true },
        { functionCall: { id: callIds[0], name: "read_file", args: { path: "a.txt" } }, thoughtSignature: "sig-one" },
        { functionCall: { id: callIds[1], name: "read_file", args: { path: "b.txt" } } },
      ],
    });
    expect(toolTurn).toEqual({
      role: "user",
      parts: [
        { functionResponse: { id: callIds[0], name: "read_file", response: { name: "read_file", content: "contents of a.txt" } } },
        { functionResponse: { id: callIds[1], name: "read_file", response: { name: "read_file", content: "contents of b.txt" } } },
      ],
    });
  });

  it("reports a request that drops a function call's thought signature, and answers it with Gemini's 400", async () => {
    server = await startGeminiServer(twoTurns);
    const { errors } = await converse(server.url, withoutCallSignatures);

    // For a Gemini 3 model the package puts a documented sentinel where the signature was missing.
    expect(server.problems).toEqual([
      'request 2: function call read_file {"path":"a.txt"} (reply 1) comes back with thoughtSignature "skip_thought_signature_validator", not sig-one',
      'request 2: function call read_file {"path":"b.txt"} (reply 1) comes back with thoughtSignature "skip_thought_signature_validator", though it had none',
      'request 2: thoughtSignature "skip_thought_signature_validator" was never sent by this server',
    ]);
    expect(errors).toHaveLength(1);
  });

  it("reports a request that drops a function response", async () => {
    server = await startGeminiServer([...twoTurns, { parts: [answer("Nothing more.")] }], { onProblem: "record" });
    await converse(server.url);
    // The AI SDK's loop refuses to send a tool call without its result, so the broken history goes
    // through the model object itself, as a turnlog provider calls it.
    const model = geminiModel(server.url);
    const sent = model.doStream({
      prompt: [
        { role: "user", content: [{ type: "text", text: "What do a.txt and b.txt say?" }] },
        {
          role: "assistant",
          content: [
            { type: "reasoning", text: "Both files are needed." },
            { type: "tool-call", toolCallId: "c1", toolName: "read_file", input: { path: "a.txt" }, providerOptions: { google: { thoughtSignature: "sig-one" } } },
            { type: "tool-call", toolCallId: "c2", toolName: "read_file", input: { path: "b.txt" } },
          ],
        },
        { role: "tool", content: [{ type: "tool-result", toolCallId: "c1", toolName: "read_file", output: { type: "text", value: "contents of a.txt" } }] },
        { role: "assistant", content: [{ type: "text", text: "a.txt and b.txt say hello.", providerOptions: { google: { thoughtSignature: "sig-two" } } }] },
        { role: "user", content: [{ type: "text", text: "Anything else?" }] },
      ],
    });
    await expect(sent).resolves.toBeDefined();

    expect(server.problems).toEqual(["request 3: function call read_file (c2) has no functionResponse in the next user content"]);
  });

  it("pairs calls and responses by the IDs the server gave, and reports a response sent with another ID", async () => {
    const withIds = [{ parts: [call("read_file", { path: "a.txt" }, { id: "fc-a", signature: "sig-one" })] }, { parts: [answer("Done.")] }];
    server = await startGeminiServer(withIds);
    await converse(server.url);
    expect(server.problems).toEqual([]);
    const [, modelTurn, toolTurn] = (server.requests[1]?.body as { contents: unknown[] }).contents;
    expect(modelTurn).toEqual({ role: "model", parts: [{ functionCall: { id: "fc-a", name: "read_file", args: { path: "a.txt" } }, thoughtSignature: "sig-one" }] });
    expect(toolTurn).toMatchObject({ role: "user", parts: [{ functionResponse: { id: "fc-a", name: "read_file" } }] });

    await server.close();
    server = await startGeminiServer(withIds, { onProblem: "record" });
    // The AI SDK's loop refuses a tool result whose ID matches no call, so the broken history goes
    // through the model object itself, as a turnlog provider calls it.
    const model = geminiModel(server.url);
    const question = { role: "user" as const, content: [{ type: "text" as const, text: "What does a.txt say?" }] };
    await model.doStream({ prompt: [question] });
    await model.doStream({
      prompt: [
        question,
        { role: "assistant", content: [{ type: "tool-call", toolCallId: "fc-a", toolName: "read_file", input: { path: "a.txt" }, providerOptions: { google: { thoughtSignature: "sig-one" } } }] },
        { role: "tool", content: [{ type: "tool-result", toolCallId: "fc-other", toolName: "read_file", output: { type: "text", value: "contents of a.txt" } }] },
      ],
    });
    expect(server.problems).toEqual([
      "request 2: function call read_file (fc-a) has no functionResponse in the next user content",
      "request 2: functionResponse read_file answers no function call in the content before it",
    ]);
  });
});
