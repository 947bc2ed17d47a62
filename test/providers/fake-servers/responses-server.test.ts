import { type ModelMessage, stepCountIs, streamText } from "ai";
import { afterEach, describe, expect, it } from "vitest";
import type { FakeProviderServer } from "../support/fake-servers/checking-server.js";
import { responsesModel, responsesProviderOptions } from "../support/fake-servers/provider-models.js";
import { readFileTool } from "../support/fake-servers/read-file-tool.js";
import { functionCall, message, reasoning, startResponsesServer } from "../support/fake-servers/responses-server.js";

// The fake Responses server (test/providers/support/fake-servers/responses-server.ts) driven by the
// real `@ai-sdk/openai` package through the AI SDK's own loop: the package must parse its stream, and
// its checks must pass a history the SDK sends back and catch one that lost a reasoning item or an output.

let server: FakeProviderServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

const twoTurns = [
  { output: [reasoning("rs_1", "enc-one", ["Reading the file first.", "Then answering."]), functionCall("fc_1", "call_1", "read_file", { path: "a.txt" })] },
  { output: [reasoning("rs_2", "enc-two"), message("msg_2", "a.txt says hello.")] },
];

async function converse(url: string, prepareStep?: (messages: ModelMessage[]) => ModelMessage[], steps = 3) {
  const { ran, tools } = readFileTool();
  const errors: string[] = [];
  const result = streamText({
    model: responsesModel(url),
    prompt: "What does a.txt say?",
    tools,
    stopWhen: stepCountIs(steps),
    maxRetries: 0,
    onError: ({ error }) => {
      errors.push(error instanceof Error ? error.message : String(error));
    },
    providerOptions: responsesProviderOptions,
    ...(prepareStep ? { prepareStep: ({ messages }: { messages: ModelMessage[] }) => ({ messages: prepareStep(messages) }) } : {}),
  });
  const text = await result.text;
  return { ran, text, errors, steps: await result.steps };
}

