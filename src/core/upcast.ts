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
