import {
  arrayOf,
  type FakeProviderServer,
  orderProblems,
  type ProblemHandling,
  recordOf,
  type ReplyControls,
  sameJson,
  type ScriptedFailure,
  type ServedReplies,
  startCheckingServer,
} from "./checking-server.js";

/**
 * A fake Gemini API (`POST /v1beta/models/<model>:streamGenerateContent?alt=sse`) as
 * `@ai-sdk/google` consumes it. Each SSE `data:` line is a `GenerateContentResponse` chunk:
 * `{ candidates: [{ content: { role: "model", parts }, finishReason? }], usageMetadata? }`. A part is
 * a thought summary (`{ text, thought: true }`), text, or a function call
 * (`{ functionCall: { id?, name, args } }`), and any of them may carry a `thoughtSignature`. On the
 * next request every signed part must come back in a `model` content with the same signature, every
 * function call with its name and arguments, and the very next `user` content must answer each call
 * with a `functionResponse` of the same name (and the same `id` when the call had one): Gemini 3
 * rejects a function call sent back without its signature with a 400.
 *
 * @example
 * const server = await startGeminiServer([
 *   { parts: [thought("Read it first."), call("read_file", { path: "a.txt" }, { signature: "sig-1" })] },
 *   { parts: [answer("a.txt says hello.", { signature: "sig-2" })] },
 * ]);
 * const google = createGoogleGenerativeAI({ baseURL: `${server.url}/v1beta`, apiKey: "test-key" });
 * // … streamText({ model: google("gemini-3-pro-preview"), … })
 * expect(server.problems).toEqual([]);
 */

/** A text part: a thought summary (`thought: true`) or answer text, optionally signed. */
export interface GeminiTextPart {
  readonly kind: "text";
  readonly text: string;
  /** A thought summary rather than answer text. */
  readonly thought: boolean;
  readonly thoughtSignature?: string;
}

/** A function call part, its arguments whole (Gemini streams a call in one chunk), optionally signed. */
export interface GeminiFunctionCallPart {
  readonly kind: "functionCall";
  /** The call's ID, when the API gives one (the package then sends it back on the call and its response). */
  readonly id?: string;
  readonly name: string;
  readonly args: Record<string, unknown>;
  readonly thoughtSignature?: string;
}

/** A part of a scripted response, one chunk each. */
export type GeminiPart = GeminiTextPart | GeminiFunctionCallPart;

/** One scripted response: its parts in order, one chunk each, and its finish reason (default `STOP`). */
export interface GeminiReply extends ReplyControls {
  readonly parts: readonly GeminiPart[];
  readonly finishReason?: "STOP" | "MAX_TOKENS" | "SAFETY" | "MALFORMED_FUNCTION_CALL" | "OTHER";
  readonly usage?: { readonly promptTokens: number; readonly candidatesTokens: number; readonly thoughtsTokens: number };
}

/** A thought summary part for a script. */
export function thought(text: string, options: { signature?: string } = {}): GeminiTextPart {
  return { kind: "text", text, thought: true, ...(options.signature !== undefined ? { thoughtSignature: options.signature } : {}) };
}

/** An answer text part for a script. */
export function answer(text: string, options: { signature?: string } = {}): GeminiTextPart {
  return { kind: "text", text, thought: false, ...(options.signature !== undefined ? { thoughtSignature: options.signature } : {}) };
}

/** A function call part for a script. */
export function call(name: string, args: Record<string, unknown>, options: { id?: string; signature?: string } = {}): GeminiFunctionCallPart {
  return {
    kind: "functionCall",
    name,
    args,
    ...(options.id !== undefined ? { id: options.id } : {}),
    ...(options.signature !== undefined ? { thoughtSignature: options.signature } : {}),
  };
}

/** How {@link startGeminiServer} treats a wrong request, and the model version it reports. */
export interface GeminiServerOptions {
  /** Default `"reject"`: a wrong request gets Gemini's 400 error body (checking-server.ts). */
  readonly onProblem?: ProblemHandling;
  /** The model version the stream reports; default `gemini-3-pro-preview`. */
  readonly model?: string;
}

