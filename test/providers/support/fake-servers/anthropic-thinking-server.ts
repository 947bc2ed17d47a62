import {
  arrayOf,
  type FakeProviderServer,
  orderProblems,
  parsedJson,
  type ProblemHandling,
  recordOf,
  type ReplyControls,
  sameJson,
  type ScriptedFailure,
  type ServedReplies,
  startCheckingServer,
} from "./checking-server.js";

/**
 * A fake Anthropic Messages API (`POST /v1/messages`, streaming) with extended thinking, as
 * `@ai-sdk/anthropic` consumes it. A thinking block streams as `thinking_delta`s then one
 * `signature_delta`; on the next request it must come back in its assistant message unchanged,
 * `{ type: "thinking", thinking, signature }` (a `redacted_thinking` block as `{ type, data }`),
 * before the `tool_use` blocks it led to, and every `tool_use` must be answered by a `tool_result`
 * with the same `tool_use_id` in the user message right after it: the rules the real API enforces
 * with a 400.
 *
 * @example
 * const server = await startAnthropicThinkingServer([
 *   { content: [thinking("Look it up first.", "sig-1"), toolUse("toolu_1", "read_file", { path: "a.txt" })] },
 *   { content: [thinking("Now answer.", "sig-2"), text("a.txt says hello.")] },
 * ]);
 * const anthropic = createAnthropic({ baseURL: `${server.url}/v1`, apiKey: "test-key" });
 * // … streamText({ model: anthropic("claude-sonnet-4-5"), providerOptions: { anthropic: { thinking: { type: "enabled", budgetTokens: 1024 } } }, … })
 * expect(server.problems).toEqual([]);
 */

/** A thinking block: streamed as `thinking_delta`s and one `signature_delta`, echoed as `{ type: "thinking", thinking, signature }`. */
export interface AnthropicThinkingBlock {
  readonly type: "thinking";
  readonly thinking: string;
  readonly signature: string;
}

/** A redacted thinking block: its encrypted `data` arrives whole in `content_block_start` and is echoed unchanged. */
export interface AnthropicRedactedThinkingBlock {
  readonly type: "redacted_thinking";
  readonly data: string;
}

/** A text block, streamed as one `text_delta`. */
export interface AnthropicTextBlock {
  readonly type: "text";
  readonly text: string;
}

/** A tool use, its input streamed as one `input_json_delta`. */
export interface AnthropicToolUseBlock {
  readonly type: "tool_use";
  readonly id: string;
  readonly name: string;
  /** The input as streamed in `input_json_delta`s: a JSON text (a cut one for a broken call). */
  readonly inputJson: string;
}

/** A block of a scripted message, in the order the message streams them. */
export type AnthropicContentBlock = AnthropicThinkingBlock | AnthropicRedactedThinkingBlock | AnthropicTextBlock | AnthropicToolUseBlock;

/** One scripted message: its content blocks in order, and its stop reason (`tool_use` when it has a tool use, else `end_turn`). */
export interface AnthropicReply extends ReplyControls {
  readonly content: readonly AnthropicContentBlock[];
  readonly stopReason?: "end_turn" | "tool_use" | "max_tokens" | "stop_sequence" | "refusal" | "pause_turn";
  readonly usage?: { readonly inputTokens: number; readonly outputTokens: number };
}

/** A thinking block for a script. */
export function thinking(thinkingText: string, signature: string): AnthropicThinkingBlock {
  return { type: "thinking", thinking: thinkingText, signature };
}

/** A redacted thinking block for a script. */
export function redactedThinking(data: string): AnthropicRedactedThinkingBlock {
  return { type: "redacted_thinking", data };
}

/** A text block for a script. */
export function text(value: string): AnthropicTextBlock {
  return { type: "text", text: value };
}

/** A tool use block for a script, its input given as a value (streamed as JSON). */
export function toolUse(id: string, name: string, input: unknown): AnthropicToolUseBlock {
  return { type: "tool_use", id, name, inputJson: JSON.stringify(input) };
}

/** How {@link startAnthropicThinkingServer} treats a wrong request, and the model it reports. */
export interface AnthropicThinkingServerOptions {
  /** Default `"reject"`: a wrong request gets Anthropic's 400 error body (checking-server.ts). */
  readonly onProblem?: ProblemHandling;
  /** The model name the stream reports; default `claude-sonnet-4-5`. */
  readonly model?: string;
}

