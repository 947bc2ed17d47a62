import type { ProviderFormat } from "../contracts/provider.js";
import { connectionFailure, describeNetworkError, httpStatusFailure } from "./http-failure.js";
import type { ProviderCredential } from "./provider-credential.js";
import type { FinalizedResponse } from "./provider.js";
import { ProviderError } from "../errors/provider-error.js";
import type { FinalizationFailure, FinalizationResult } from "./stream-finalization.js";
import { createStreamWatchdog, type FetchFunction } from "./stream-watchdog.js";

/** What turnlog reads of an official SDK's `APIError` (openai and @anthropic-ai/sdk share it). */
export interface SdkApiError extends Error {
  readonly status: number | undefined;
  readonly headers: Headers | undefined;
  /** The parsed error body (or, mid-stream, the in-band error payload). */
  readonly error: unknown;
}

type ErrorClass<Instance> = abstract new (...args: never[]) => Instance;

/**
 * The error classes of one official SDK. Both SDKs are generated from the same template, so one
 * mapping serves both; each adapter passes its own SDK's classes for `instanceof`.
 */
export interface SdkErrorClasses {
  APIError: ErrorClass<SdkApiError>;
  APIConnectionError: ErrorClass<Error>;
  APIConnectionTimeoutError: ErrorClass<Error>;
}

/** One streaming request, as a real adapter describes it to `runStreamingCall`. */
export interface StreamingCall {
  format: ProviderFormat;
  /** The caller's signal: its abort propagates as an abort, never as a provider failure. */
  signal: AbortSignal;
  credential: ProviderCredential;
  requestTimeoutMs: number;
  staleStreamTimeoutMs: number;
  errors: SdkErrorClasses;
  /** Sends the request with the SDK, using this `fetch` and `signal`; resolves with the event stream. */
  open(transport: { fetch: FetchFunction; signal: AbortSignal }): Promise<AsyncIterable<unknown>>;
  /** The stream finalizer: every chunk is pushed to it, in order. */
  finalizer: { push(chunk: unknown): void; readonly failure: FinalizationFailure | undefined };
  /** Finalizes once the stream has ended, however it ended. */
  finish(): FinalizationResult;
  /** The finalizer input an in-band error stands for (the SDKs throw it as a status-less `APIError`). */
  inBandEvent(error: SdkApiError): unknown;
  /** Sees the raw response bytes (the OpenAI adapter looks for `data: [DONE]` in them). */
  onBytes?: (bytes: Uint8Array) => void;
}

/**
 * Runs one streaming request through its finalizer and resolves with the finalized response, or
 * throws the `ProviderError` the turn records as `turn.provider.failed`:
 *
 * - an error status before the stream starts → `http-status` (retryable for 408/409/429/5xx, with
 *   `retryAfterMs` from `Retry-After`); no response at all → `transport`; no headers within
 *   `requestTimeoutMs` → `timeout`;
 * - no byte for `staleStreamTimeoutMs` once the stream started → `timeout`;
 * - an in-band error event → the finalizer's `transport` failure; an unparsable chunk → `transport`;
 * - a stream that ended or broke off before finalizing → the finalizer's `incomplete-stream`
 *   failure. A stream that broke off *after* its finish reason is finalized as usual: everything
 *   that matters has arrived.
 *
 * Every message is scrubbed of the credential. A caller's abort is rethrown as it is (the loop
 * checks `signal.aborted` and records a cancellation, not a failure).
 *
 * @example
 * return runStreamingCall({ format: "openai-chat", signal, credential, requestTimeoutMs, staleStreamTimeoutMs,
 *   errors: { APIError, APIConnectionError, APIConnectionTimeoutError },
 *   open: ({ fetch, signal }) => new OpenAI({ apiKey, fetch, maxRetries: 0 }).chat.completions.create(body, { signal }),
 *   finalizer, finish: () => finalizer.finish({ sawDone }), inBandEvent: (error) => ({ error: error.error }) });
 */
export async function runStreamingCall(call: StreamingCall): Promise<FinalizedResponse> {
  const { signal, credential, errors, finalizer, format } = call;
  signal.throwIfAborted();
  const watchdog = createStreamWatchdog({ staleAfterMs: call.staleStreamTimeoutMs, ...(call.onBytes ? { onBytes: call.onBytes } : {}) });
  let brokeOff: unknown;
  // A throw from the finalizer's side (a host's `onDelta`) is not the connection's fault.
  let readFailed: { error: unknown } | undefined;
  try {
    let stream: AsyncIterable<unknown>;
    try {
      stream = await call.open({ fetch: watchdog.fetch, signal: AbortSignal.any([signal, watchdog.signal]) });
    } catch (error) {
      signal.throwIfAborted();
      throw requestFailure(error, call);
    }
    try {
      for await (const chunk of stream) {
        try {
          finalizer.push(chunk);
        } catch (error) {
          readFailed = { error };
          break;
        }
        // The failure stands whatever follows; leaving the loop makes the SDK abort the request.
        if (finalizer.failure !== undefined) break;
      }
    } catch (error) {
      brokeOff = error;
    }
  } finally {
    watchdog.dispose();
  }
  signal.throwIfAborted();
  if (readFailed !== undefined) throw readFailed.error;
  if (brokeOff instanceof errors.APIError && brokeOff.status === undefined && !(brokeOff instanceof errors.APIConnectionError)) {
    finalizer.push(call.inBandEvent(brokeOff));
    brokeOff = undefined;
  } else if (brokeOff instanceof SyntaxError) {
    throw new ProviderError({ kind: "transport", retryable: true, message: `${format} stream: a chunk was not valid JSON` });
  }
  const result = call.finish();
  if (result.ok) return result.response;
  if (watchdog.stale) {
    throw new ProviderError({ kind: "timeout", retryable: true, message: `${format} stream: no data for ${call.staleStreamTimeoutMs} ms; the request was abandoned` });
  }
  const lost = brokeOff === undefined ? "" : `; the connection broke off${describeNetworkError(brokeOff, credential)}`;
  throw new ProviderError({ kind: result.kind, retryable: result.retryable, message: credential.scrub(`${result.message}${lost}`) });
}

/** The `ProviderError` of a request that failed before its stream started. */
function requestFailure(error: unknown, call: StreamingCall): ProviderError {
  const { errors, format, credential } = call;
  if (ProviderError.isInstance(error)) return error;
  if (error instanceof errors.APIConnectionTimeoutError) {
    return new ProviderError({ kind: "timeout", retryable: true, message: `${format}: timed out waiting for the response to start (requestTimeoutMs ${call.requestTimeoutMs})` });
  }
  if (error instanceof errors.APIConnectionError) return connectionFailure({ format, error: error.cause ?? error, credential });
  if (error instanceof errors.APIError && error.status !== undefined) {
    return httpStatusFailure({ format, status: error.status, body: error.error, headers: error.headers, credential });
  }
  // Anything else (an SDK refusing its options, a bug) is reported as a transport failure, which is
  // what the loop would make of it anyway — but with a scrubbed message.
  return connectionFailure({ format, error, credential, what: "request failed" });
}
