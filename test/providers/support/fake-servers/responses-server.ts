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
 * A fake OpenAI Responses API (`POST /v1/responses`, streaming) as `@ai-sdk/openai`'s
 * `openai.responses(model)` consumes it, for a reasoning model run statelessly: the client sends
 * `store: false` and `include: ["reasoning.encrypted_content"]`, the server streams reasoning items
 * whose `encrypted_content` is the model's hidden reasoning, and on the next request every one of
 * them must come back (`{ type: "reasoning", id, encrypted_content, summary }`), beside every
 * function call (`{ type: "function_call", call_id, name, arguments }`) and its output
 * (`{ type: "function_call_output", call_id, output }`).
 *
 * @example
 * const server = await startResponsesServer([
 *   { output: [reasoning("rs_1", "enc-1", ["Reading the file first."]), functionCall("fc_1", "call_1", "read_file", { path: "a.txt" })] },
 *   { output: [reasoning("rs_2", "enc-2"), message("msg_2", "Done.")] },
 * ]);
 * const openai = createOpenAI({ baseURL: `${server.url}/v1`, apiKey: "test-key" });
 * // … streamText({ model: openai.responses("gpt-5"), providerOptions: { openai: { store: false, include: ["reasoning.encrypted_content"] } }, … })
 * expect(server.problems).toEqual([]);
 */

/** A reasoning item: its ID, its encrypted content, and its summary parts (often none). */
export interface ResponsesReasoningItem {
  readonly type: "reasoning";
  readonly id: string;
  readonly encryptedContent: string;
  readonly summary: readonly string[];
}

/** An assistant message with one `output_text` part. */
export interface ResponsesMessageItem {
  readonly type: "message";
  readonly id: string;
  readonly text: string;
}

/** A function call: `id` is the output item's ID (`fc_…`), `callId` the one its output names. */
export interface ResponsesFunctionCallItem {
  readonly type: "function_call";
  readonly id: string;
  readonly callId: string;
  readonly name: string;
  /** The arguments exactly as streamed (a JSON text, or a cut one for a broken call). */
  readonly arguments: string;
}

/** An output item of a scripted response, in the order the response streams them. */
export type ResponsesOutputItem = ResponsesReasoningItem | ResponsesMessageItem | ResponsesFunctionCallItem;

/** One scripted response: its output items in order, and how it ends. */
export interface ResponsesReply extends ReplyControls {
  readonly output: readonly ResponsesOutputItem[];
  /** `response.incomplete` with this reason (`max_output_tokens`) instead of `response.completed`. */
  readonly incompleteReason?: string;
  readonly usage?: { readonly inputTokens: number; readonly outputTokens: number; readonly reasoningTokens: number };
}

/** A reasoning item for a script. */
export function reasoning(id: string, encryptedContent: string, summary: readonly string[] = []): ResponsesReasoningItem {
  return { type: "reasoning", id, encryptedContent, summary };
}

/** A message item for a script. */
export function message(id: string, text: string): ResponsesMessageItem {
  return { type: "message", id, text };
}

/** A function call item for a script, its arguments given as a value (streamed as JSON). */
export function functionCall(id: string, callId: string, name: string, input: unknown): ResponsesFunctionCallItem {
  return { type: "function_call", id, callId, name, arguments: JSON.stringify(input) };
}

/** How {@link startResponsesServer} treats a wrong request, and the model it reports. */
export interface ResponsesServerOptions {
  /** Default `"reject"`: a wrong request gets OpenAI's 400 error body (checking-server.ts). */
  readonly onProblem?: ProblemHandling;
  /** The model name the stream reports; default `gpt-5`. */
  readonly model?: string;
  /** Replies this conversation had before the server started (a recorded session continued): later requests must echo them. */
  readonly alreadyServed?: readonly ResponsesReply[];
}

/** Starts a fake Responses API on 127.0.0.1; point `createOpenAI({ baseURL: `${url}/v1` })` at it. */
export async function startResponsesServer(script: readonly (ResponsesReply | ScriptedFailure)[], options: ResponsesServerOptions = {}): Promise<FakeProviderServer> {
  const model = options.model ?? "gpt-5";
  return startCheckingServer<ResponsesReply>({
    name: "OpenAI Responses",
    script,
    ...(options.alreadyServed !== undefined ? { alreadyServed: options.alreadyServed } : {}),
    onProblem: options.onProblem ?? "reject",
    endsIncomplete: (reply) => reply.incompleteReason !== undefined,
    acceptsPath: (path) => path === "/v1/responses",
    check: checkResponsesRequest,
    frames: (reply, index) => responsesFrames(reply, index, model),
    errorBody: (status, text) => ({ error: { message: text, type: "invalid_request_error", param: "input", code: status === 404 ? "not_found" : "invalid_request" } }),
  });
}

