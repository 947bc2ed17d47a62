import type { FinishReason, ProviderFailureKind, ProviderFormat, Usage } from "../contracts/provider.js";
import { defaultProviderFormatName, providerFormat } from "./formats.js";
import type { FinalizedResponse, Provider, ProviderRequest } from "./provider.js";
import { ProviderError } from "../errors/provider-error.js";
import { unwrapFinalization } from "./stream-finalization.js";

/**
 * A scripted answer given as raw stream chunks, replayed through the stream finalizer of `format`
 * (default: the provider's own format) exactly as a streaming adapter would.
 *
 * @example
 * { chunks: [{ choices: [{ index: 0, delta: { content: "hi" }, finish_reason: "stop" }] }] }
 * { chunks: openAiChunksWithoutFinishReason, done: false } // the stream broke off: incomplete-stream
 */
export interface ScriptedChunksStep {
  /** OpenAI `chat.completion.chunk` objects, or Anthropic stream event objects, already parsed. */
  chunks: readonly unknown[];
  format?: ProviderFormat;
  /**
   * Whether the OpenAI stream ended properly with `[DONE]`; default true. Anthropic streams say
   * that themselves (`message_stop`), so it is not read for them.
   */
  done?: boolean;
}

/** One scripted answer: a response, a failed attempt, or raw stream chunks to finalize. */
export type ScriptStep =
  | {
      content?: string;
      toolCalls?: { id?: string; name?: string; arguments?: string }[];
      finishReason?: FinishReason;
      usage?: Usage;
      echo?: Record<string, unknown>;
    }
  | { error: { kind: ProviderFailureKind; retryable?: boolean; message?: string; status?: number } }
  | ScriptedChunksStep;

export interface ScriptedProvider extends Provider {
  /** Responses not yet consumed. */
  readonly remaining: number;
  /** Every request the provider received, in order. */
  readonly requests: ProviderRequest[];
  /** Throws if any scripted response was not consumed. */
  assertConsumed(): void;
}

/**
 * A provider that answers from a script, by call number — for tests and the demo. It fails loudly
 * on a call beyond the script (the turn fails with `script-exhausted`), so a change in control flow
 * makes a test fail instead of passing silently. A `{ chunks }` step is run through the stream
 * finalizer: its visible text goes to `onDelta` as it is read, and a failed finalization throws the
 * finalizer's `ProviderError` (e.g. `incomplete-stream`, retryable).
 *
 * @example
 * const provider = scriptedProvider([
 *   { toolCalls: [{ name: "read_file", arguments: '{"path":"a.txt"}' }] },
 *   { content: "done" },
 *   { chunks: [{ choices: [{ index: 0, delta: { content: "streamed" }, finish_reason: "stop" }] }] },
 * ]);
 */
export function scriptedProvider(steps: readonly ScriptStep[], options: { id?: string; format?: ProviderFormat } = {}): ScriptedProvider {
  let next = 0;
  const requests: ProviderRequest[] = [];
  const format = options.format ?? defaultProviderFormatName;
  return {
    id: options.id ?? "scripted",
    format,
    get remaining() {
      return steps.length - next;
    },
    requests,
    assertConsumed() {
      if (next < steps.length) throw new Error(`scripted provider: ${steps.length - next} of ${steps.length} responses were never requested`);
    },
    async complete(request, { signal, onDelta }): Promise<FinalizedResponse> {
      signal.throwIfAborted();
      requests.push(request);
      const step = steps[next];
      if (step === undefined) {
        throw new ProviderError({
          kind: "script-exhausted",
          retryable: false,
          message: `scripted provider: call ${next + 1} is beyond the script of ${steps.length} responses`,
        });
      }
      next += 1;
      if ("error" in step) {
        const { kind, retryable = kind !== "script-exhausted", message, status } = step.error;
        throw new ProviderError({ kind, retryable, message: message ?? `scripted ${kind}`, ...(status !== undefined ? { status } : {}) });
      }
      if ("chunks" in step) return replayChunks(step, format, onDelta);
      const toolCalls = (step.toolCalls ?? []).map((call) => ({ ...call, arguments: call.arguments ?? "" }));
      const content = step.content ?? "";
      if (content !== "") onDelta?.(content);
      const response: FinalizedResponse = {
        content,
        toolCalls,
        finishReason: step.finishReason ?? (toolCalls.length > 0 ? "tool_calls" : "stop"),
      };
      if (step.usage !== undefined) response.usage = step.usage;
      if (step.echo !== undefined) response.echo = step.echo;
      return response;
    },
  };
}

/** Runs a chunks step through its format's finalizer (the format's adapter), as a streaming adapter would. */
function replayChunks(step: ScriptedChunksStep, format: ProviderFormat, onDelta: ((text: string) => void) | undefined): FinalizedResponse {
  const result = providerFormat(step.format ?? format).finalizeStream(step.chunks, { done: step.done ?? true, ...(onDelta !== undefined ? { onText: onDelta } : {}) });
  return unwrapFinalization(result);
}
