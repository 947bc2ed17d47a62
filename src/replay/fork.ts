import { STREAM_DOES_NOT_EXIST } from "../errors/expected-version-conflict-error.js";
import { UnknownSessionError } from "../errors/unknown-session-error.js";
import { LogCorruptedError } from "../errors/log-corrupted-error.js";
import type { EventLog, EventToAppend, RecordedEvent } from "../log/event-log.js";
import { PositionOutOfRangeError } from "../errors/position-out-of-range-error.js";
import { sessionStream } from "../core/session-stream.js";
import { leadingDecisionEventTypes } from "../core/actions.js";
import { readEvent } from "../core/read-events.js";
import { decideCommand } from "../core/session-decider.js";
import { SessionFold } from "../core/session-fold.js";

/** What {@link forkSession} made. */
export interface ForkResult {
  /** The new session's ID. */
  sessionId: string;
  /** Where the copy ends: `at`, or the position it moved to (see `movedFrom`). */
  forkedFrom: { sessionId: string; position: number };
  /** Events copied (= `forkedFrom.position`). */
  copied: number;
  /**
   * The `at` asked for, when it fell inside a provider request's decision (right after one of its
   * history decisions) and the fork was cut before that decision instead; absent otherwise.
   */
  movedFrom?: number;
}

/**
 * Fork (docs/replay.md, "Fork"): creates session `to` whose stream starts with a copy of session
 * `from`'s events 1..`at`. The copy is appended like any events, so the new stream has its own
 * hash chain (new event IDs and hashes; times with the source's spacing, the last copied event at
 * the fork's time); each copied event's `metadata.causationId` is the source
 * event's ID, and the copied `session.started` names the new session and records its origin as
 * `forkedFrom: { sessionId: from, position }`, where `position` is where the copy ends.
 *
 * The copy is one atomic append with `STREAM_DOES_NOT_EXIST`, so an existing `to` fails with
 * `ExpectedVersionConflictError` and a crash never leaves half a fork. A cut in the middle of a
 * turn leaves the fork with that unfinished turn: `openSession(to)` recovers it as it would a
 * crashed turn, and `resume()` (or an approval) continues it.
 *
 * A fork is cut only where the session stood: `at` right after a history decision of a provider
 * request (`session.history.compacted`, `session.diagnostic.recorded`, written in one append with
 * the `turn.provider.requested` after them) moves back to the position before that decision's
 * first event, and the result says so (`movedFrom`). Cut there, the fork would hold a half
 * decision: it would decide the request again, whole, after the copied half, and not replay
 * identical.
 *
 * @example
 * await forkSession(log, "s1", { at: 10, to: "s2" }); // { sessionId: "s2", forkedFrom: { sessionId: "s1", position: 10 }, copied: 10 }
 */
export async function forkSession(
  log: EventLog,
  from: string,
  options: { at: number; to: string; announce?: (events: readonly EventToAppend[]) => Promise<void> },
  pageSize = 1_000,
): Promise<ForkResult> {
  const { at, to } = options;
  if (!Number.isInteger(at) || at < 1) throw new TypeError(`fork: "at" must be a stream position ≥ 1 (got ${String(at)})`);
  if (to === from) throw new TypeError(`fork: the new session must differ from "${from}"`);
  const version = await log.streamVersion(sessionStream(from));
  if (version === 0) throw new UnknownSessionError(from);
  if (at > version) throw new PositionOutOfRangeError(from, at, version);

  const source: RecordedEvent[] = [];
  for (let next = 1; next <= at; ) {
    const to_ = Math.min(at, next + pageSize - 1);
    const page = await log.readStream(sessionStream(from), { from: next, to: to_, maxCount: to_ - next + 1 });
    if (page.length === 0) throw new LogCorruptedError(`fork: no event at position ${next} of session "${from}"`);
    for (const event of page) {
      source.push(event);
      next = event.meta.streamPosition + 1;
    }
  }
  // Back to the start of a request's decision when `at` is inside it (session.started never is).
  while (source.length > 1 && leadingDecisionEventTypes.has(source.at(-1)?.type ?? "")) source.pop();
  const position = source.length;
  // The copy keeps the spacing of the source's times, its last event recorded at the fork's time:
  // a decision that read elapsed time (the wall-clock budget) replays as it was made, and a turn
  // continued in the fork counts its time from the cut, not from when the source stood there.
  const last = Date.parse(source.at(-1)?.meta.recordedAt ?? "");
  let earlier = Number.MAX_SAFE_INTEGER;
  const copy = source.map((event): EventToAppend => {
    const before = last - Date.parse(event.meta.recordedAt);
    // Never more than the event ahead of it: a log from before times were kept in order stays in order.
    earlier = Number.isSafeInteger(before) ? Math.min(earlier, Math.max(0, before)) : Math.min(earlier, 0);
    const recordedBefore = earlier > 0 ? { recordedBeforeMs: earlier } : {};
    if (event.meta.streamPosition !== 1) return { type: event.type, data: event.data, metadata: { causationId: event.meta.eventId, schemaVersion: event.meta.schemaVersion, ...recordedBefore } };
    // The start names the new session and its origin: it is written as the current schema has it.
    const started = readEvent(event);
    if (started.type !== "session.started") throw new LogCorruptedError(`fork: session "${from}" does not begin with session.started`);
    const [start] = decideCommand({ type: "forkSession", sessionId: to, source: started.data, forkedFrom: { sessionId: from, position } }, new SessionFold());
    if (start === undefined) throw new Error("fork: the session decider returned no start");
    return { type: start.type, data: start.data, metadata: { causationId: event.meta.eventId, schemaVersion: started.meta.schemaVersion, ...recordedBefore } };
  });
  // A sealing caller announces the new stream before it exists (docs/log.md, "Always-sealed events").
  await options.announce?.(copy);
  await log.appendToStream(sessionStream(to), copy, { expectedStreamVersion: STREAM_DOES_NOT_EXIST });
  return { sessionId: to, forkedFrom: { sessionId: from, position }, copied: copy.length, ...(position !== at ? { movedFrom: at } : {}) };
}