/** Starts a fake Gemini API on 127.0.0.1; point `createGoogleGenerativeAI({ baseURL: `${url}/v1beta` })` at it. */
export async function startGeminiServer(script: readonly (GeminiReply | ScriptedFailure)[], options: GeminiServerOptions = {}): Promise<FakeProviderServer> {
  const model = options.model ?? "gemini-3-pro-preview";
  return startCheckingServer<GeminiReply>({
    name: "Gemini",
    script,
    onProblem: options.onProblem ?? "reject",
    endsIncomplete: (reply) => reply.finishReason === "MAX_TOKENS",
    acceptsPath: (path) => /^\/v1beta\/models\/[\w.-]+:streamGenerateContent\?alt=sse$/.test(path),
    check: checkGenerateContentRequest,
    frames: (reply, index) => generateContentFrames(reply, index, model),
    errorBody: (status, message) => ({ error: { code: status, message, status: status === 404 ? "NOT_FOUND" : "INVALID_ARGUMENT" } }),
  });
}

interface SentPart {
  readonly part: Record<string, unknown>;
  /** Its place among all model parts of the request, for the order check. */
  readonly position: number;
}

function describePart(part: GeminiPart): string {
  return part.kind === "functionCall" ? `function call ${part.name}${part.id !== undefined ? ` (${part.id})` : ` ${JSON.stringify(part.args)}`}` : `${part.thought ? "thought" : "text"} ${JSON.stringify(part.text)}`;
}

function checkGenerateContentRequest(body: unknown, served: ServedReplies<GeminiReply>): string[] {
  const request = recordOf(body) ?? {};
  const problems: string[] = [];
  const contents = arrayOf(request.contents).map((entry) => recordOf(entry) ?? {});
  const modelParts: SentPart[] = [];
  for (const entry of contents) {
    if (entry.role !== "model") continue;
    for (const part of arrayOf(entry.parts)) modelParts.push({ part: recordOf(part) ?? {}, position: modelParts.length });
  }

  const issuedSignatures = new Set(served.issued.flatMap(({ reply }) => reply.parts.flatMap((part) => (part.thoughtSignature !== undefined ? [part.thoughtSignature] : []))));
  const claimed = new Set<number>();
  const positions: { label: string; position: number }[] = [];
  for (const { reply, number } of served.required) {
    const where = `(reply ${number})`;
    for (const part of reply.parts) {
      // Unsigned thought summaries need not come back; everything else the model said does.
      if (part.kind === "text" && part.thought && part.thoughtSignature === undefined) continue;
      const echoed = modelParts.find(({ part: sent, position }) => !claimed.has(position) && matches(sent, part));
      if (echoed === undefined) {
        problems.push(`${describePart(part)} ${where} is missing`);
        continue;
      }
      claimed.add(echoed.position);
      positions.push({ label: describePart(part), position: echoed.position });
      if (echoed.part.thoughtSignature !== part.thoughtSignature) {
        problems.push(
          part.thoughtSignature === undefined
            ? `${describePart(part)} ${where} comes back with thoughtSignature ${JSON.stringify(echoed.part.thoughtSignature)}, though it had none`
            : `${describePart(part)} ${where} comes back with thoughtSignature ${JSON.stringify(echoed.part.thoughtSignature)}, not ${part.thoughtSignature}`,
        );
      }
    }
  }
  problems.push(...orderProblems(positions));
  const unknownSignatures = new Set(modelParts.map(({ part }) => part.thoughtSignature).filter((signature) => typeof signature === "string" && !issuedSignatures.has(signature)));
  for (const signature of unknownSignatures) problems.push(`thoughtSignature ${JSON.stringify(signature)} was never sent by this server`);
  problems.push(...pairingProblems(contents));
  return problems;
}