/** Starts a fake Messages API on 127.0.0.1; point `createAnthropic({ baseURL: `${url}/v1` })` at it. */
export async function startAnthropicThinkingServer(script: readonly (AnthropicReply | ScriptedFailure)[], options: AnthropicThinkingServerOptions = {}): Promise<FakeProviderServer> {
  const model = options.model ?? "claude-sonnet-4-5";
  const thinks = script.some((reply) => "content" in reply && reply.content.some((block) => block.type === "thinking" || block.type === "redacted_thinking"));
  return startCheckingServer<AnthropicReply>({
    name: "Anthropic Messages",
    script,
    onProblem: options.onProblem ?? "reject",
    endsIncomplete: (reply) => reply.stopReason === "max_tokens",
    acceptsPath: (path) => path === "/v1/messages",
    check: (body, served) => checkMessagesRequest(body, served, thinks),
    frames: (reply, index) => messagesFrames(reply, index, model),
    errorBody: (status, message) => ({ type: "error", error: { type: status === 404 ? "not_found_error" : "invalid_request_error", message } }),
  });
}

interface SentBlock {
  readonly block: Record<string, unknown>;
  /** Its place among all assistant blocks of the request, for the order check. */
  readonly position: number;
}

function checkMessagesRequest(body: unknown, served: ServedReplies<AnthropicReply>, thinks: boolean): string[] {
  const request = recordOf(body) ?? {};
  const problems: string[] = [];
  if (request.stream !== true) problems.push("stream is not true");
  const thinkingConfig = recordOf(request.thinking);
  if (thinks && thinkingConfig?.type !== "enabled" && thinkingConfig?.type !== "adaptive") {
    problems.push(`thinking is ${JSON.stringify(request.thinking)}: a conversation with thinking blocks must enable thinking`);
  }
  const messages = arrayOf(request.messages).map((entry) => recordOf(entry) ?? {});
  const assistantBlocks: SentBlock[] = [];
  for (const entry of messages) {
    if (entry.role !== "assistant") continue;
    for (const block of arrayOf(entry.content)) assistantBlocks.push({ block: recordOf(block) ?? {}, position: assistantBlocks.length });
  }

  const issued = served.issued.flatMap(({ reply }) => reply.content);
  const issuedSignatures = new Set(issued.flatMap((block) => (block.type === "thinking" ? [block.signature] : [])));
  const issuedRedactions = new Set(issued.flatMap((block) => (block.type === "redacted_thinking" ? [block.data] : [])));
  const issuedToolUses = new Set(issued.flatMap((block) => (block.type === "tool_use" ? [block.id] : [])));
  const positions: { label: string; position: number }[] = [];
  for (const { reply, number } of served.required) {
    const where = `(reply ${number})`;
    for (const block of reply.content) {
      if (block.type === "thinking") {
        const echoed = assistantBlocks.find(({ block: sent }) => sent.type === "thinking" && (sent.signature === block.signature || sent.thinking === block.thinking));
        if (echoed === undefined) {
          problems.push(`thinking block signed ${block.signature} ${where} is missing`);
          continue;
        }
        positions.push({ label: `thinking block signed ${block.signature}`, position: echoed.position });
        if (echoed.block.signature !== block.signature) problems.push(`thinking block signed ${block.signature} ${where} comes back with signature ${JSON.stringify(echoed.block.signature)}`);
        if (echoed.block.thinking !== block.thinking) problems.push(`thinking block signed ${block.signature} ${where} comes back with its thinking changed`);
      } else if (block.type === "redacted_thinking") {
        const echoed = assistantBlocks.find(({ block: sent }) => sent.type === "redacted_thinking" && sent.data === block.data);
        if (echoed === undefined) {
          problems.push(`redacted thinking block ${JSON.stringify(block.data)} ${where} is missing`);
          continue;
        }
        positions.push({ label: `redacted thinking block ${JSON.stringify(block.data)}`, position: echoed.position });
      } else if (block.type === "tool_use") {
        const echoed = assistantBlocks.find(({ block: sent }) => sent.type === "tool_use" && sent.id === block.id);
        if (echoed === undefined) {
          problems.push(`tool_use ${block.id} ${where} is missing`);
          continue;
        }
        positions.push({ label: `tool_use ${block.id}`, position: echoed.position });
        if (echoed.block.name !== block.name) problems.push(`tool_use ${block.id} ${where} comes back named ${JSON.stringify(echoed.block.name)}, not ${JSON.stringify(block.name)}`);
        if (!sameJson(echoed.block.input, parsedJson(block.inputJson))) problems.push(`tool_use ${block.id} ${where} comes back with input ${JSON.stringify(echoed.block.input)}, not ${block.inputJson}`);
      }
    }
  }
  problems.push(...orderProblems(positions));

  for (const { block } of assistantBlocks) {
    if (block.type === "thinking" && !issuedSignatures.has(String(block.signature))) problems.push(`thinking block signed ${JSON.stringify(block.signature)} was never sent by this server`);
    if (block.type === "redacted_thinking" && !issuedRedactions.has(String(block.data))) problems.push(`redacted thinking block ${JSON.stringify(block.data)} was never sent by this server`);
    if (block.type === "tool_use" && !issuedToolUses.has(String(block.id))) problems.push(`tool_use ${String(block.id)} was never sent by this server`);
  }
  problems.push(...pairingProblems(messages));
  return problems;
}

