import { inspect } from "node:util";
import { LogUnavailableError, type LogUnavailableKind } from "../../errors/log-unavailable-error.js";

/**
 * Which failures of node-postgres and the server mean "the log cannot be reached or used as this
 * role" (docs/errors.md, `TURNLOG_LOG_UNAVAILABLE`), and how {@link LogUnavailableError} names
 * them. Everything else — a syntax error, a constraint, a cancelled statement — is not a
 * connection's failure but a bug or a change made to the tables behind turnlog's back, and
 * reaches the caller as the database's own error. So does what turnlog already types:
 * `ExpectedVersionConflictError`, `LogFormatError`, `LogStalledError`, `LogCorruptedError`.
 */

/** SQLSTATE codes (PostgreSQL, appendix A) that mean the log is unavailable, with their condition names. */
const sqlStates: Record<string, { kind: LogUnavailableKind; condition: string }> = {
  "08000": { kind: "terminated", condition: "connection_exception" },
  "08001": { kind: "unreachable", condition: "sqlclient_unable_to_establish_sqlconnection" },
  "08003": { kind: "terminated", condition: "connection_does_not_exist" },
  "08004": { kind: "unreachable", condition: "sqlserver_rejected_establishment_of_sqlconnection" },
  "08006": { kind: "terminated", condition: "connection_failure" },
  "08007": { kind: "terminated", condition: "transaction_resolution_unknown" },
  "08P01": { kind: "protocol", condition: "protocol_violation" },
  "25P03": { kind: "terminated", condition: "idle_in_transaction_session_timeout" },
  "28000": { kind: "authentication", condition: "invalid_authorization_specification" },
  "28P01": { kind: "authentication", condition: "invalid_password" },
  "3D000": { kind: "no-database", condition: "invalid_catalog_name" },
  "42501": { kind: "permission-denied", condition: "insufficient_privilege" },
  "53000": { kind: "overloaded", condition: "insufficient_resources" },
  "53100": { kind: "overloaded", condition: "disk_full" },
  "53200": { kind: "overloaded", condition: "out_of_memory" },
  "53300": { kind: "overloaded", condition: "too_many_connections" },
  "53400": { kind: "overloaded", condition: "configuration_limit_exceeded" },
  "57P01": { kind: "terminated", condition: "admin_shutdown" },
  "57P02": { kind: "terminated", condition: "crash_shutdown" },
  "57P03": { kind: "unreachable", condition: "cannot_connect_now" },
  "57P04": { kind: "terminated", condition: "database_dropped" },
  "57P05": { kind: "terminated", condition: "idle_session_timeout" },
};

/** SQLSTATE classes whose other codes are unavailable too (a server may send a code newer than the table). */
const sqlStateClasses: Record<string, LogUnavailableKind> = { "08": "terminated", "28": "authentication", "53": "overloaded" };

/** System error codes of a socket that could not connect or broke. */
const systemCodes: Record<string, LogUnavailableKind> = {
  ECONNREFUSED: "unreachable",
  ENOTFOUND: "unreachable",
  EAI_AGAIN: "unreachable",
  EHOSTUNREACH: "unreachable",
  ENETUNREACH: "unreachable",
  EADDRNOTAVAIL: "unreachable",
  // A Unix socket path with no server behind it.
  ENOENT: "unreachable",
  ETIMEDOUT: "timeout",
  ECONNRESET: "terminated",
  EPIPE: "terminated",
  ECONNABORTED: "terminated",
};

/** node-postgres's own errors, which carry no code: only their messages tell them apart. */
const driverMessages: Array<[RegExp, LogUnavailableKind]> = [
  [/^Connection terminated due to connection timeout/, "timeout"],
  [/^timeout expired/, "timeout"],
  [/^timeout exceeded when trying to connect/, "timeout"],
  [/^Query read timeout/, "timeout"],
  [/^Connection terminated/, "terminated"],
  [/^Client has encountered a connection error and is not queryable/, "terminated"],
  [/^Client was closed and is not queryable/, "terminated"],
  [/^Connection ended unexpectedly/, "terminated"],
  [/^The server does not support SSL connections/, "tls"],
  [/^There was an error establishing an SSL connection/, "tls"],
  [/^SASL: /, "authentication"],
  [/^Received unexpected \w+ message from backend/, "protocol"],
];