/** Whether a part of the request is the one the server sent: the same call (by ID when it had one), or the same text. */
function matches(sent: Record<string, unknown>, part: GeminiPart): boolean {
  if (part.kind === "text") return sent.text === part.text && (sent.thought === true) === part.thought;
  const functionCall = recordOf(sent.functionCall);
  if (functionCall === undefined || functionCall.name !== part.name || !sameJson(functionCall.args ?? {}, part.args)) return false;
  return part.id === undefined || functionCall.id === part.id;
}

/** Each model content's function calls answered, one for one, in the next user content; no response without its call. */
function pairingProblems(contents: readonly Record<string, unknown>[]): string[] {
  const problems: string[] = [];
  const callsOf = (entry: Record<string, unknown> | undefined) =>
    entry?.role === "model" ? arrayOf(entry.parts).flatMap((part) => (recordOf(recordOf(part)?.functionCall) !== undefined ? [recordOf(recordOf(part)?.functionCall) ?? {}] : [])) : [];
  const responsesOf = (entry: Record<string, unknown> | undefined) =>
    entry?.role === "user" ? arrayOf(entry.parts).flatMap((part) => (recordOf(recordOf(part)?.functionResponse) !== undefined ? [recordOf(recordOf(part)?.functionResponse) ?? {}] : [])) : [];
  contents.forEach((entry, index) => {
    const calls = callsOf(entry);
    if (calls.length > 0) {
      const unanswered = [...responsesOf(contents[index + 1])];
      for (const functionCall of calls) {
        const answeredAt = unanswered.findIndex((response) => response.name === functionCall.name && (functionCall.id === undefined || response.id === functionCall.id));
        if (answeredAt === -1) problems.push(`function call ${String(functionCall.name)}${functionCall.id !== undefined ? ` (${String(functionCall.id)})` : ""} has no functionResponse in the next user content`);
        else unanswered.splice(answeredAt, 1);
      }
    }
    const responses = responsesOf(entry);
    if (responses.length > 0) {
      const asked = [...callsOf(contents[index - 1])];
      for (const response of responses) {
        const askedAt = asked.findIndex((functionCall) => functionCall.name === response.name && (functionCall.id === undefined || functionCall.id === response.id));
        if (askedAt === -1) problems.push(`functionResponse ${String(response.name)} answers no function call in the content before it`);
        else asked.splice(askedAt, 1);
      }
    }
  });
  return problems;
}

/** The SSE frames of one response: one chunk per part, the last with the finish reason and usage. */
function generateContentFrames(reply: GeminiReply, replyIndex: number, model: string): string[] {
  const usage = reply.usage ?? { promptTokens: 100 + replyIndex, candidatesTokens: 20, thoughtsTokens: 12 };
  const responseId = `gemini-response-${replyIndex + 1}`;
  const chunks = reply.parts.map((part, index) => {
    const wirePart =
      part.kind === "text"
        ? { text: part.text, ...(part.thought ? { thought: true } : {}), ...(part.thoughtSignature !== undefined ? { thoughtSignature: part.thoughtSignature } : {}) }
        : {
            functionCall: { ...(part.id !== undefined ? { id: part.id } : {}), name: part.name, args: part.args },
            ...(part.thoughtSignature !== undefined ? { thoughtSignature: part.thoughtSignature } : {}),
          };
    const last = index === reply.parts.length - 1;
    return {
      candidates: [{ content: { role: "model", parts: [wirePart] }, index: 0, ...(last ? { finishReason: reply.finishReason ?? "STOP" } : {}) }],
      usageMetadata: last
        ? {
            promptTokenCount: usage.promptTokens,
            candidatesTokenCount: usage.candidatesTokens,
            thoughtsTokenCount: usage.thoughtsTokens,
            totalTokenCount: usage.promptTokens + usage.candidatesTokens + usage.thoughtsTokens,
          }
        : { promptTokenCount: usage.promptTokens, totalTokenCount: usage.promptTokens },
      modelVersion: model,
      responseId,
    };
  });
  return chunks.map((chunk) => `data: ${JSON.stringify(chunk)}\n\n`);
}
