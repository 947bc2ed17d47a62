import { hasCode, TurnlogError } from "./turnlog-error.js";

/** What an append expected of a stream: a version, or one of the three sentinels. */
export type ExpectedStreamVersion =
  | number
  | typeof STREAM_EXISTS
  | typeof STREAM_DOES_NOT_EXIST
  | typeof NO_CONCURRENCY_CHECK;

/** The stream must already exist (version ≥ 1). */
export const STREAM_EXISTS = "STREAM_EXISTS" as const;
/** The stream must not exist yet (version 0). */
export const STREAM_DOES_NOT_EXIST = "STREAM_DOES_NOT_EXIST" as const;
/** Append whatever the stream's version is. */
export const NO_CONCURRENCY_CHECK = "NO_CONCURRENCY_CHECK" as const;

/**
 * An append's expected stream version did not hold. Carries the **real** current version so a
 * caller can reload and retry.
 *
 * @example
 * try { await log.appendToStream("s", events, { expectedStreamVersion: 3 }); }
 * catch (error) { if (ExpectedVersionConflictError.isInstance(error)) console.log(error.current); }
 */
export class ExpectedVersionConflictError extends TurnlogError {
  readonly code = "TURNLOG_VERSION_CONFLICT";

  constructor(
    readonly stream: string,
    readonly expected: ExpectedStreamVersion,
    readonly current: number,
  ) {
    super(`stream "${stream}" is at version ${current}, but the append expected ${String(expected)}`);
  }

  static isInstance(value: unknown): value is ExpectedVersionConflictError {
    return hasCode(value, "TURNLOG_VERSION_CONFLICT");
  }
}
