import type { FinishReason, ProviderFailureKind, ProviderFormat, Usage } from "../contracts/provider.js";
import { hasCode, TurnlogError } from "../errors/turnlog-error.js";
import type { ProviderToolSchema } from "../contracts/tools.js";

/** What the runtime asks of a provider: messages in the provider's own format, tools, system. */
export interface ProviderRequest {
  messages: unknown[];
  tools: ProviderToolSchema[];
  system?: string;
}

/** A tool call of a finalized response. `arguments` is the JSON text as the model wrote it. */
export interface FinalizedToolCall {
  id?: string;
  name?: string;
  arguments: string;
}

/** A provider's response once its stream (if any) has ended properly. */
export interface FinalizedResponse {
  content: string;
  toolCalls: FinalizedToolCall[];
  /** Default: `tool_calls` when there are tool calls, else `stop`. */
  finishReason?: FinishReason;
  usage?: Usage;
  echo?: Record<string, unknown>;
}

/**
 * What a host implements to plug in any model. Streaming adapters run their chunks through the
 * finalizers and resolve with the finalized response.
 */
export interface Provider {
  id: string;
  format: ProviderFormat;
  complete(request: ProviderRequest, options: { signal: AbortSignal; onDelta?: (text: string) => void }): Promise<FinalizedResponse>;
}

/**
 * A provider failure with a kind the loop understands; any other thrown error is taken as a
 * retryable `transport` failure.
 *
 * @example
 * throw new ProviderError({ kind: "http-status", status: 429, retryable: true, retryAfterMs: 2000, message: "HTTP 429: slow down" });
 */
export class ProviderError extends TurnlogError {
  readonly code = "TURNLOG_PROVIDER_ERROR";
  readonly kind: ProviderFailureKind;
  readonly retryable: boolean;
  readonly status: number | undefined;
  /**
   * How long the server asked the client to wait before trying again (`Retry-After`), in
   * milliseconds. The runtime waits that long (capped) before the next attempt.
   */
  readonly retryAfterMs: number | undefined;

  constructor(options: {
    kind: ProviderFailureKind;
    retryable: boolean;
    status?: number;
    retryAfterMs?: number;
    message?: string;
    cause?: unknown;
  }) {
    super(options.message ?? `provider failed: ${options.kind}`, { cause: options.cause });
    this.kind = options.kind;
    this.retryable = options.retryable;
    this.status = options.status;
    this.retryAfterMs = options.retryAfterMs;
  }

  static isInstance(value: unknown): value is ProviderError {
    return hasCode(value, "TURNLOG_PROVIDER_ERROR");
  }
}