describe("the fake Responses server", () => {
  it("streams reasoning, a function call and text that @ai-sdk/openai parses, and passes the history the AI SDK echoes", async () => {
    server = await startResponsesServer(twoTurns);
    const { ran, text, steps } = await converse(server.url);

    expect(server.problems).toEqual([]);
    expect(ran).toEqual(["a.txt"]);
    expect(text).toBe("a.txt says hello.");
    expect(server.remaining).toBe(0);
    const firstStep = steps[0];
    // One reasoning part per summary part; only the last carries the encrypted content (the package
    // ends the earlier ones before the output item is done), and the package merges them back into one item.
    expect(firstStep?.content.flatMap((part) => (part.type === "reasoning" ? [part.providerMetadata?.openai] : []))).toEqual([
      { itemId: "rs_1" },
      { itemId: "rs_1", reasoningEncryptedContent: "enc-one" },
    ]);
    expect(firstStep?.reasoningText).toBe("Reading the file first.Then answering.");

    const second = server.requests[1]?.body as { input: unknown[] };
    expect(second.input).toEqual([
      { role: "user", content: [{ type: "input_text", text: "What does a.txt say?" }] },
      {
        type: "reasoning",
        id: "rs_1",
        encrypted_content: "enc-one",
        summary: [
          { type: "summary_text", text: "Reading the file first." },
          { type: "summary_text", text: "Then answering." },
        ],
      },
      // The AI SDK's loop does not carry the call's item ID (fc_1) back; the call ID is what pairs.
      { type: "function_call", call_id: "call_1", name: "read_file", arguments: '{"path":"a.txt"}' },
      { type: "function_call_output", call_id: "call_1", output: "contents of a.txt" },
    ]);
  });

  it("reports a request that drops a reasoning item, and answers it with OpenAI's 400", async () => {
    server = await startResponsesServer(twoTurns);
    const { errors } = await converse(server.url, (messages) =>
      messages.map((entry) => (entry.role === "assistant" && Array.isArray(entry.content) ? { ...entry, content: entry.content.filter((part) => part.type !== "reasoning") } : entry)),
    );

    expect(server.problems).toEqual(["request 2: reasoning item rs_1 (reply 1) is missing"]);
    expect(errors).toEqual(["reasoning item rs_1 (reply 1) is missing"]);
  });

  it("reports a request whose reasoning item comes back with other encrypted content", async () => {
    server = await startResponsesServer(twoTurns, { onProblem: "record" });
    await converse(server.url, (messages) =>
      messages.map((entry) =>
        entry.role === "assistant" && Array.isArray(entry.content)
          ? { ...entry, content: entry.content.map((part) => (part.type === "reasoning" ? { ...part, providerOptions: { openai: { itemId: "rs_1", reasoningEncryptedContent: "forged" } } } : part)) }
          : entry,
      ),
    );

    expect(server.problems).toEqual(['request 2: reasoning item rs_1 (reply 1) comes back with encrypted_content "forged", not the one sent']);
  });

  it("reports a request that drops a function call's output", async () => {
    server = await startResponsesServer([...twoTurns, { output: [message("msg_3", "Nothing more.")] }], { onProblem: "record" });
    await converse(server.url);
    // The AI SDK's loop refuses to send a tool call without its result, so the broken history goes
    // through the model object itself, as a turnlog provider calls it.
    const model = responsesModel(server.url);
    const sent = model.doStream({
      prompt: [
        { role: "user", content: [{ type: "text", text: "What does a.txt say?" }] },
        {
          role: "assistant",
          content: [
            { type: "reasoning", text: "Reading the file first.", providerOptions: { openai: { itemId: "rs_1" } } },
            { type: "reasoning", text: "Then answering.", providerOptions: { openai: { itemId: "rs_1", reasoningEncryptedContent: "enc-one" } } },
            { type: "tool-call", toolCallId: "call_1", toolName: "read_file", input: { path: "a.txt" }, providerOptions: { openai: { itemId: "fc_1" } } },
            { type: "reasoning", text: "", providerOptions: { openai: { itemId: "rs_2", reasoningEncryptedContent: "enc-two" } } },
            { type: "text", text: "a.txt says hello.", providerOptions: { openai: { itemId: "msg_2" } } },
          ],
        },
      ],
      providerOptions: responsesProviderOptions,
    });
    await expect(sent).resolves.toBeDefined();

    expect(server.problems).toEqual([
"request 3: function call call_1 has no function_call_output"]);
  });

  it("reports a request sent beyond the script, and one that asks the API to store the reasoning", async () => {
    server = await startResponsesServer([{ output: [message("msg_1", "Hello.")] }], { onProblem: "record" });
    const errors: unknown[] = [];
    const onError = ({ error }: { error: unknown }) => {
      errors.push(error);
    };
    await streamText({ model: responsesModel(server.url), prompt: "Hi", maxRetries: 0, onError }).consumeStream();
    await streamText({ model: responsesModel(server.url), prompt: "Hi again", maxRetries: 0, providerOptions: responsesProviderOptions, onError }).consumeStream();

    // Recorded, the first is answered; the second has no reply to get, so it fails whatever the handling.
    expect(errors).toHaveLength(1);

    expect(server.problems).toEqual([
      "request 1: store is undefined, not false: the reasoning items must travel in the request",
      'request 1: include lacks "reasoning.encrypted_content"',
      // A second conversation on one server: its history lacks the first one's message.
      "request 2: message msg_1 (reply 1) is missing",
      "request 2: no reply is scripted for it (1 scripted)",
    ]);
  });

  it("answers a scripted failure with its status, cuts a stream short, ends one at the token limit, and does not require either to be echoed", async () => {
    const cutCall = { output: [reasoning("rs_cut", "enc-cut"), functionCall("fc_cut", "call_cut", "read_file", { path: "a.txt" })], cutAfterFrames: 6 };
    const lengthCall = { output: [reasoning("rs_long", "enc-long"), functionCall("fc_long", "call_long", "read_file", { path: "a.txt" })], incompleteReason: "max_output_tokens" };
    server = await startResponsesServer([{ failure: { status: 429, message: "slow down", headers: { "retry-after": "0" } } }, cutCall, lengthCall, twoTurns[0] as (typeof twoTurns)[0]]);
    const model = responsesModel(server.url);
    const ask = async () => {
      const { stream } = await model.doStream({ prompt: [{ role: "user", content: [{ type: "text", text: "What does a.txt say?" }] }], providerOptions: responsesProviderOptions });
      const parts: { type: string; finishReason?: unknown; toolCallId?: string }[] = [];
      const reader = stream.getReader();
      try {
        for (let next = await reader.read(); !next.done; next = await reader.read()) parts.push(next.value);
      } catch (error) {
        parts.push({ type: `thrown: ${error instanceof Error ? error.message : String(error)}` });
      }
      return parts;
    };

    await expect(ask()).rejects.toMatchObject({ statusCode: 429, responseHeaders: { "retry-after": "0" }, message: "slow down" });
    const cut = await ask();
    // The reset surfaces as the stream throwing after the call's complete-looking arguments: no tool-call part.
    expect(cut.at(-1)?.type).toMatch(/^thrown: /);
    expect(cut.filter((part) => part.type === "tool-call")).toEqual([]);
    expect(cut.filter((part) => part.type === "tool-input-start").map((part) => part.type)).toEqual(["tool-input-start"]);
    const long = await ask();
    expect(long.find((part) => part.type === "finish")?.finishReason).toEqual({ unified: "length", raw: "max_output_tokens" });
    expect(long.filter((part) => part.type === "tool-call").map((part) => part.toolCallId)).toEqual(["call_long"]);
    await ask();

    expect(server.problems).toEqual([]);
    expect(server.remaining).toBe(0);
  });

  it("requires every earlier turn's reasoning items and calls, not only the last one's, over several tool turns", async () => {
    const turn = (index: number) => ({ output: [reasoning(`rs_${index}`, `enc-${index}`, [`Step ${index}.`]), functionCall(`fc_${index}`, `call_${index}`, "read_file", { path: `${index}.txt` })] });
    server = await startResponsesServer([turn(1), turn(2), turn(3), { output: [reasoning("rs_4", "enc-4"), message("msg_4", "Read all three.")] }]);
    const { ran, text } = await converse(server.url, undefined, 5);

    expect(server.problems).toEqual([]);
    expect(ran).toEqual(["1.txt", "2.txt", "3.txt"]);
    expect(text).toBe("Read all three.");
    const last = server.requests[3]?.body as { input: { type?: string; id?: string; call_id?: string }[] };
    expect(last.input.map((item) => item.type === "reasoning" ? item.id : item.call_id ?? "user")).toEqual([
      "user", "rs_1", "call_1", "call_1", "rs_2", "call_2", "call_2", "rs_3", "call_3", "call_3",
    ]);
  });

  it("reports an old turn's reasoning item dropped from a later request", async () => {
    const turn = (index: number) => ({ output: [reasoning(`rs_${index}`, `enc-${index}`), functionCall(`fc_${index}`, `call_${index}`, "read_file", { path: `${index}.txt` })] });
    server = await startResponsesServer([turn(1), turn(2), { output: [message("msg_3", "Read both.")] }], { onProblem: "record" });
    await converse(
      server.url,
      (messages) =>
        messages.length < 5
          ? messages
          : messages.map((entry, index) => (index === 1 && entry.role === "assistant" && Array.isArray(entry.content) ? { ...entry, content: entry.content.filter((part) => part.type !== "reasoning") } : entry)),
      4,
    );

    expect(server.problems).toEqual(["request 3: reasoning item rs_1 (reply 1) is missing"]);
  });
});
