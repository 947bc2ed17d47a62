/**
 * `log` with its appends made by `appendToStream`, and everything else — reads, subscriptions,
 * verify, close, the clock and session leases when the log has them — passed through. For tests
 * and crash children that watch or disturb appends (acknowledging-log.ts, postgres.test.ts).
 */
import { sessionLeasesOf } from "../../src/log/event-log.js";
import type { EventLog, SessionLeases } from "../../src/index.js";

export function withAppend(log: EventLog, appendToStream: EventLog["appendToStream"]): EventLog & Partial<SessionLeases> {
  const leases = sessionLeasesOf(log);
  return {
    ...(log.clock !== undefined ? { clock: log.clock } : {}),
    appendToStream,
    readStream: (name, options) => log.readStream(name, options),
    readAll: (options) => log.readAll(options),
    streamVersion: (name) => log.streamVersion(name),
    streamExists: (name) => log.streamExists(name),
    listStreams: () => log.listStreams(),
    subscribe: (listener, options) => log.subscribe(listener, options),
    verify: (options) => log.verify(options),
    close: () => log.close(),
    ...(leases !== undefined ? { tryLease: (name: string) => leases.tryLease(name) } : {}),
  };
}
