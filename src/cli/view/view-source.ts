import { setTimeout as sleep } from "node:timers/promises";
import type { EventLog } from "../../log/event-log.js";
import { followStream } from "../../log/follow-stream.js";
import { createLogReader, sessionIdOfStream, sessionStream, type LogReader } from "../../reader/index.js";
import { logDirectoryState } from "../follow-log-directory.js";
import { openCopyOfLogDirectory, type LogDirectoryCopy } from "../log-directory.js";

/**
 * Where `turnlog view` reads: the log as it is now, and word when it changes. Never writes, and
 * never takes a LevelDB log's lock.
 */
export interface ViewSource {
  /** Runs `work` with a reader over the log as it is now. */
  read<T>(work: (reader: LogReader) => Promise<T>): Promise<T>;
  /** Calls `listener` after new events landed (in any session); returns the unsubscribe function. */
  onChange(listener: () => void): () => void;
  /**
   * Tells `onLength` each time the session's stream grows past `after` events, until `signal`
   * aborts.
   */
  followSession(sessionId: string, after: number, signal: AbortSignal, onLength: (length: number) => void): void;
  close(): Promise<void>;
}

/**
 * A PostgreSQL log, read directly: many processes share it, so the view opens it like any reader
 * while hosts write. Changes come from the log itself: `subscribe` (LISTEN/NOTIFY, polling as the
 * fallback) for the sessions list, `followStream` for the open session.
 *
 * @example
 * const source = postgresViewSource(log); // a log opened by withLog
 */
export function postgresViewSource(log: EventLog): ViewSource {
  const listeners = new Set<() => void>();
  let scheduled = false;
  const unsubscribe = log.subscribe((event) => {
    if (sessionIdOfStream(event.meta.stream) === undefined || scheduled) return;
    // A burst of appends is told once.
    scheduled = true;
    setTimeout(() => {
      scheduled = false;
      for (const listener of listeners) listener();
    }, 50);
  });
  return {
    read: (work) => work(createLogReader(log)),
    onChange(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    followSession(sessionId, after, signal, onLength) {
      void (async () => {
        try {
          for await (const event of followStream(log, sessionStream(sessionId), { after, signal })) onLength(event.meta.streamPosition);
        } catch {
          // The log closed under the follower (the view is stopping): nothing more to tell.
        }
      })();
    },
    async close() {
      unsubscribe();
      listeners.clear();
    },
  };
}

/** Options of {@link directoryViewSource}. */
export interface DirectoryViewSourceOptions {
  /** How often the directory is looked at. Default 500 ms. */
  intervalMs?: number;
}

/**
 * A LevelDB log directory another process may be writing, read the way `turnlog events --follow`
 * reads it (see `followLogDirectory`): the view never opens the log itself, so a writer is never
 * kept from it. It keeps one copy of the directory open and reads from it; every `intervalMs` it
 * looks at the directory's files (a `stat` each), and when they changed it takes a new copy
 * before the next read and tells its listeners. The look is taken before the copy, so an append
 * that lands during a copy is seen at the next look.
 *
 * Reads run one at a time, so a copy is never swapped under a read.
 *
 * @example
 * const source = await directoryViewSource(".turnlog");
 */
export async function directoryViewSource(directory: string, options: DirectoryViewSourceOptions = {}): Promise<ViewSource> {
  const intervalMs = options.intervalMs ?? 500;
  let copy: { taken: LogDirectoryCopy; state: string } | undefined;
  let queue: Promise<unknown> = Promise.resolve();
  let closed = false;
  const listeners = new Set<() => void>();
  const controller = new AbortController();

  const fresh = async (): Promise<LogDirectoryCopy> => {
    const state = await logDirectoryState(directory);
    if (copy !== undefined && copy.state === state) return copy.taken;
    const previous = copy;
    copy = undefined;
    await previous?.taken.close();
    const taken = await openCopyOfLogDirectory(directory);
    copy = { taken, state };
    return taken;
  };

  const read = <T>(work: (reader: LogReader) => Promise<T>): Promise<T> => {
    const result = queue.then(async () => {
      if (closed) throw new Error("the view is closing");
      return work(createLogReader((await fresh()).log));
    });
    queue = result.catch(() => undefined);
    return result;
  };

  // The directory as the first copy will see it; later looks compare with the last one.
  let seen = await logDirectoryState(directory);
  void (async () => {
    for (;;) {
      try {
        await sleep(intervalMs, undefined, { signal: controller.signal });
      } catch {
        return;
      }
      const now = await logDirectoryState(directory).catch(() => seen);
      if (now === seen) continue;
      seen = now;
      for (const listener of listeners) listener();
    }
  })();

  const lengths = new Map<string, Set<{ after: number; signal: AbortSignal; onLength(length: number): void }>>();
  const tellFollowers = async () => {
    for (const [sessionId, followers] of lengths) {
      const live = [...followers].filter((follower) => !follower.signal.aborted);
      if (live.length === 0) {
        lengths.delete(sessionId);
        continue;
      }
      const length = await read((reader) => reader.log.streamVersion(sessionStream(sessionId))).catch(() => undefined);
      if (length === undefined) continue;
      for (const follower of live) {
        if (length <= follower.after) continue;
        follower.after = length;
        follower.onLength(length);
      }
    }
  };
  listeners.add(() => void tellFollowers());

  return {
    read,
    onChange(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    followSession(sessionId, after, signal, onLength) {
      let followers = lengths.get(sessionId);
      if (followers === undefined) {
        followers = new Set();
        lengths.set(sessionId, followers);
      }
      const follower = { after, signal, onLength };
      followers.add(follower);
      signal.addEventListener("abort", () => followers.delete(follower), { once: true });
      // Events may have landed between the page's read and this call: look once now.
      void tellFollowers();
    },
    async close() {
      closed = true;
      controller.abort();
      listeners.clear();
      await queue;
      await copy?.taken.close();
      copy = undefined;
    },
  };
}
