import { ProviderError } from "../../errors/provider-error.js";
import { describeNetworkError, errorBodyReason, httpStatusFailure, shortReason } from "../http-failure.js";
import { readProviderCredential, type ProviderCredential } from "../provider-credential.js";
import type { FinalizationFailure } from "../stream-finalization.js";
import { transportFailure } from "../stream-finalization.js";
import { isRecord } from "../../util/json-value.js";

/*
 * The AI SDK's errors, read without importing the SDK (it is an optional peer, and the errors a
 * model throws may come from another copy of it): an `APICallError` is recognized by the marker
 * the SDK sets on it, `Symbol.for("vercel.ai.error.AI_APICallError")`, or by its name.
 */
const apiCallErrorMarker = Symbol.for("vercel.ai.error.AI_APICallError");

/** What turnlog reads of an AI SDK `APICallError`. */
interface ApiCallErrorFields {
  statusCode: number | undefined;
  responseHeaders: Record<string, string> | undefined;
  responseBody: string | undefined;
  isRetryable: boolean | undefined;
  message: string;
}

/**
 * The key lives in the model object, so the adapter never knows it: its messages are scrubbed of
 * anything shaped like a credential header (`Bearer …`, `x-api-key: …`), and the turn loop redacts
 * them again before they reach the log.
 */
const modelCredential: ProviderCredential = { ...readProviderCredential("AI_SDK_MODEL_KEY", "", {}), fromEnvironment: true };

/**
 * The `ProviderError` of a failed `model.doStream()` call (before or while its stream ran): an
 * `APICallError` with a status is `http-status` (retryable for 408/409/429/5xx, `retryAfterMs` from
 * its response headers), one without a status is a `transport` failure (a refused or reset
 * connection); anything else is a retryable `transport` failure. Never carries the key.
 *
 * @example
 * aiSdkRequestFailure(new APICallError({ message: "Too Many Requests", statusCode: 429, … })); // kind http-status, retryable
 */
export function aiSdkRequestFailure(error: unknown): ProviderError {
  if (ProviderError.isInstance(error)) return error;
  const apiError = apiCallError(error);
  if (apiError?.statusCode !== undefined) {
    return httpStatusFailure({
      format: "ai-sdk",
      status: apiError.statusCode,
      body: parsedBody(apiError.responseBody) ?? apiError.message,
      headers: apiError.responseHeaders !== undefined ? new Headers(apiError.responseHeaders) : undefined,
      credential: modelCredential,
    });
  }
  return new ProviderError({
    kind: "transport",
    retryable: apiError?.isRetryable ?? true,
    message: `ai-sdk: request failed${describeNetworkError(error, modelCredential)}`,
  });
}

/**
 * The failure an error the stream reported in-band (an `error` part) stands for: `transport`,
 * retryable unless it is an `APICallError` the SDK calls not retryable, or an in-band error whose
 * type names the client's mistake (`invalid_request_error`, …).
 *
 * @example
 * aiSdkErrorFailure({ type: "overloaded_error", message: "Overloaded" }, "stream error"); // transport, retryable
 */
export function aiSdkErrorFailure(error: unknown, what: string): FinalizationFailure {
  const apiError = apiCallError(error);
  const retryable = apiError !== undefined ? apiError.isRetryable !== false : !isClientErrorType(error);
  return transportFailure(`ai-sdk ${what}${describe(error)}`, retryable);
}

function apiCallError(error: unknown): ApiCallErrorFields | undefined {
  if (!(error instanceof Error)) return undefined;
  const marked = (error as unknown as Record<symbol, unknown>)[apiCallErrorMarker] === true || error.name === "AI_APICallError";
  if (!marked) return undefined;
  const fields = error as unknown as Record<string, unknown>;
  const statusCode = typeof fields.statusCode === "number" && Number.isInteger(fields.statusCode) ? fields.statusCode : undefined;
  const headers = isRecord(fields.responseHeaders) ? Object.fromEntries(Object.entries(fields.responseHeaders).filter((entry): entry is [string, string] => typeof entry[1] === "string")) : undefined;
  return {
    statusCode,
    responseHeaders: headers,
    responseBody: typeof fields.responseBody === "string" ? fields.responseBody : undefined,
    isRetryable: typeof fields.isRetryable === "boolean" ? fields.isRetryable : undefined,
    message: error.message,
  };
}

function parsedBody(body: string | undefined): unknown {
  if (body === undefined || body.trim() === "") return undefined;
  try {
    return JSON.parse(body) as unknown;
  } catch {
    // A body that is not JSON (an HTML error page) is quoted as text, shortened.
    return body;
  }
}

/** In-band error types that name the client's mistake: asking again gets the same answer. */
function isClientErrorType(error: unknown): boolean {
  const { type } = errorBodyReason(error);
  return type !== undefined && /invalid_request|authentication|permission|not_found/.test(type);
}

/** `: message` of an in-band error, one line, scrubbed. */
function describe(error: unknown): string {
  if (error instanceof Error) return describeNetworkError(error, modelCredential);
  const { type, message } = errorBodyReason(error);
  const text = [type, message].filter((part) => part !== undefined).join(": ");
  return text === "" ? "" : `: ${shortReason(text, modelCredential)}`;
}
