import {
  ExpectedVersionConflictError,
  NO_CONCURRENCY_CHECK,
  STREAM_DOES_NOT_EXIST,
  STREAM_EXISTS,
} from "../errors/expected-version-conflict-error.js";
import type { ExpectedStreamVersion } from "../errors/expected-version-conflict-error.js";

/**
 * Rejects an expected version that is neither a version number nor one of the three sentinels.
 * That is a caller's programming mistake, hence a `TypeError` rather than a conflict.
 */
export function assertExpectedStreamVersion(expected: unknown): asserts expected is ExpectedStreamVersion | undefined {
  if (expected === undefined || expected === STREAM_EXISTS || expected === STREAM_DOES_NOT_EXIST || expected === NO_CONCURRENCY_CHECK) {
    return;
  }
  if (typeof expected === "number" && Number.isSafeInteger(expected) && expected >= 0) return;
  throw new TypeError(
    `expectedStreamVersion must be a non-negative integer, STREAM_EXISTS, STREAM_DOES_NOT_EXIST or NO_CONCURRENCY_CHECK, got ${String(expected)}`,
  );
}

/**
 * The conflict an append would cause against a stream at `current`, or `undefined` when the
 * expectation holds. Every backend calls this one function so that all four modes mean the same.
 */
export function findVersionConflict(
  stream: string,
  expected: ExpectedStreamVersion | undefined,
  current: number,
): ExpectedVersionConflictError | undefined {
  const holds =
    expected === undefined || expected === NO_CONCURRENCY_CHECK
      ? true
      : expected === STREAM_EXISTS
        ? current >= 1
        : expected === STREAM_DOES_NOT_EXIST
          ? current === 0
          : current === expected;
  return holds ? undefined : new ExpectedVersionConflictError(stream, expected ?? NO_CONCURRENCY_CHECK, current);
}
