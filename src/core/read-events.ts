import { eventCatalogue, TurnlogEventSchema, type TurnlogEvent } from "../contracts/events.js";
import { UnexpectedEventError } from "../errors/unexpected-event-error.js";
import type { RecordedEvent, RecordedTurnlogEvent } from "../log/event-log.js";
import { isRecord } from "../util/json-value.js";
import { upcastEvent } from "./upcast.js";

/*
 * The parse layer (docs/events.md, "Reading events"): where a session's events are read from a
 * log, each is upcast to the current schema and checked once, and from then on it is a
 * `RecordedTurnlogEvent` — the fold, the projections, replay, the CLI, the view and the spans
 * narrow on `event.type` and never cast `event.data`. This file is the only place that turns a
 * `RecordedEvent` (whose data is `unknown`) into the typed union.
 */

/**
 * How thoroughly an event read is checked:
 * - `"shape"` (what every read does): its type is in the event catalogue and its data is an
 *   object. The runtime builds every event it appends from the typed union (and the test suite
 *   parses each one against its schema before appending it), and the hash chain is checked where a
 *   session is read, so a session's events are the catalogue's; what this catches is a log written
 *   by a newer turnlog, or by hand.
 * - `"schema"`: the event is also parsed against its zod schema (the recorded data is kept as it
 *   is; parsing only checks it). About as costly as folding the event (docs/events.md gives the
 *   figures), so it is for data of unknown origin (a log from elsewhere, written by hand).
 */
export type EventCheck = "shape" | "schema";

/**
 * Why a recorded event (already upcast) is not an event of the catalogue, or undefined when it
 * is. `"schema"` names the first field its schema refuses.
 */
function refusal(event: RecordedEvent, check: EventCheck): string | undefined {
  if (!Object.hasOwn(eventCatalogue, event.type)) return "its type is not in the event catalogue (a log written by a newer turnlog?)";
  if (!isRecord(event.data)) return "its data is not an object";
  if (check === "shape") return undefined;
  const parsed = TurnlogEventSchema.safeParse({ type: event.type, data: event.data });
  if (parsed.success) return undefined;
  const issue = parsed.error.issues[0];
  return `${issue?.path.join(".") || "data"}: ${issue?.message ?? "does not match its schema"}`;
}

/**
 * One recorded event of a session as the code after the log takes it: upcast to the current
 * schema version (src/core/upcast.ts), then checked (see {@link EventCheck}). An event that is not
 * one of the catalogue throws `UnexpectedEventError` with its stream position and `problem`, rather
 * than failing later, deep in a projection.
 *
 * @example
 * const event = readEvent(recorded);
 * if (event.type === "turn.tool.succeeded") console.log(event.data.output);
 */
export function readEvent(recorded: RecordedEvent, check: EventCheck = "shape"): RecordedTurnlogEvent {
  const event = upcastEvent(recorded);
  const problem = refusal(event, check);
  if (problem !== undefined) throw new UnexpectedEventError(event.meta.streamPosition, event.type, "unread", problem);
  // Checked just above: its type is the catalogue's and its data an object of that type's shape.
  return event as RecordedTurnlogEvent;
}

/**
 * A session's recorded events, each read with {@link readEvent}, in order.
 *
 * @example
 * const events = readEvents(await log.readStream(sessionStream("s1")));
 */
export function readEvents(recorded: readonly RecordedEvent[], check: EventCheck = "shape"): RecordedTurnlogEvent[] {
  return recorded.map((event) => readEvent(event, check));
}

/**
 * The events an append just recorded, when what was appended were `TurnlogEvent`s this process
 * built: the log returns them with its `meta` and nothing else changed (`AppendResult.events`),
 * so they are typed without being read again. Events read from a log go through `readEvent`.
 *
 * @example
 * const { events } = await log.appendToStream(stream, built);
 * fold.applyAll(appendedEvents(built, events));
 */
export function appendedEvents(appended: readonly TurnlogEvent[], recorded: readonly RecordedEvent[]): RecordedTurnlogEvent[] {
  if (appended.length !== recorded.length) throw new TypeError(`appendedEvents: ${appended.length} events appended, ${recorded.length} recorded`);
  // The recorded event is the appended one (same type, same data) with the log's meta added.
  return recorded as RecordedTurnlogEvent[];
}
