import type { ProviderFailureKind } from "../contracts/provider.js";
import { hasCode, TurnlogError } from "./turnlog-error.js";

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
