import type { EventOf, TurnlogEventType } from "../contracts/events.js";
import type { EventLog, RecordedEvent } from "../log/event-log.js";
import { followStream, type FollowStreamOptions } from "../log/follow-stream.js";
import { sessionStream } from "../core/session-stream.js";
import { upcastEvent } from "../core/upcast.js";

/**
 * A recorded turnlog event: the log's `meta` around one event of the catalogue. It is a union
 * discriminated on `type`, so checking `event.type` narrows `event.data` with no cast.
 *
 * @example
 * if (event.type === "turn.completed") console.log(event.data.text);
 */
export type RecordedTurnlogEvent = {
  [Type in TurnlogEventType]: RecordedEvent<Type, EventOf<Type>["data"]>;
}[TurnlogEventType];

/** Options of {@link followSession}: `after` is a stream position of the session's stream. */
export type FollowSessionOptions = Pick<FollowStreamOptions, "after" | "signal">;

/**
 * Follows one session's events: the recorded ones after stream position `after` (default 0:
 * all), then each one as it is appended, with no gap and no duplicate (see `followStream`).
 * Events written by an older schema version are upcast, as the fold sees them. It ends when
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
      // The runtime validates each event against the catalogue before it appends it, so a
      // recorded session event (upcast to the current schema) is a catalogue event.
      return result.done === true ? { done: true, value: undefined } : { done: false, value: upcastEvent(result.value) as RecordedTurnlogEvent };
    },
    async return() {
      await events.return?.();
      return { done: true, value: undefined };
    },
  };
  return typed;
}
