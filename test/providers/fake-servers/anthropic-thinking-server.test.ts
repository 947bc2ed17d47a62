import { type ModelMessage, stepCountIs, streamText } from "ai";
import { afterEach, describe, expect, it } from "vitest";
import { redactedThinking, startAnthropicThinkingServer, text, thinking, toolUse } from "../support/fake-servers/anthropic-thinking-server.js";
import type { FakeProviderServer } from "../support/fake-servers/checking-server.js";
import { anthropicModel, anthropicProviderOptions } from "../support/fake-servers/provider-models.js";
import { readFileTool } from "../support/fake-servers/read-file-tool.js";

// The fake Messages server with thinking (test/providers/support/fake-servers/anthropic-thinking-server.ts)
// driven by the real `@ai-sdk/anthropic` package through the AI SDK's own loop: the package must parse
// its stream, and its checks must pass the history the SDK sends back and catch one that lost a
// thinking block's signature or a tool result.

let server: FakeProviderServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

const twoTurns = [
  { content: [thinking("The user wants a.txt; read it first.", "sig-one"), redactedThinking("redacted-one"), toolUse("toolu_1", "read_file", { path: "a.txt" })] },
  { content: [thinking("It says contents of a.txt.", "sig-two"), text("a.txt says hello.")] },
];

async function converse(url: string, prepareStep?: (messages: ModelMessage[]) => ModelMessage[]) {
  const { ran, tools } = readFileTool();
  const errors: string[] = [];
  const result = streamText({
    model: anthropicModel(url),
    prompt: "What does a.txt say?",
    tools,
    stopWhen: stepCountIs(3),
    maxRetries: 0,
    providerOptions: anthropicProviderOptions,
    onError: ({ error }) => {
      errors.push(error instanceof Error ? error.message : String(error));
    },
    ...(prepareStep ? { prepareStep: ({ messages }: { messages: ModelMessage[] }) => ({ messages: prepareStep(messages) }) } : {}),
  });
  const answer = await result.text;
  return { ran, text: answer, errors, steps: await result.steps };
}

/** The messages with every reasoning part of the assistant's changed by `change` (undefined drops it). */
function changeReasoning(messages: ModelMessage[], change: (part: { text: string; providerOptions?: unknown }) => object | undefined): ModelMessage[] {
  return messages.map((entry) => {
    if (entry.role !== "assistant" || !Array.isArray(entry.content)) return entry;
    const content = entry.content.flatMap((part) => {
      if (part.type !== "reasoning") return [part];
      const changed = change(part);
      return changed === undefined ? [] : [changed];
    });
    return { ...entry, content } as ModelMessage;
  });
}

