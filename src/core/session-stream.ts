/**
 * How sessions are named in the log: the one place that knows a session's stream name and what a
 * session ID may be. The runtime, replay, the read API and the CLI all use these.
 */

const sessionStreamPrefix = "session-";

/** What a session ID may be: 1–128 letters, digits, `.`, `_` or `-`. */
export const sessionIdPattern = /^[A-Za-z0-9._-]{1,128}$/;

/** Whether `id` is a valid session ID. */
export function isValidSessionId(id: string): boolean {
  return sessionIdPattern.test(id);
}

/** The stream that holds one session's events. */
export function sessionStream(sessionId: string): string {
  return `${sessionStreamPrefix}${sessionId}`;
}

/**
 * The session a stream holds, or undefined for any other stream (a seal stream, a host's own).
 * Seal streams of sessions (`seal-session-…`) do not start with the prefix, so they are not sessions.
 */
export function sessionIdOfStream(stream: string): string | undefined {
  return stream.startsWith(sessionStreamPrefix) ? stream.slice(sessionStreamPrefix.length) : undefined;
}
