/**
 * The log as a crash-test child's runtime sees it: every append goes to `log`, and each event is
 * reported through `acknowledge` once it is durable — its append resolved and was synced. An
 * append with `durable: false` (the events of read-only work, DESIGN.md §3) counts only once a
 * later synced append resolved, since the log is written in order. Shared by the children of the
 * crash-recovery test and of the `kill` soak family, which print one `ack` line per event.
 */
import type { AppendResult, EventLog, RecordedEvent } from "../../src/index.js";

export function acknowledgingLog(log: EventLog, acknowledge: (event: RecordedEvent) => void): EventLog {
  /** Events whose append resolved without a sync: durable once a later synced append resolves. */
  let unsynced: RecordedEvent[] = [];
  const settle = (result: AppendResult, durable: boolean) => {
    if (!durable) {
      unsynced.push(...result.events);
      return;
    }
    const covered = unsynced.filter((event) => event.meta.globalPosition <= result.lastGlobalPosition);
    unsynced = unsynced.filter((event) => event.meta.globalPosition > result.lastGlobalPosition);
    const events = [...covered, ...result.events].sort((a, b) => a.meta.globalPosition - b.meta.globalPosition);
    for (const event of events) acknowledge(event);
  };
  return {
    async appendToStream(name, events, options) {
      const result = await log.appendToStream(name, events, options);
      settle(result, options?.durable !== false);
      return result;
    },
    readStream: (name, options) => log.readStream(name, options),
    readAll: (options) => log.readAll(options),
    streamVersion: (name) => log.streamVersion(name),
    streamExists: (name) => log.streamExists(name),
    listStreams: () => log.listStreams(),
    subscribe: (listener, options) => log.subscribe(listener, options),
    verify: (options) => log.verify(options),
    close: () => log.close(),
  };
}