/** Each assistant message's tool uses answered in the very next user message, and no tool result without its tool use. */
function pairingProblems(messages: readonly Record<string, unknown>[]): string[] {
  const problems: string[] = [];
  messages.forEach((entry, index) => {
    const blocks = arrayOf(entry.content).map((block) => recordOf(block) ?? {});
    if (entry.role === "assistant") {
      const next = messages[index + 1];
      const answered = new Set(
        next?.role === "user"
          ? arrayOf(next.content)
              .map((block) => recordOf(block) ?? {})
              .filter((block) => block.type === "tool_result")
              .map((block) => block.tool_use_id)
          : [],
      );
      for (const block of blocks) {
        if (block.type === "tool_use" && !answered.has(block.id)) problems.push(`tool_use ${String(block.id)} has no tool_result in the next user message`);
      }
      return;
    }
    const previous = messages[index - 1];
    const asked = new Set(
      previous?.role === "assistant"
        ? arrayOf(previous.content)
            .map((block) => recordOf(block) ?? {})
            .filter((block) => block.type === "tool_use")
            .map((block) => block.id)
        : [],
    );
    for (const block of blocks) {
      if (block.type === "tool_result" && !asked.has(block.tool_use_id)) problems.push(`tool_result for ${String(block.tool_use_id)} answers no tool_use in the message before it`);
    }
  });
  return problems;
}

/** The SSE frames of one message, event by event as the Messages API streams them. */
function messagesFrames(reply: AnthropicReply, replyIndex: number, model: string): string[] {
  const usage = reply.usage ?? { inputTokens: 100 + replyIndex, outputTokens: 30 };
  const stopReason = reply.stopReason ?? (reply.content.some((block) => block.type === "tool_use") ? "tool_use" : "end_turn");
  const events: Record<string, unknown>[] = [
    {
      type: "message_start",
      message: {
        id: `msg_${replyIndex + 1}`,
        type: "message",
        role: "assistant",
        model,
        content: [],
        stop_reason: null,
        stop_sequence: null,
        usage: { input_tokens: usage.inputTokens, cache_creation_input_tokens: 0, cache_read_input_tokens: 0, output_tokens: 1 },
      },
    },
    { type: "ping" },
  ];
  reply.content.forEach((block, index) => {
    if (block.type === "thinking") {
      events.push({ type: "content_block_start", index, content_block: { type: "thinking", thinking: "", signature: "" } });
      events.push({ type: "content_block_delta", index, delta: { type: "thinking_delta", thinking: block.thinking } });
      events.push({ type: "content_block_delta", index, delta: { type: "signature_delta", signature: block.signature } });
    } else if (block.type === "redacted_thinking") {
      events.push({ type: "content_block_start", index, content_block: { type: "redacted_thinking", data: block.data } });
    } else if (block.type === "text") {
      events.push({ type: "content_block_start", index, content_block: { type: "text", text: "" } });
      events.push({ type: "content_block_delta", index, delta: { type: "text_delta", text: block.text } });
    } else {
      events.push({ type: "content_block_start", index, content_block: { type: "tool_use", id: block.id, name: block.name, input: {} } });
      events.push({ type: "content_block_delta", index, delta: { type: "input_json_delta", partial_json: block.inputJson } });
    }
    events.push({ type: "content_block_stop", index });
  });
  events.push({ type: "message_delta", delta: { stop_reason: stopReason, stop_sequence: null }, usage: { output_tokens: usage.outputTokens } });
  events.push({ type: "message_stop" });
  return events.map((event) => `event: ${String(event.type)}\ndata: ${JSON.stringify(event)}\n\n`);
}