/** The checks: stateless reasoning asked for, every earlier item echoed unchanged and in order, calls and outputs paired. */
function checkResponsesRequest(body: unknown, served: ServedReplies<ResponsesReply>): string[] {
  const request = recordOf(body) ?? {};
  const problems: string[] = [];
  if (request.stream !== true) problems.push("stream is not true");
  if (request.store !== false) problems.push(`store is ${JSON.stringify(request.store)}, not false: the reasoning items must travel in the request`);
  if (!arrayOf(request.include).includes("reasoning.encrypted_content")) problems.push('include lacks "reasoning.encrypted_content"');
  const input = arrayOf(request.input).map((item) => recordOf(item) ?? {});

  const issued = served.issued.flatMap(({ reply }) => reply.output);
  const issuedReasoning = new Set(issued.flatMap((item) => (item.type === "reasoning" ? [item.id] : [])));
  const issuedCalls = new Set(issued.flatMap((item) => (item.type === "function_call" ? [item.callId] : [])));
  const positions: { label: string; position: number }[] = [];
  for (const { reply, number } of served.required) {
    for (const item of reply.output) {
      const where = `(reply ${number})`;
      if (item.type === "reasoning") {
        const position = input.findIndex((entry) => entry.type === "reasoning" && entry.id === item.id);
        const echoed = input[position];
        if (echoed === undefined) {
          problems.push(`reasoning item ${item.id} ${where} is missing`);
          continue;
        }
        positions.push({ label: `reasoning item ${item.id}`, position });
        if (echoed.encrypted_content !== item.encryptedContent) {
          problems.push(`reasoning item ${item.id} ${where} comes back with encrypted_content ${JSON.stringify(echoed.encrypted_content)}, not the one sent`);
        }
        const summary = arrayOf(echoed.summary).map((part) => recordOf(part)?.text);
        if (!sameJson(summary, item.summary)) problems.push(`reasoning item ${item.id} ${where} comes back with summary ${JSON.stringify(summary)}, not ${JSON.stringify(item.summary)}`);
      } else if (item.type === "function_call") {
        const position = input.findIndex((entry) => entry.type === "function_call" && entry.call_id === item.callId);
        const echoed = input[position];
        if (echoed === undefined) {
          problems.push(`function call ${item.callId} ${where} is missing`);
          continue;
        }
        positions.push({ label: `function call ${item.callId}`, position });
        if (echoed.name !== item.name) problems.push(`function call ${item.callId} ${where} comes back named ${JSON.stringify(echoed.name)}, not ${JSON.stringify(item.name)}`);
        if (!sameJson(parsedJson(echoed.arguments), parsedJson(item.arguments))) {
          problems.push(`function call ${item.callId} ${where} comes back with arguments ${JSON.stringify(echoed.arguments)}, not ${JSON.stringify(item.arguments)}`);
        }
        if (echoed.id !== undefined && echoed.id !== item.id) problems.push(`function call ${item.callId} ${where} comes back with item id ${JSON.stringify(echoed.id)}, not ${item.id}`);
      } else if (item.text !== "") {
        const position = input.findIndex((entry) => entry.role === "assistant" && arrayOf(entry.content).some((part) => recordOf(part)?.text === item.text));
        if (position === -1) {
          problems.push(`message ${item.id} ${where} is missing`);
          continue;
        }
        positions.push({ label: `message ${item.id}`, position });
      }
    }
  }
  problems.push(...orderProblems(positions));

  for (const entry of input) {
    if (entry.type === "reasoning" && typeof entry.id === "string" && !issuedReasoning.has(entry.id)) problems.push(`reasoning item ${entry.id} was never sent by this server`);
  }
  problems.push(...pairingProblems(input, issuedCalls));
  return problems;
}

/** Every function call answered once, after it; every output answering a call before it. */
function pairingProblems(input: readonly Record<string, unknown>[], issuedCalls: ReadonlySet<string>): string[] {
  const problems: string[] = [];
  const calls = new Map<unknown, number>();
  const outputs = new Map<unknown, number>();
  input.forEach((entry, position) => {
    if (entry.type === "function_call") {
      if (calls.has(entry.call_id)) problems.push(`function call ${String(entry.call_id)} appears twice`);
      calls.set(entry.call_id, position);
      if (!issuedCalls.has(String(entry.call_id))) problems.push(`function call ${String(entry.call_id)} was never sent by this server`);
    } else if (entry.type === "function_call_output") {
      if (outputs.has(entry.call_id)) problems.push(`function call ${String(entry.call_id)} has two outputs`);
      outputs.set(entry.call_id, position);
      const call = calls.get(entry.call_id);
      if (call === undefined) problems.push(`function_call_output for ${String(entry.call_id)} answers no function call before it`);
      if (typeof entry.output !== "string" && !Array.isArray(entry.output)) problems.push(`function_call_output for ${String(entry.call_id)} has no output`);
    }
  });
  for (const callId of calls.keys()) {
    if (!outputs.has(callId)) problems.push(`function call ${String(callId)} has no function_call_output`);
  }
  return problems;
}

