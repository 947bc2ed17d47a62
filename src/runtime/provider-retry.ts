/** How long the runtime waits before retrying a failed provider attempt (`RuntimeOptions.providerRetry`). */
export interface ProviderRetryOptions {
  /** The wait after the first failed attempt; it doubles after each further one. Default 500. */
  baseDelayMs?: number;
  /** The longest wait, also for a server's `Retry-After`. Default 8 000. */
  maxDelayMs?: number;
}

/** `ProviderRetryOptions` with every default applied. */
export interface ProviderRetryPolicy {
  baseDelayMs: number;
  maxDelayMs: number;
}

/**
 * The defaults: 0.5 s, 1 s, 2 s, … up to 8 s — the schedule the official SDKs use, without
 * their jitter so that a run is reproducible.
 */
export const defaultProviderRetry: Readonly<ProviderRetryPolicy> = Object.freeze({ baseDelayMs: 500, maxDelayMs: 8_000 });

/**
 * Applies the defaults and checks the values (a bad one is the host's mistake: a `TypeError`).
 *
 * @example
 * resolveProviderRetry({ baseDelayMs: 10 }) // { baseDelayMs: 10, maxDelayMs: 8000 }
 */
export function resolveProviderRetry(options: ProviderRetryOptions = {}): ProviderRetryPolicy {
  const policy = {
    baseDelayMs: options.baseDelayMs ?? defaultProviderRetry.baseDelayMs,
    maxDelayMs: options.maxDelayMs ?? defaultProviderRetry.maxDelayMs,
  };
  for (const [name, value] of Object.entries(policy)) {
    if (typeof value !== "number" || !Number.isFinite(value) || value < 0) throw new TypeError(`providerRetry.${name} must be a non-negative number of milliseconds`);
  }
  return policy;
}

/**
 * How long to wait before the attempt that follows a failed one. Deterministic (no jitter):
 * `min(maxDelayMs, baseDelayMs · 2^(attempt − 1))`, or the server's `retryAfterMs` capped by
 * `maxDelayMs`. No wait where waiting cannot help: a response truncated inside tool calls (the
 * server answered; it is asked again at once) and an attempt interrupted by a crash (the wait
 * already happened, as downtime).
 *
 * @example
 * providerRetryDelayMs(defaultProviderRetry, { attempt: 3, kind: "transport" }) // 2000
 * providerRetryDelayMs(defaultProviderRetry, { attempt: 1, kind: "http-status", retryAfterMs: 30_000 }) // 8000
 */
export function providerRetryDelayMs(policy: ProviderRetryPolicy, failure: { attempt: number; kind: string; retryAfterMs?: number }): number {
  if (failure.kind === "truncated-tool-calls" || failure.kind === "interrupted") return 0;
  if (failure.retryAfterMs !== undefined) return Math.min(policy.maxDelayMs, Math.max(0, failure.retryAfterMs));
  return Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** Math.max(0, failure.attempt - 1));
}
