import type { RecordedEvent } from "../log/event-log.js";

/**
 * The schema version events are written with today (`meta.schemaVersion`, default 1). Bump it
 * only when a field is renamed or removed or its meaning changes, and add an upcaster from the
 * previous version below; adding an optional field needs no bump. See test/fixtures/logs/README.md.
 *
 * Version 0: logs that predate `session.started.provider.maxAttempts` (the runtime's default of
 * 3 provider attempts was implied) and `session.started.history` (the default budget of 100 000
 * tokens and no system text were implied; `history` is optional, so nothing needs restoring).
 */
export const currentSchemaVersion = 1;

type Upcaster = (data: unknown) => unknown;

/** Per event type, the upcaster from version `index` to `index + 1`. */
const upcasters: Partial<Record<string, Partial<Record<number, Upcaster>>>> = {
  "session.started": {
    0: (data) => {
      const started = data as { provider: { maxAttempts?: number } };
      return { ...started, provider: { ...started.provider, maxAttempts: started.provider.maxAttempts ?? 3 } };
    },
  },
};

/**
 * Brings a recorded event written by an older schema version up to the current one, one version
 * at a time. Only `data` and `meta.schemaVersion` change; the hash stays the recorded one (it
 * covers the event as written). Events already current are returned as they are.
 *
 * @example
 * for await (const event of events) fold.apply(upcastEvent(event));
 */
export function upcastEvent(recorded: RecordedEvent): RecordedEvent {
  let version = recorded.meta.schemaVersion ?? currentSchemaVersion;
  if (version >= currentSchemaVersion) return recorded;
  let data = recorded.data;
  for (; version < currentSchemaVersion; version += 1) {
    const upcaster = upcasters[recorded.type]?.[version];
    if (upcaster !== undefined) data = upcaster(data);
  }
  return { ...recorded, data, meta: { ...recorded.meta, schemaVersion: currentSchemaVersion } };
}

/**
 * Brings a session's recorded events up to the current catalogue, in order: each through
 * `upcastEvent`, and one event an older turnlog did not write put back where it belongs. Until
 * `turn.cancel.requested` existed, a host's cancel was written as a bare `turn.stopped` with
 * reason `cancelled`; today the request comes first and the stop is the decision the machine owes
 * after it (`stopCancelled`). Such a stop, not preceded by its request, gets the request right
 * before it, with the stop's own meta (no hash covers it: it is not in the log). Replay then
 * recomputes that stop like any other decision, and an old log replays as a new one does.
 *
 * @example
 * for await (const event of upcastStream(log.readStream(stream))) fold.apply(event);
 */
export async function* upcastStream(events: AsyncIterable<RecordedEvent> | Iterable<RecordedEvent>): AsyncGenerator<RecordedEvent> {
  let previous: RecordedEvent | undefined;
  for await (const recorded of events) {
    const event = upcastEvent(recorded);
    const cancelledTurn = bareCancelStop(event, previous);
    if (cancelledTurn !== undefined) yield { type: "turn.cancel.requested", data: { turnId: cancelledTurn }, meta: event.meta };
    yield event;
    previous = event;
  }
}

/** The turn of a `turn.stopped` for a host's cancel that an older turnlog wrote without its request. */
function bareCancelStop(event: RecordedEvent, previous: RecordedEvent | undefined): string | undefined {
  if (event.type !== "turn.stopped" || previous?.type === "turn.cancel.requested") return undefined;
  const data = event.data;
  if (typeof data !== "object" || data === null || !("reason" in data) || data.reason !== "cancelled" || !("turnId" in data) || typeof data.turnId !== "string") return undefined;
  return data.turnId;
}