/** Node's TLS errors: certificate checks and the handshake. */
function isTlsCode(code: string): boolean {
  return code.startsWith("ERR_TLS_") || code.startsWith("ERR_SSL_") || /CERT|SELF_SIGNED|UNABLE_TO_(GET|VERIFY)/.test(code);
}

interface Classified {
  kind: LogUnavailableKind;
  sqlState?: string;
  condition?: string;
  errno?: string;
  /** The error that said it (the cause itself, or one it wraps). */
  source: Error | undefined;
}

/**
 * What `error` says of the connection, or undefined when it is not a failure of the connection,
 * the login or the role's privileges. Follows `cause` (node-postgres wraps a connection timeout)
 * and looks into an `AggregateError` of refusals (a host name with several addresses).
 */
function classify(error: unknown, depth = 0): Classified | undefined {
  if (typeof error !== "object" || error === null || depth > 6) return undefined;
  const { code, message, errors, cause } = error as { code?: unknown; message?: unknown; errors?: unknown; cause?: unknown };
  const source = error instanceof Error ? error : undefined;
  if (typeof code === "string") {
    const known = sqlStates[code];
    if (known !== undefined) return { kind: known.kind, sqlState: code, condition: known.condition, source };
    const byClass = /^[0-9A-Z]{5}$/.test(code) ? sqlStateClasses[code.slice(0, 2)] : undefined;
    if (byClass !== undefined) return { kind: byClass, sqlState: code, source };
    const system = systemCodes[code];
    if (system !== undefined) return { kind: system, errno: code, source };
    if (isTlsCode(code)) return { kind: "tls", errno: code, source };
  }
  const text = typeof message === "string" ? message : "";
  for (const [pattern, kind] of driverMessages) if (pattern.test(text)) return { kind, source };
  if (Array.isArray(errors) && errors.length > 0) {
    const inner = errors.map((each: unknown) => classify(each, depth + 1));
    if (inner.every((each) => each !== undefined)) return inner[0];
  }
  return cause === undefined ? undefined : classify(cause, depth + 1);
}

/** Where a log is and which passwords must never be shown, for {@link logUnavailable}. */
export interface UnavailableContext {
  /** The URL without its password, and the schema. */
  readonly location: string;
  /** Every password the connection may carry (the URL's, the pool's, `PGPASSWORD`). */
  readonly passwords: readonly string[];
}

/**
 * `error` as a {@link LogUnavailableError} when it is a failure of the connection, the login or a
 * privilege; undefined otherwise (the caller rethrows it as it is).
 *
 * @example
 * catch (error) { throw logUnavailable(error, context, "open") ?? error; }
 */
export function logUnavailable(error: unknown, context: UnavailableContext, operation: string): LogUnavailableError | undefined {
  if (LogUnavailableError.isInstance(error)) return error;
  const found = classify(error);
  if (found === undefined) return undefined;
  const raw = found.source === undefined ? String(error) : found.source.message || (found.source as { code?: string }).code || found.source.name;
  return new LogUnavailableError(context.location, operation, found.kind, scrub(raw.replace(/\s*\n\s*/g, " "), context.passwords), {
    sqlState: found.sqlState,
    condition: found.condition,
    errno: found.errno,
    cause: safeCause(error, context.passwords),
  });
}

/** `text` with every password replaced by `***`. */
function scrub(text: string, passwords: readonly string[]): string {
  let scrubbed = text;
  for (const password of passwords) if (password !== "") scrubbed = scrubbed.split(password).join("***");
  return scrubbed;
}

/**
 * The original error, kept as the cause — unless its rendering (message, stack, fields, causes)
 * holds a password, which then must not travel on: a plain error with the scrubbed rendering
 * stands in for it. node-postgres keeps passwords out of its errors; this does not rely on it.
 */
function safeCause(error: unknown, passwords: readonly string[]): unknown {
  const rendering = inspect(error, { depth: 8 });
  if (!passwords.some((password) => password !== "" && rendering.includes(password))) return error;
  return new Error(`(the driver's error, with a password taken out) ${scrub(rendering, passwords)}`);
}
