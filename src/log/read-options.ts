import type { ReadAllOptions, ReadStreamOptions } from "./event-log.js";

/** The largest position any backend stores (16 decimal digits fit every safe integer). */
export const MAX_POSITION = Number.MAX_SAFE_INTEGER;

/**
 * A `readStream` request resolved to an inclusive window `[low, high]` of stream positions, the
 * order to walk it in and how many events to return at most.
 */
export interface StreamWindow {
  low: number;
  high: number;
  backwards: boolean;
  limit: number;
}

/**
 * Resolves `readStream` options the same way for every backend. Forwards, `from` is the low end
 * (default 1) and `to` the high end; backwards, `from` is the high end (default: the last
 * event) and `to` the low end (default 1). Returns `undefined` when the window is empty.
 */
export function resolveStreamWindow(options: ReadStreamOptions | undefined): StreamWindow | undefined {
  const from = optionalPosition(options?.from, "from");
  const to = optionalPosition(options?.to, "to");
  const maxCount = optionalPosition(options?.maxCount, "maxCount");
  const direction = options?.direction ?? "forwards";
  if (direction !== "forwards" && direction !== "backwards") {
    throw new TypeError(`direction must be "forwards" or "backwards", got ${String(direction)}`);
  }
  const backwards = direction === "backwards";
  const low = Math.max(1, (backwards ? to : from) ?? 1);
  const high = (backwards ? from : to) ?? MAX_POSITION;
  const limit = maxCount ?? Number.POSITIVE_INFINITY;
  if (low > high || limit === 0) return undefined;
  return { low, high, backwards, limit };
}

/** `readAll` options with their defaults; `limit` is infinite when not given. */
export function resolveReadAll(options: ReadAllOptions | undefined): { after: number; limit: number } {
  const after = optionalPosition(options?.after, "after") ?? 0;
  const limit = optionalPosition(options?.limit, "limit") ?? Number.POSITIVE_INFINITY;
  return { after, limit };
}

function optionalPosition(value: unknown, name: string): number | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== "number" || !Number.isSafeInteger(value) || value < 0) {
    throw new TypeError(`${name} must be a non-negative integer, got ${String(value)}`);
  }
  return value;
}