describe("the fake Anthropic thinking server", () => {
  it("streams thinking, redacted thinking and a tool use that @ai-sdk/anthropic parses, and passes the history the AI SDK echoes", async () => {
    server = await startAnthropicThinkingServer(twoTurns);
    const { ran, text: answer, steps } = await converse(server.url);

    expect(server.problems).toEqual([]);
    expect(ran).toEqual(["a.txt"]);
    expect(answer).toBe("a.txt says hello.");
    expect(server.remaining).toBe(0);
    expect(steps[0]?.content.flatMap((part) => (part.type === "reasoning" ? [part.providerMetadata?.anthropic] : []))).toEqual([
      { signature: "sig-one" },
      { redactedData: "redacted-one" },
    ]);

    const second = server.requests[1]?.body as { messages: unknown[]; thinking: unknown };
    expect(second.thinking).toEqual({ type: "enabled", budget_tokens: 1024 });
    expect(second.messages).toEqual([
      { role: "user", content: [{ type: "text", text: "What does a.txt say?" }] },
      {
        role: "assistant",
        content: [
          { type: "thinking", thinking: "The user wants a.txt; read it first.", signature: "sig-one" },
          { type: "redacted_thinking", data: "redacted-one" },
          { type: "tool_use", id: "toolu_1", name: "read_file", input: { path: "a.txt" } },
        ],
      },
      { role: "user", content: [{ type: "tool_result", tool_use_id: "toolu_1", content: "contents of a.txt" }] },
    ]);
  });

  it("reports a request that drops a thinking block's signature, and answers it with Anthropic's 400", async () => {
    server = await startAnthropicThinkingServer(twoTurns);
    // Without its signature the package cannot send the thinking block at all: it leaves it out.
    const { errors } = await converse(server.url, (messages) => changeReasoning(messages, (part) => ({ type: "reasoning", text: part.text })));

    expect(server.problems).toEqual(["request 2: thinking block signed sig-one (reply 1) is missing", 'request 2: redacted thinking block "redacted-one" (reply 1) is missing']);
    expect(errors).toEqual(["thinking block signed sig-one (reply 1) is missing; redacted thinking block \"redacted-one\" (reply 1) is missing"]);
  });

  it("reports a request whose thinking block comes back with another signature", async () => {
    server = await startAnthropicThinkingServer(twoTurns, { onProblem: "record" });
    await converse(server.url, (messages) =>
      changeReasoning(messages, (part) => (part.text === "" ? part : { type: "reasoning", text: part.text, providerOptions: { anthropic: { signature: "forged" } } })),
    );

    expect(server.problems).toEqual([
      'request 2: thinking block signed sig-one (reply 1) comes back with signature "forged"',
      'request 2: thinking block signed "forged" was never sent by this server',
    ]);
  });

  it("reports a request that drops a tool result", async () => {
    server = await startAnthropicThinkingServer([...twoTurns, { content: [text("Nothing more.")] }], { onProblem: "record" });
    await converse(server.url);
    // The AI SDK's loop refuses to send a tool call without its result, so the broken history goes
    // through the model object itself, as a turnlog provider calls it.
    const model = anthropicModel(server.url);
    const sent = model.doStream({
      prompt: [
        { role: "user", content: [{ type: "text", text: "What does a.txt say?" }] },
        {
          role: "assistant",
          content: [
            { type: "reasoning", text: "The user wants a.txt; read it first.", providerOptions: { anthropic: { signature: "sig-one" } } },
            { type: "reasoning", text: "", providerOptions: { anthropic: { redactedData: "redacted-one" } } },
            { type: "tool-call", toolCallId: "toolu_1", toolName: "read_file", input: { path: "a.txt" } },
          ],
        },
        { role: "user", content: [{ type: "text", text: "Go on." }] },
      ],
      tools: [{ type: "function", name: "read_file", inputSchema: { type: "object", properties: { path: { type: "string" } } } }],
      providerOptions: anthropicProviderOptions,
    });
    await expect(sent).resolves.toBeDefined();

    expect(server.problems).toEqual([
      "request 3: thinking block signed sig-two (reply 2) is missing",
      "request 3: tool_use toolu_1 has no tool_result in the next user message",
    ]);
  });

  it("does not require a reply ended by max_tokens to be echoed when the turn is asked again, and answers a scripted 529 with Anthropic's error body", async () => {
    const truncated = { content: [thinking("Read it.", "sig-cut"), { type: "tool_use" as const, id: "toolu_cut", name: "read_file", inputJson: '{"path": "a.' }], stopReason: "max_tokens" as const };
    server = await startAnthropicThinkingServer([{ failure: { status: 529, message: "Overloaded" } }, truncated, ...twoTurns]);
    const model = anthropicModel(server.url);
    const question = { role: "user" as const, content: [{ type: "text" as const, text: "What does a.txt say?" }] };

    await expect(model.doStream({ prompt: [question], providerOptions: anthropicProviderOptions })).rejects.toMatchObject({ statusCode: 529, message: "Overloaded" });
    await (await model.doStream({ prompt: [question], providerOptions: anthropicProviderOptions })).stream.pipeTo(new WritableStream());
    const { text: answer } = await converse(server.url);

    expect(answer).toBe("a.txt says hello.");
    expect(server.problems).toEqual([]);
    expect(server.remaining).toBe(0);
  });
});
