/**
 * The log as a crash-test child's runtime sees it: every append goes to `log`, and each event is
 * reported through `acknowledge` once it is durable — its append resolved and was synced. An
 * append with `durable: false` (the events of read-only work, docs/design.md#4-the-log) counts only once a
 * later synced append resolved, since the log is written in order — and not at all once an append
 * failed before that: the failure may mean the server crashed and lost those asynchronous commits
 * (PostgreSQL), so a later durable append no longer vouches for them. Shared by the children of
 * the crash-recovery test, of the `kill` soak family and of the `postgres` one, which print one
 * `ack` line per event. The log's clock and session leases, when it has them, pass through.
 */
import type { AppendResult, EventLog, RecordedEvent, SessionLeases } from "../../src/index.js";
import { withAppend } from "./with-append.js";

export function acknowledgingLog(
  log: EventLog,
  acknowledge: (event: RecordedEvent) => void,
  options: { onAppend?: () => void } = {},
): EventLog & Partial<SessionLeases> {
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
  return withAppend(log, async (name, events, appendOptions) => {
    options.onAppend?.();
    let result: AppendResult;
    try {
      result = await log.appendToStream(name, events, appendOptions);
    } catch (error) {
      unsynced = [];
      throw error;
    }
    settle(result, appendOptions?.durable !== false);
    return result;
  });
}
