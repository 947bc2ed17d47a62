import { STATUS_CODES } from "node:http";
import type { ProviderFormat } from "../contracts/provider.js";
import type { ProviderCredential } from "./provider-credential.js";
import { ProviderError } from "../errors/provider-error.js";
import { nonEmptyStringField, recordField } from "./stream-finalization.js";
import { isRecord } from "../util/json-value.js";

/** The longest server-supplied reason kept in an error message: enough to say "model not found". */
const maxReasonChars = 200;

/**
 * Whether an HTTP status is worth another attempt: request timeout (408), conflict/lock (409),
 * rate limit (429) and every server error (5xx, including Anthropic's 529 "overloaded"). The
 * same statuses the official SDKs retry; everything else (400, 401, 403, 404, 422, …) will fail
 * the same way again.
 *
 * @example
 * isRetryableStatus(429) // true
 * isRetryableStatus(401) // false
 */
export function isRetryableStatus(status: number): boolean {
  return status === 408 || status === 409 || status === 429 || status >= 500;
}

/**
 * How long a response asks the client to wait, in whole milliseconds: the non-standard
 * `retry-after-ms` (which both official SDKs honour) first, then `Retry-After` as seconds or as
 * an HTTP date. Undefined when absent or unreadable; never negative.
 *
 * @example
 * parseRetryAfterMs(new Headers({ "retry-after": "2" })) // 2000
 */
export function parseRetryAfterMs(headers: Headers | undefined, now: number = Date.now()): number | undefined {
  if (headers === undefined) return undefined;
  const milliseconds = headers.get("retry-after-ms");
  if (milliseconds !== null && milliseconds.trim() !== "") {
    const value = Number(milliseconds);
    if (Number.isFinite(value)) return Math.max(0, Math.ceil(value));
  }
  const header = headers.get("retry-after");
  if (header === null || header.trim() === "") return undefined;
  const seconds = Number(header);
  if (Number.isFinite(seconds)) return Math.max(0, Math.ceil(seconds * 1000));
  const date = Date.parse(header);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}

/**
 * The `http-status` failure of a response with an error status. The message is built from the
 * status, its standard phrase and a short reason taken from the error body (`error.type`,
 * `error.message`, as OpenAI-compatible servers and Anthropic send them), scrubbed of the
 * credential: a server that echoes the request's `Authorization` header back leaks nothing.
 *
 * @example
 * httpStatusFailure({ format: "openai-chat", status: 404, body: { message: "model not found" }, headers, credential })
 * // ProviderError: openai-chat: HTTP 404 Not Found: model not found (kind http-status, not retryable)
 */
export function httpStatusFailure(options: {
  format: ProviderFormat;
  status: number;
  body: unknown;
  headers: Headers | undefined;
  credential: ProviderCredential;
}): ProviderError {
  const { format, status, credential } = options;
  const { type, message } = errorBodyReason(options.body);
  const phrase = STATUS_CODES[status];
  let text = `${format}: HTTP ${status}${phrase !== undefined ? ` ${phrase}` : ""}`;
  if (type !== undefined) text += ` (${shortReason(type, credential)})`;
  if (message !== undefined) text += `: ${shortReason(message, credential)}`;
  // The usual cause of a 401 with a local-first setup: the variable was never exported.
  if ((status === 401 || status === 403) && !credential.fromEnvironment) text += ` (${credential.envName} is not set)`;
  const retryAfterMs = parseRetryAfterMs(options.headers);
  return new ProviderError({
    kind: "http-status",
    status,
    retryable: isRetryableStatus(status),
    ...(retryAfterMs !== undefined ? { retryAfterMs } : {}),
    message: text,
  });
}

/**
 * The `transport` failure of a request that never got a response (refused, reset, DNS): the
 * network error code and the innermost cause's message, which name a host and port but never a
 * header. The cause is kept for a host's debugging; it carries no response body.
 *
 * @example
 * connectionFailure({ format: "openai-chat", error, credential }) // "openai-chat: connection failed (ECONNREFUSED): connect ECONNREFUSED 127.0.0.1:11434"
 */
export function connectionFailure(options: { format: ProviderFormat; error: unknown; credential: ProviderCredential; what?: string }): ProviderError {
  const { format, error, credential } = options;
  return new ProviderError({
    kind: "transport",
    retryable: true,
    message: `${format}: ${options.what ?? "connection failed"}${describeNetworkError(error, credential)}`,
    cause: error,
  });
}

/**
 * ` (CODE): innermost message` for a network error and its `cause` chain, or "" when it says
 * nothing useful. Scrubbed and shortened like every other reason.
 *
 * @example
 * describeNetworkError(new TypeError("terminated", { cause: Object.assign(new Error("other side closed"), { code: "UND_ERR_SOCKET" }) }), credential)
 * // " (UND_ERR_SOCKET): other side closed"
 */
export function describeNetworkError(error: unknown, credential: ProviderCredential): string {
  let code: string | undefined;
  let message: string | undefined;
  // Bounded walk: a cause chain is short, but a cyclic one must not hang the adapter.
  let current: unknown = error;
  for (let depth = 0; depth < 8 && current instanceof Error; depth += 1) {
    const candidate = (current as { code?: unknown }).code;
    if (code === undefined && typeof candidate === "string" && candidate !== "") code = candidate;
    if (current.message !== "") message = current.message;
    current = current.cause;
  }
  return `${code !== undefined ? ` (${code})` : ""}${message !== undefined ? `: ${shortReason(message, credential)}` : ""}`;
}

/**
 * `type` and `message` of an error body: `{ error: { type, message } }` or the inner object itself.
 *
 * @example
 * errorBodyReason({ error: { type: "overloaded_error", message: "Overloaded" } }); // { type: "overloaded_error", message: "Overloaded" }
 */
export function errorBodyReason(body: unknown): { type?: string; message?: string } {
  if (typeof body === "string") return body.trim() === "" ? {} : { message: body };
  if (!isRecord(body)) return {};
  const inner = recordField(body, "error") ?? body;
  const type = nonEmptyStringField(inner, "type") ?? nonEmptyStringField(inner, "code");
  // `{ "error": "model not found" }`: what some servers (Ollama's own API, proxies) send instead.
  const message = nonEmptyStringField(inner, "message") ?? nonEmptyStringField(inner, "error");
  return { ...(type !== undefined && type !== "error" ? { type } : {}), ...(message !== undefined ? { message } : {}) };
}

/**
 * One line, at most `maxReasonChars`, with the credential scrubbed (before shortening, so a key
 * cut in half by the limit is still recognized).
 *
 * @example
 * shortReason("line one\nline two", credential) // "line one line two"
 */
export function shortReason(text: string, credential: ProviderCredential): string {
  const line = credential.scrub(text).replace(/\s+/g, " ").trim();
  return line.length <= maxReasonChars ? line : `${line.slice(0, maxReasonChars - 1)}…`;
}
