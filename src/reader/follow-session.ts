import type { EventLog, RecordedTurnlogEvent } from "../log/event-log.js";
import { followStream, type FollowStreamOptions } from "../log/follow-stream.js";
import { readEvent } from "../core/read-events.js";
import { sessionStream } from "../core/session-stream.js";

/** Options of {@link followSession}: `after` is a stream position of the session's stream. */
export type FollowSessionOptions = Pick<FollowStreamOptions, "after" | "signal">;

/**
 * Follows one session's events: the recorded ones after stream position `after` (default 0:
 * all), then each one as it is appended, with no gap and no duplicate (see `followStream`).
 * Each is read as the fold reads it (`readEvent`: upcast, checked; an event that is not one of the
 * catalogue throws `UnexpectedEventError`). It ends when
 * `signal` aborts or the iteration is broken off, and then unsubscribes.
 *
 * @example
 * for await (const event of followSession(log, "s1", { after: 12, signal })) {
 *   if (event.type === "turn.tool.succeeded") show(event.data.callId, event.data.output);
 * }
 */
export function followSession(log: EventLog, sessionId: string, options: FollowSessionOptions = {}): AsyncIterableIterator<RecordedTurnlogEvent> {
  const events = followStream(log, sessionStream(sessionId), options);
  // A plain iterator rather than an async generator: a generator's `return()` waits behind a
  // pending `next()`, so a host could not stop a follower that waits for the next append.
  const typed: AsyncIterableIterator<RecordedTurnlogEvent> = {
    [Symbol.asyncIterator]: () => typed,
    async next() {
      const result = await events.next();
      return result.done === true ? { done: true, value: undefined } : { done: false, value: readEvent(result.value) };
    },
    async return() {
      await events.return?.();
      return { done: true, value: undefined };
    },
  };
  return typed;
}
