import { parseEvent } from "../contracts/events.js";
import { STREAM_DOES_NOT_EXIST } from "../errors/expected-version-conflict-error.js";
import { UnknownSessionError } from "../errors/session-state-error.js";
import { LogCorruptedError } from "../errors/log-corrupted-error.js";
import type { EventLog, EventToAppend } from "../log/event-log.js";
import { PositionOutOfRangeError } from "./snapshot-cache.js";
import { sessionStream } from "../core/session-stream.js";

/** What {@link forkSession} made. */
export interface ForkResult {
  /** The new session's ID. */
  sessionId: string;
  forkedFrom: { sessionId: string; position: number };
  /** Events copied (= `at`). */
  copied: number;
}

/**
 * Fork (DESIGN.md §5): creates session `to` whose stream starts with a copy of session `from`'s
 * events 1..`at`. The copy is appended like any events, so the new stream has its own hash chain
 * (new event IDs, times and hashes); each copied event's `metadata.causationId` is the source
 * event's ID, and the copied `session.started` names the new session and records its origin as
 * `forkedFrom: { sessionId: from, position: at }`.
 *
 * The copy is one atomic append with `STREAM_DOES_NOT_EXIST`, so an existing `to` fails with
 * `ExpectedVersionConflictError` and a crash never leaves half a fork. A cut in the middle of a
 * turn leaves the fork with that unfinished turn: `openSession(to)` recovers it as it would a
 * crashed turn, and `resume()` (or an approval) continues it.
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

  const copy: EventToAppend[] = [];
  for (let next = 1; next <= at; ) {
    const to_ = Math.min(at, next + pageSize - 1);
    const page = await log.readStream(sessionStream(from), { from: next, to: to_, maxCount: to_ - next + 1 });
    if (page.length === 0) throw new LogCorruptedError(`fork: no event at position ${next} of session "${from}"`);
    for (const event of page) {
      let data = event.data;
      if (event.meta.streamPosition === 1) {
        if (event.type !== "session.started") throw new LogCorruptedError(`fork: session "${from}" does not begin with session.started`);
        const started = parseEvent({
          type: "session.started",
          data: { ...(event.data as Record<string, unknown>), sessionId: to, forkedFrom: { sessionId: from, position: at } },
        });
        data = started.data;
      }
      copy.push({
        type: event.type,
        data,
        metadata: { causationId: event.meta.eventId, schemaVersion: event.meta.schemaVersion },
      });
      next = event.meta.streamPosition + 1;
    }
  }
  // A sealing caller announces the new stream before it exists (docs/log.md, "Always-sealed events").
  await options.announce?.(copy);
  await log.appendToStream(sessionStream(to), copy, { expectedStreamVersion: STREAM_DOES_NOT_EXIST });
  return { sessionId: to, forkedFrom: { sessionId: from, position: at }, copied: copy.length };
}