/** The SSE frames of one response, event by event as the Responses API streams them. */
function responsesFrames(reply: ResponsesReply, replyIndex: number, model: string): string[] {
  const events: Record<string, unknown>[] = [];
  const responseId = `resp_${replyIndex + 1}`;
  const createdAt = 1_790_000_000 + replyIndex;
  const shell = { id: responseId, object: "response", created_at: createdAt, model, store: false };
  events.push({ type: "response.created", response: { ...shell, status: "in_progress", output: [], usage: null } });
  events.push({ type: "response.in_progress", response: { ...shell, status: "in_progress", output: [], usage: null } });
  const done: Record<string, unknown>[] = [];
  reply.output.forEach((item, outputIndex) => {
    if (item.type === "reasoning") {
      // The added event carries no encrypted content; the client must take it from the done event.
      events.push({ type: "response.output_item.added", output_index: outputIndex, item: { id: item.id, type: "reasoning", summary: [] } });
      item.summary.forEach((text, summaryIndex) => {
        const base = { item_id: item.id, output_index: outputIndex, summary_index: summaryIndex };
        events.push({ type: "response.reasoning_summary_part.added", ...base, part: { type: "summary_text", text: "" } });
        events.push({ type: "response.reasoning_summary_text.delta", ...base, delta: text });
        events.push({ type: "response.reasoning_summary_text.done", ...base, text });
        events.push({ type: "response.reasoning_summary_part.done", ...base, part: { type: "summary_text", text } });
      });
      const finished = { id: item.id, type: "reasoning", summary: item.summary.map((text) => ({ type: "summary_text", text })), encrypted_content: item.encryptedContent };
      events.push({ type: "response.output_item.done", output_index: outputIndex, item: finished });
      done.push(finished);
    } else if (item.type === "message") {
      const base = { item_id: item.id, output_index: outputIndex, content_index: 0 };
      events.push({ type: "response.output_item.added", output_index: outputIndex, item: { id: item.id, type: "message", status: "in_progress", role: "assistant", content: [] } });
      events.push({ type: "response.content_part.added", ...base, part: { type: "output_text", text: "", annotations: [] } });
      events.push({ type: "response.output_text.delta", ...base, delta: item.text, logprobs: [] });
      events.push({ type: "response.output_text.done", ...base, text: item.text, logprobs: [] });
      events.push({ type: "response.content_part.done", ...base, part: { type: "output_text", text: item.text, annotations: [] } });
      const finished = { id: item.id, type: "message", status: "completed", role: "assistant", content: [{ type: "output_text", text: item.text, annotations: [] }] };
      events.push({ type: "response.output_item.done", output_index: outputIndex, item: finished });
      done.push(finished);
    } else {
      const opened = { id: item.id, type: "function_call", status: "in_progress", call_id: item.callId, name: item.name, arguments: "" };
      events.push({ type: "response.output_item.added", output_index: outputIndex, item: opened });
      events.push({ type: "response.function_call_arguments.delta", item_id: item.id, output_index: outputIndex, delta: item.arguments });
      events.push({ type: "response.function_call_arguments.done", item_id: item.id, output_index: outputIndex, arguments: item.arguments });
      const finished = { ...opened, status: "completed", arguments: item.arguments };
      events.push({ type: "response.output_item.done", output_index: outputIndex, item: finished });
      done.push(finished);
    }
  });
  const usage = reply.usage ?? { inputTokens: 100 + replyIndex, outputTokens: 20, reasoningTokens: 12 };
  const finalUsage = {
    input_tokens: usage.inputTokens,
    input_tokens_details: { cached_tokens: 0 },
    output_tokens: usage.outputTokens,
    output_tokens_details: { reasoning_tokens: usage.reasoningTokens },
    total_tokens: usage.inputTokens + usage.outputTokens,
  };
  const incomplete = reply.incompleteReason !== undefined;
  events.push({
    type: incomplete ? "response.incomplete" : "response.completed",
    response: {
      ...shell,
      status: incomplete ? "incomplete" : "completed",
      incomplete_details: incomplete ? { reason: reply.incompleteReason } : null,
      output: done,
      usage: finalUsage,
    },
  });
  return events.map((event, sequence) => `event: ${String(event.type)}\ndata: ${JSON.stringify({ ...event, sequence_number: sequence })}\n\n`);
}
