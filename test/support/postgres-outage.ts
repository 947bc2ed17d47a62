/**
 * Whether an error means "the PostgreSQL server is unreachable for now" (stopped, restarting, or
 * the connection dropped), as node-postgres and the server report it. The PostgreSQL soak's hosts
 * retry only these; any other error is a failure of the case.
 */

/** SQLSTATE classes and codes of a server going away or not yet back (PostgreSQL appendix A). */
const outageStates = new Set(["57P01", "57P02", "57P03", "57P05"]);
/** Socket errors of a connection refused or cut. */
const socketCodes = new Set(["ECONNREFUSED", "ECONNRESET", "EPIPE", "ETIMEDOUT", "ENOENT"]);
/** node-postgres's own messages for a connection that ended under it (they carry no code). */
const clientMessages = [
  /^Connection terminated/,
  /^Client has encountered a connection error and is not queryable/,
  /^Client was closed and is not queryable/,
  /^Connection ended unexpectedly/,
];

/** A one-line description of the outage `error` is, or undefined when it is something else. */
export function postgresOutageOf(error: unknown): string | undefined {
  for (let current: unknown = error, depth = 0; current !== undefined && current !== null && depth < 8; depth += 1) {
    if (typeof current !== "object") return undefined;
    const { code, message, errors } = current as { code?: unknown; message?: unknown; errors?: unknown };
    const text = typeof message === "string" ? message : "";
    if (typeof code === "string" && (outageStates.has(code) || code.startsWith("08") || socketCodes.has(code))) return `${code} ${text}`.trim();
    if (clientMessages.some((pattern) => pattern.test(text))) return text;
    // A refused connection to a host with several addresses is an AggregateError of refusals.
    if (Array.isArray(errors) && errors.length > 0 && errors.every((inner) => postgresOutageOf(inner) !== undefined)) return postgresOutageOf(errors[0]);
    current = (current as { cause?: unknown }).cause;
  }
  return undefined;
}
