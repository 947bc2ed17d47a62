import type { FinishReason, ProviderFailureKind, ProviderFormat, Usage } from "../contracts/provider.js";
import type { FinalizedResponse, Provider, ProviderRequest } from "./provider.js";
import { ProviderError } from "./provider.js";

/** One scripted answer: a response, or a failed attempt. */
export type ScriptStep =
  | {
      content?: string;
      toolCalls?: { id?: string; name?: string; arguments?: string }[];
      finishReason?: FinishReason;
      usage?: Usage;
      echo?: Record<string, unknown>;
    }
  | { error: { kind: ProviderFailureKind; retryable?: boolean; message?: string; status?: number } };

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
 * makes a test fail instead of passing silently.
 *
 * @example
 * const provider = scriptedProvider([
 *   { toolCalls: [{ name: "read_file", arguments: '{"path":"a.txt"}' }] },
 *   { content: "done" },
 * ]);
 */
export function scriptedProvider(steps: readonly ScriptStep[], options: { id?: string; format?: ProviderFormat } = {}): ScriptedProvider {
  let next = 0;
  const requests: ProviderRequest[] = [];
  return {
    id: options.id ?? "scripted",
    format: options.format ?? "openai-chat",
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
