import type { Clock } from "./event-log.js";

/**
 * Where a stream's time stood at its last append: the `recordedAt` given (whole ms since the
 * epoch) and the clock's monotonic reading at that moment (`undefined` when the clock has none,
 * or the time was learned from storage rather than taken here).
 */
export interface TimeAnchor {
  recordedAt: number;
  monotonic: number | undefined;
}

/**
 * The `recordedAt` of a stream's next append, as an anchor for the one after it. The rule
 * (docs/log.md, "recordedAt"): the wall reading, but never less than the stream's last
 * `recordedAt`, nor less than that time plus the monotonic time elapsed since it was taken. So a
 * wall clock that steps back leaves the stream's time going on at the monotonic clock's pace until
 * the wall clock catches up, and elapsed time (the wall-clock budget) keeps counting.
 *
 * The result is a whole millisecond (what ISO 8601 in the log holds); the fraction cut off stays
 * in the anchor's monotonic reading, so many appends in a row lose no time to rounding.
 *
 * @example
 * const first = advanceTime(1_000, 50, undefined);      // { recordedAt: 1000, monotonic: 50 }
 * const next = advanceTime(400, 80, first).recordedAt;  // 1030: the wall clock stepped back
 */
export function advanceTime(wall: number, monotonic: number | undefined, anchor: TimeAnchor | undefined): TimeAnchor {
  let time = wall;
  if (anchor !== undefined) {
    time = Math.max(time, anchor.recordedAt);
    if (monotonic !== undefined && anchor.monotonic !== undefined) {
      time = Math.max(time, anchor.recordedAt + Math.max(0, monotonic - anchor.monotonic));
    }
  }
  const recordedAt = Math.floor(time);
  return { recordedAt, monotonic: monotonic === undefined ? undefined : monotonic - (time - recordedAt) };
}

/**
 * The earliest `recordedAt` a stream's next append can carry, read now: the clock's wall reading,
 * never before the stream's last `recordedAt` (`last`, ISO 8601, `null` for none). What a process
 * judges an approval deadline by before it appends (docs/policy.md#approval-deadlines).
 *
 * @example
 * earliestNextTime(log.clock ?? systemClock, state.lastRecordedAt); // 1765008060004
 */
export function earliestNextTime(clock: Clock, last: string | null): number {
  return Math.max(clock.now(), last === null ? Number.NEGATIVE_INFINITY : Date.parse(last));
}

/** The clock's monotonic reading, or `undefined` when it has none (a `{ now }`-only clock). */
export function monotonicReading(clock: Clock): number | undefined {
  return clock.monotonic?.();
}

/**
 * Elapsed milliseconds since `started` (a reading of {@link elapsedReading}): from the clock's
 * monotonic reading when it has one, so a wall clock stepping back cannot shorten a duration;
 * from its wall reading otherwise. Never negative.
 */
export function elapsedSince(clock: Clock, started: number): number {
  return Math.max(0, elapsedReading(clock) - started);
}

/** The reading durations are measured from: monotonic when the clock has it, else the wall. */
export function elapsedReading(clock: Clock): number {
  return clock.monotonic !== undefined ? clock.monotonic() : clock.now();
}

/**
 * The time anchors of every stream one log instance appends to: what makes `recordedAt`
 * non-decreasing per stream whatever the injected clock does ({@link advanceTime}). A backend
 * tells it what storage holds (`observe`) before the first append of a stream it had not seen.
 */
export class StreamTimes {
  readonly #anchors = new Map<string, TimeAnchor>();

  constructor(readonly clock: Clock) {}

  /** Whether this instance knows where `stream`'s time stands. */
  knows(stream: string): boolean {
    return this.#anchors.has(stream);
  }

  /**
   * Forgets where `stream`'s time stands, to bound memory: the backend tells it again (`observe`,
   * from storage) before the stream's next append, as after a reopen.
   */
  forget(stream: string): void {
    this.#anchors.delete(stream);
  }

  /**
   * Forgets the streams first learned beyond the `max` most recent, for a backend that tells it
   * a stream's last stored time before every append (PostgreSQL reads it under the stream's lock).
   */
  trim(max: number): void {
    for (const stream of this.#anchors.keys()) {
      if (this.#anchors.size <= max) return;
      this.#anchors.delete(stream);
    }
  }

  /** Learns that `stream`'s last event (in storage) was recorded at `recordedAt` (ms). */
  observe(stream: string, recordedAt: number): void {
    if (!Number.isFinite(recordedAt)) return;
    const anchor = this.#anchors.get(stream);
    if (anchor === undefined || recordedAt > anchor.recordedAt) this.#anchors.set(stream, { recordedAt, monotonic: monotonicReading(this.clock) });
  }

  /**
   * The `recordedAt` (ms) of the next append to `stream`. A time the appender settled
   * (`AppendOptions.recordedAt`) is kept unless it lies before the stream's last one; otherwise
   * the clock is read once.
   */
  next(stream: string, settledAt: number | undefined): number {
    const anchor = this.#anchors.get(stream);
    const next =
      settledAt !== undefined
        ? { recordedAt: Math.max(settledAt, anchor?.recordedAt ?? settledAt), monotonic: monotonicReading(this.clock) }
        : advanceTime(this.clock.now(), monotonicReading(this.clock), anchor);
    this.#anchors.set(stream, next);
    return next.recordedAt;
  }
}
