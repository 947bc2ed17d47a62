import { readdir, stat } from "node:fs/promises";
import path from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import type { RecordedEvent, RecordedTurnlogEvent } from "../log/event-log.js";
import { readEvents, sessionStream } from "../reader/index.js";
import { withCopyOfLogDirectory } from "./log-directory.js";

/** Options of {@link followLogDirectory}. */
export interface FollowLogDirectoryOptions {
  /** The stream position already printed: only later events are read. */
  after: number;
  /** The directory as {@link logDirectoryState} saw it just *before* the events up to `after` were read. */
  seen: string;
  /** Ends the following (SIGINT, in the CLI). */
  signal: AbortSignal;
  /** How often the directory is looked at. Default 500 ms. */
  intervalMs?: number;
  /** Told about each batch of new events, in stream order. */
  onEvents(events: RecordedTurnlogEvent[]): void;
}

/**
 * Follows a session in a LevelDB log that another process may be writing (`turnlog events
 * --follow`). The log's lock belongs to its writer, and LevelDB has no read-only mode, so the
 * follower never opens the log itself: every `intervalMs` it looks at the directory's files (names,
 * sizes, modification times — a `stat` each, no read), and only when they changed since the last
 * look does it read a copy of the log (`withCopyOfLogDirectory`), taking the events after the
 * last position it printed. A writer — `turnlog run`, a host, `approve` — is never kept from
 * opening the log. The cost: one copy of the log directory per interval in which something was
 * appended (an idle log costs a few `stat` calls per interval), and up to `intervalMs` of delay.
 *
 * Why polling and not a watch: `fs.watch` is not reliable on every file system (network mounts,
 * some containers), and a log is appended to in bursts, so a short poll is both simpler and enough.
 * The look at the files is taken *before* the read, so an append that lands during a read is seen
 * at the next look: nothing is missed, and positions keep anything from being printed twice.
 */
export async function followLogDirectory(directory: string, sessionId: string, options: FollowLogDirectoryOptions): Promise<void> {
  const intervalMs = options.intervalMs ?? 500;
  let last = options.after;
  let seen = options.seen;
  let failures = 0;
  for (;;) {
    try {
      await sleep(intervalMs, undefined, { signal: options.signal });
    } catch {
      return;
    }
    const now = await logDirectoryState(directory);
    if (now === seen) continue;
    seen = now;
    let events: RecordedEvent[];
    try {
      events = await withCopyOfLogDirectory(directory, (log) => log.readStream(sessionStream(sessionId), { from: last + 1, maxCount: Number.MAX_SAFE_INTEGER }));
      failures = 0;
    } catch (error) {
      // A copy caught mid-compaction of a busy log: look again next time, and give up only when
      // the log stays unreadable.
      failures += 1;
      if (failures >= maxFailures) throw error;
      seen = "";
      continue;
    }
    if (options.signal.aborted) return;
    const fresh = readEvents(events.filter((event) => event.meta.streamPosition > last));
    if (fresh.length === 0) continue;
    last = fresh.at(-1)?.meta.streamPosition ?? last;
    options.onEvents(fresh);
  }
}

/** Copies in a row that may fail before the follower gives up. */
const maxFailures = 20;

/**
 * The directory's files as one comparable string: name, size and modification time of each (not
 * LevelDB's LOCK and its info log, which change without an append, nor the snapshots).
 */
export async function logDirectoryState(directory: string): Promise<string> {
  // Snapshots (snapshots/, docs/design.md#5-projections) are written beside the events, never in place of one.
  const names = (await readdir(directory)).filter((name) => name !== "LOCK" && name !== "LOG" && name !== "LOG.old" && name !== "snapshots").sort();
  const entries = await Promise.all(
    names.map(async (name) => {
      // A file removed between the listing and its stat (a compaction) is a change like any other.
      const info = await stat(path.join(directory, name)).catch(() => undefined);
      return `${name}:${info?.size ?? "gone"}:${info?.mtimeMs ?? 0}`;
    }),
  );
  return entries.join("\n");
}
