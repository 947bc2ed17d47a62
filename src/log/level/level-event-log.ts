import { mkdir, readFile } from "node:fs/promises";
import path from "node:path";
import type { Level } from "level";
import type { ExpectedStreamVersion } from "../../errors/expected-version-conflict-error.js";
import { LogClosedError } from "../../errors/log-closed-error.js";
import { LogCorruptedError } from "../../errors/log-corrupted-error.js";
import { LogFormatError } from "../../errors/log-format-error.js";
import { LogLockedError } from "../../errors/log-locked-error.js";
import { LogWriteError } from "../../errors/log-write-error.js";
import type {
  AppendOptions,
  AppendResult,
  Clock,
  EventLog,
  EventToAppend,
  IdSource,
  ReadAllOptions,
  ReadStreamOptions,
  RecordedEvent,
  SubscribeOptions,
  VerifyReport,
} from "../event-log.js";
import { assertRecordedAt, assertStreamName, prepareEvents, randomIds, recordEvents, systemClock } from "../event-recording.js";
import type { PreparedEvent, RecordedAppend } from "../event-recording.js";
import { assertExpectedStreamVersion, findVersionConflict } from "../expected-version.js";
import { ChainVerifier, EMPTY_STREAM_HEAD, verifyStreams } from "../hash-chain.js";
import type { ChainVerification, StreamHead } from "../hash-chain.js";
import { StreamTimes } from "../recorded-time.js";
import {
  ABSENT_KEY,
  FORMAT_KEY,
  HEAD_PREFIX,
  LAST_GLOBAL_KEY,
  LAYOUT_FORMAT,
  globalKey,
  positionOfGlobalKey,
  positionOfIndexKey,
  prefixRange,
  streamHeadKey,
  streamIndexKey,
  streamIndexPrefix,
} from "./level-keys.js";
import { describeDamage, fileNamedIn, findDamagedFile } from "./level-files.js";
import { resolveReadAll, resolveStreamWindow } from "../read-options.js";
import { SubscriberRegistry } from "../subscriber-registry.js";
import type { ListenerErrorHandler } from "../subscriber-registry.js";
import { describeThrown } from "../../util/json-value.js";
import { OwnerChannel, type OwnerHandler } from "./owner-channel.js";
import { FileSnapshotStore } from "../snapshot-files.js";

/** The directory, inside a LevelDB log's, that holds its snapshots. */
export const snapshotDirectoryName = "snapshots";

/** Options of {@link LevelEventLog.open}. */
export interface LevelEventLogOptions {
  /**
   * `sync` (default): an append resolves only once its batch is fsynced. `relaxed`: never fsync;
   * for tests and throw-away runs, where a machine crash may lose the last appends.
   */
  durability?: "sync" | "relaxed";
  /** Where `recordedAt` comes from. Default: the system clock. */
  clock?: Clock;
  /** Where event IDs come from. Default: `crypto.randomUUID`. */
  ids?: IdSource;
  /** Told about a subscriber that threw. Default: ignore it (the append has committed anyway). */
  onListenerError?: ListenerErrorHandler;
  /**
   * Open a directory whose files are damaged anyway, letting LevelDB drop what it cannot read.
   * Default false: `open` first checks the directory's files (docs/log.md, "Damaged files") and
   * throws `LogCorruptedError` naming the damaged one, before LevelDB's recovery rewrites
   * anything. Only for a copy of the directory: `turnlog verify` and `turnlog repair` use it.
   */
  salvage?: boolean;
  /**
   * Serve the log's owner channel while the log is open (docs/log.md, "The owner channel"): another
   * local process of the same user hands this one a person's answer to a held call, and the runtime
   * or reader over this log records it. Default true; `false` serves none and writes no owner file,
   * so answers from other processes fail until the log is closed. Never served with `salvage`.
   */
  answers?: boolean;
}

type Database = Level<string, string>;

interface PutOperation {
  type: "put";
  key: string;
  value: string;
}

/** What one group of appends writes and, once written, tells its callers. */
interface GroupPlan {
  operations: PutOperation[];
  heads: Map<string, StreamHead>;
  committed: RecordedEvent[];
  /** Outcomes told before the batch is written: non-durable appends (written behind). */
  early: Array<() => void>;
  /** Outcomes told once it is written (or, for a failed batch written behind, rejected). */
  late: Array<{ resolve(): void; reject(error: unknown): void }>;
  lastGlobalPosition: number;
  wantsSync: boolean;
}

interface AppendRequest {
  stream: string;
  prepared: PreparedEvent[];
  expected: ExpectedStreamVersion | undefined;
  durable: boolean;
  recordedAt: number | undefined;
  resolve(result: AppendResult): void;
  reject(error: unknown): void;
}

/**
 * When the batch waiting for the one in flight holds this many operations, the writer waits for
 * it before it acknowledges more appends written behind: a loop that appends faster than the disk
 * writes is held back instead of queueing without bound.
 */
const MAX_QUEUED_OPERATIONS = 4096;
/** At most this many appends share one batch, so one batch stays a bounded amount of work. */
const MAX_GROUP_SIZE = 256;
/** Events read per LevelDB iterator call by `readAll` and `verify`. */
const PAGE_SIZE = 1_000;
/**
 * The bytes one iterator call may gather before it returns early. classic-level's default, 16 KiB,
 * ends a page after ~25 events of a real session (~600 bytes each): 40 round trips to the thread
 * pool per page, half the CPU of a streamed read. 2 MiB fits a page of events up to 2 KiB each,
 * and bounds what one page holds for larger ones.
 */
const PAGE_BYTES = 2 * 2 ** 20;

/**
 * The `level` package (classic-level's native LevelDB binding), loaded by the first `open` rather
 * than when turnlog is imported: a host on PostgreSQL, or one that only reads a log through
 * another backend, never loads it (docs/embedding.md, "How the backends load").
 */
interface LevelPackage {
  Level: typeof Level;
  /** `Level.prototype.batch` as `level` ships it, taken when the package is loaded (see `writeBatch`). */
  shippedBatch: Level["batch"];
}

let levelPackage: Promise<LevelPackage> | undefined;

function loadLevel(): Promise<LevelPackage> {
  levelPackage ??= import("level").then(({ Level }) => ({ Level, shippedBatch: Level.prototype.batch }));
  return levelPackage;
}

/**
 * Writes a batch of utf8 puts. abstract-level's public `batch()` spends about as much CPU per
 * operation as LevelDB itself — it clones, validates and re-encodes each one, runs prewrite hooks
 * and emits a `write` event — measured 712 → 343 µs of CPU for a batch of 40 puts of 600 bytes
 * when the same operations go to the implementation's `_batch` (abstract-level's documented
 * private API, which classic-level implements). Our keys and values are utf8 strings already, and
 * we write only while the database is open; so when no prewrite hook is attached and `batch` is
 * the one `level` ships (not wrapped by a plugin or a test's spy), the operations go to `_batch`
 * as they are. Otherwise, through the public `batch()`.
 */
function writeBatch(db: Database, operations: PutOperation[], sync: boolean, { Level, shippedBatch }: LevelPackage): Promise<void> {
  const direct = (db as unknown as { _batch?: (operations: PutOperation[], options: { sync: boolean }) => Promise<void> })._batch;
  if (typeof direct === "function" && db.status === "open" && (db.hooks.prewrite as unknown as { noop?: boolean }).noop === true && db.batch === shippedBatch && Level.prototype.batch === shippedBatch) {
    return direct.call(db, operations, { sync });
  }
  return db.batch(operations, { sync });
}

/** The next batch to write: the operations of the groups planned while one is being written. */
interface QueuedBatch {
  operations: PutOperation[];
  /** fsynced: a group of it has a durable append (on a `sync` log). */
  sync: boolean;
  /** It holds acknowledged (written-behind) appends: if it fails, the log is broken. */
  behind: boolean;
  /** The events of its groups, in global order: told to the subscribers once it is written. */
  committed: RecordedEvent[];
  done: Promise<void>;
  resolve(): void;
  reject(error: unknown): void;
}

/**
 * The most stream heads a LevelEventLog's writer keeps in memory (one per session it appended
 * to): beyond it, the heads of the streams least recently appended to are read back from storage
 * when next needed.
 */
export const maxCachedHeads = 4096;

/** Directories this process holds open, so a second open can say who holds the lock. */
const openInThisProcess = new Set<string>();

/**
 * The default, embedded {@link EventLog}: one LevelDB directory owned by one process.
 *
 * Every append is one atomic LevelDB batch. Appends are queued and committed in call order by a
 * single writer, which makes version checks and positions race-free; appends that arrive while
 * a batch is being written are group-committed into the next batch (one fsync for all of them),
 * and each still gets its own result or conflict.
 *
 * @example
 * const log = await LevelEventLog.open(".turnlog", { durability: "sync" });
 * await log.appendToStream("s1", [{ type: "session.opened", data: {} }], { expectedStreamVersion: STREAM_DOES_NOT_EXIST });
 * await log.close();
 */
export class LevelEventLog implements EventLog {
  /**
   * Heads of the streams the writer has looked at, least recently appended to first. Only the
   * writer fills it, because only the writer knows that no batch is in flight; a reader filling it
   * could cache a stale head. Bounded (`maxCachedHeads`): a process that appends to ever more
   * sessions does not keep one head per session for good.
   */
  private readonly heads = new Map<string, StreamHead>();
  /**
   * Each stream's time (recorded-time.ts), told the last stored `recordedAt` of a stream when
   * its head is first read: one process owns the directory, so nothing else appends meanwhile.
   */
  private readonly times: StreamTimes;
  private readonly subscribers: SubscriberRegistry;
  private pending: AppendRequest[] = [];
  private flushing: Promise<void> | undefined;
  private closed = false;
  private closing: Promise<void> | undefined;
  /** A `sync` log has written batches (of `durable: false` appends) that no fsync covers yet. */
  private unsynced = false;
  /** A batch is being written (see `queueWrite`: one at a time, in the order they were planned). */
  private writing = false;
  /** The groups planned while a batch is being written, merged into the next batch. */
  private queued: QueuedBatch | undefined;
  /** Settles when the last batch queued so far is written (or failed): every one before it is then. */
  private lastWrite: Promise<void> = Promise.resolve();
  /** Set when a batch written behind failed: acknowledged events are missing, so nothing goes on. */
  private broken: { error: unknown } | undefined;
  /** Set when the disk refused a write (a {@link LogWriteError}): reads go on, appends wait for a reopen. */
  private refusing: { error: unknown } | undefined;
  /** The owner channel this process serves while it holds the log (`answers`). */
  private channel: OwnerChannel | undefined;
  /** Global positions a repair dropped, as sorted inclusive ranges (`m!absent`); none on a log never repaired. */
  private absent: ReadonlyArray<readonly [number, number]> = [];
  /**
   * Projection snapshots, as files in `snapshots/` inside the log's directory (FileSnapshotStore;
   * docs/design.md#5-projections says why not in the LevelDB): LevelDB leaves a directory it did not make alone.
   */
  readonly snapshots: FileSnapshotStore;

  private constructor(
    private readonly db: Database,
    /** The absolute path of the log directory. */
    readonly directory: string,
    private lastGlobalPosition: number,
    private readonly durability: "sync" | "relaxed",
    /** Where `recordedAt` comes from. */
    readonly clock: Clock,
    private readonly ids: IdSource,
    onListenerError: ListenerErrorHandler | undefined,
    /** The loaded `level` package, for `writeBatch`. */
    private readonly level: LevelPackage,
  ) {
    this.subscribers = new SubscriberRegistry(onListenerError);
    this.times = new StreamTimes(clock);
    this.snapshots = new FileSnapshotStore(path.join(directory, snapshotDirectoryName));
  }

  /**
   * Opens (creating if missing) the log in `directory`. Throws {@link LogLockedError} when the
   * directory is already open, in another process or through another handle in this one.
   *
   * @example
   * const log = await LevelEventLog.open(".turnlog");
   */
  static async open(directory: string, options: LevelEventLogOptions = {}): Promise<LevelEventLog> {
    if (typeof directory !== "string" || directory.length === 0) {
      throw new TypeError("LevelEventLog.open takes a directory path");
    }
    const durability = options.durability ?? "sync";
    if (durability !== "sync" && durability !== "relaxed") {
      throw new TypeError(`durability must be "sync" or "relaxed", got ${String(durability)}`);
    }
    const location = path.resolve(directory);
    await mkdir(location, { recursive: true });
    if (options.salvage !== true) {
      // Before LevelDB opens it: its recovery drops unreadable records of a write-ahead file
      // silently and then deletes that file, so afterwards nothing could say what was lost.
      const damage = await findDamagedFile(location);
      if (damage !== undefined) throw damagedFileError(location, damage.file, describeDamage(damage));
    }
    // Uncompressed tables: the files stay greppable, so "no secret is on disk" can be checked with
    // grep (a Snappy-compressed table can hide a string from it), at a small cost in disk space.
    const level = await loadLevel();
    const db: Database = new level.Level<string, string>(location, { keyEncoding: "utf8", valueEncoding: "utf8", compression: false });
    try {
      await db.open();
    } catch (error) {
      if (isLockedError(error)) throw new LogLockedError(location, { cause: error, inThisProcess: openInThisProcess.has(location) });
      throw await explainStorageError(location, error);
    }
    openInThisProcess.add(location);
    try {
      const format = await db.get(FORMAT_KEY);
      if (format === undefined) {
        await db.put(FORMAT_KEY, LAYOUT_FORMAT, { sync: durability === "sync" });
      } else if (format !== LAYOUT_FORMAT) {
        throw new LogFormatError(location, format, LAYOUT_FORMAT);
      }
      const lastGlobalPosition = parsePosition(await db.get(LAST_GLOBAL_KEY)) ?? 0;
      const absent = parseAbsent(await db.get(ABSENT_KEY), location);
      const log = new LevelEventLog(
        db,
        location,
        lastGlobalPosition,
        durability,
        options.clock ?? systemClock,
        options.ids ?? randomIds,
        options.onListenerError,
        level,
      );
      log.absent = absent;
      if (options.answers !== false && options.salvage !== true) {
        try {
          log.channel = await OwnerChannel.start(location);
        } catch {
          // A channel that cannot be set up (no writable temporary directory) leaves the log usable:
          // answers from other processes then meet the lock, as with `answers: false`.
        }
      }
      return log;
    } catch (error) {
      await db.close();
      openInThisProcess.delete(location);
      throw await explainStorageError(location, error);
    }
  }

  /**
   * Queues the append for the single writer. A durable append resolves once its batch is written
   * (and fsynced, on a `sync` log); a `durable: false` one once its events have their positions,
   * while its batch is written behind (see `commitGroup`: a crash of the process may lose it, as a
   * crash of the machine may on a `relaxed` log). Either way subscribers and readers are handed
   * its events only once its batch is written. Rejects with `ExpectedVersionConflictError` carrying
   * the stream's real version, or with the storage error if the batch failed (then nothing of
   * it was written). The returned events are frozen: subscribers are handed the same objects.
   */
  async appendToStream(stream: string, events: readonly EventToAppend[], options?: AppendOptions): Promise<AppendResult> {
    this.assertOpen();
    assertStreamName(stream);
    const expected = options?.expectedStreamVersion;
    assertExpectedStreamVersion(expected);
    const durable = options?.durable ?? true;
    if (typeof durable !== "boolean") throw new TypeError("durable must be a boolean");
    if (this.broken !== undefined) throw this.broken.error;
    if (this.refusing !== undefined) throw this.refusing.error;
    const recordedAt = options?.recordedAt;
    assertRecordedAt(recordedAt);
    const prepared = prepareEvents(events);
    return new Promise<AppendResult>((resolve, reject) => {
      this.pending.push({ stream, prepared, expected, durable, recordedAt, resolve, reject });
      this.scheduleFlush();
    });
  }

  async readStream(stream: string, options?: ReadStreamOptions): Promise<RecordedEvent[]> {
    this.assertOpen();
    assertStreamName(stream);
    const window = resolveStreamWindow(options);
    if (window === undefined) return [];
    await this.written();
    return this.explained(async () => {
      // The head is read before the index: an append landing in between only adds to what the
      // index holds, so the head is never ahead of it on an intact log.
      const version = parseHead(await this.db.get(streamHeadKey(stream)), stream).version;
      const globalPositions = await this.db
        .values({
          gte: streamIndexKey(stream, window.low),
          lte: streamIndexKey(stream, window.high),
          reverse: window.backwards,
          limit: Number.isFinite(window.limit) ? window.limit : -1,
          // A page of the index in one call, not one per 16 KiB (about 400 positions).
          highWaterMarkBytes: PAGE_BYTES,
        })
        .all();
      const keys = globalPositions.map((value) => globalKey(parsePosition(value) ?? 0));
      const raws = keys.length === 0 ? [] : await this.getStored(keys);
      const events = raws.map((raw, index) => parseStoredEvent(raw, keys[index] ?? ""));
      assertWholeWindow(stream, window, version, events);
      return events;
    });
  }

  /**
   * The stored values under `keys` (event keys in ascending or descending order, as a stream's
   * index lists them), `undefined` where none is stored. A stream's events usually lie side by side
   * in the global order (one session's appends, or one stream alone in the log): then one range
   * scan reads them in a few calls, where a lookup per key costs a seek each. When the keys are
   * consecutive positions and every one is stored, the scan reads values only
   * (`readConsecutive`): the keys are known already, and handing them over too and matching
   * values to them in a Map cost a tenth of reading a stream in pages (median 5.2 → 4.5 CPU-seconds
   * for a million events in pages of 1 000).
   */
  private async getStored(keys: readonly string[]): Promise<Array<string | undefined>> {
    const first = keys[0];
    const last = keys[keys.length - 1];
    if (first === undefined || last === undefined) return [];
    const [low, high] = first <= last ? [first, last] : [last, first];
    if (positionOfGlobalKey(high) - positionOfGlobalKey(low) + 1 !== keys.length) return this.db.getMany([...keys]);
    const step = first <= last ? 1 : -1;
    const firstPosition = positionOfGlobalKey(first);
    if (keys.every((key, index) => positionOfGlobalKey(key) === firstPosition + step * index)) {
      const values = await this.readConsecutive(low, high, keys.length);
      if (values !== undefined) return step === 1 ? values : values.reverse();
    }
    const iterator = this.db.iterator({ gte: low, lte: high, highWaterMarkBytes: PAGE_BYTES });
    const stored = new Map<string, string>();
    try {
      for (;;) {
        const page = await iterator.nextv(keys.length - stored.size);
        if (page.length === 0) break;
        for (const [key, value] of page) stored.set(key, value);
      }
    } finally {
      await iterator.close();
    }
    // A damaged index can list keys out of order or outside the range, or name a key no event is
    // stored under: those are looked up.
    const outside = keys.filter((key) => !stored.has(key));
    const found = outside.length === 0 ? [] : await this.db.getMany(outside);
    outside.forEach((key, index) => {
      const value = found[index];
      if (value !== undefined) stored.set(key, value);
    });
    return keys.map((key) => stored.get(key));
  }

  /**
   * The values stored from `low` to `high` (event keys of `count` consecutive positions), in
   * ascending order, when an event is stored at every one of those positions; undefined when one
   * is missing (then which one can only be told with the keys). Values only: each belongs to the
   * position it is counted at.
   */
  private async readConsecutive(low: string, high: string, count: number): Promise<string[] | undefined> {
    const values = await this.db.values({ gte: low, lte: high, limit: count, highWaterMarkBytes: PAGE_BYTES }).all();
    return values.length === count ? values : undefined;
  }

  readAll(options?: ReadAllOptions): AsyncIterable<RecordedEvent> {
    const { after, limit } = resolveReadAll(options);
    return this.iterateAll(after, limit);
  }

  async streamVersion(stream: string): Promise<number> {
    this.assertOpen();
    assertStreamName(stream);
    // The writer's head may count events of a batch still being written: no reader is told of
    // a position before its event is written.
    await this.written();
    const cached = this.heads.get(stream);
    if (cached !== undefined) return cached.version;
    return parseHead(await this.db.get(streamHeadKey(stream)), stream).version;
  }

  async streamExists(stream: string): Promise<boolean> {
    return (await this.streamVersion(stream)) > 0;
  }

  async listStreams(): Promise<string[]> {
    this.assertOpen();
    await this.written();
    const keys = await this.db.keys(prefixRange(HEAD_PREFIX)).all();
    return keys.map((key) => decodeURIComponent(key.slice(HEAD_PREFIX.length))).sort();
  }

  subscribe(listener: (event: RecordedEvent) => void, options?: SubscribeOptions): () => void {
    this.assertOpen();
    return this.subscribers.add(listener, options);
  }

  /**
   * Walks each stream's index and reads the raw stored values, so that an event whose JSON was
   * corrupted is reported at its stream position rather than crashing the walk.
   */
  async verify(options?: { stream?: string }): Promise<VerifyReport> {
    this.assertOpen();
    await this.written();
    const streams = options?.stream === undefined ? await this.listStreams() : [options.stream];
    return this.explained(() =>
      verifyStreams(streams, (stream) => {
        assertStreamName(stream);
        return this.verifyStream(stream);
      }),
    );
  }

  /**
   * Runs a read, turning a LevelDB corruption or I/O error into a `LogCorruptedError` that names
   * the damaged file (see `explainStorageError`).
   */
  private async explained<T>(read: () => Promise<T>): Promise<T> {
    try {
      return await read();
    } catch (error) {
      throw await explainStorageError(this.directory, error);
    }
  }

  /** The first global position from `position` on that a repair did not drop. */
  private nextPresent(position: number): number {
    let next = position;
    for (const [from, to] of this.absent) {
      if (to < next) continue;
      if (from > next) break;
      next = to + 1;
    }
    return next;
  }

  /**
   * Records the answers that reach this log through its owner channel with `handler` (a runtime or
   * a reader over the log registers one), until the returned function is called. Without a
   * channel (`answers: false`) it does nothing.
   */
  serveAnswers(handler: OwnerHandler): () => void {
    return this.channel?.serveAnswers(handler) ?? (() => undefined);
  }

  /** Waits for queued appends to commit, then closes the database. Calling it again is harmless. */
  async close(): Promise<void> {
    this.closed = true;
    this.closing ??= (async () => {
      // The owner file goes first. A client that reached the socket is told the log is closing, and
      // one that finds no owner file while the lock is held looks again shortly (answerHeldCall).
      await this.channel?.close();
      // A snapshot being written finishes first; none is written after (they are only a cache).
      await this.snapshots.close();
      while (this.flushing !== undefined) await this.flushing;
      // Batches written behind finish before the database closes (a failed one already broke the log).
      await this.lastWrite;
      this.subscribers.end();
      try {
        if (this.unsynced && this.refusing === undefined) {
          // Closing is a promise that the log is complete on disk, so the last non-durable
          // appends get the fsync a later durable append would have given them.
          await this.db.put(LAST_GLOBAL_KEY, String(this.lastGlobalPosition), { sync: true });
        }
      } finally {
        await this.db.close();
        openInThisProcess.delete(this.directory);
      }
    })();
    return this.closing;
  }

  private scheduleFlush(): void {
    if (this.flushing !== undefined) return;
    this.flushing = this.drain().finally(() => {
      this.flushing = undefined;
      // An append may have queued between the drain's last look and this callback.
      if (this.pending.length > 0) this.scheduleFlush();
    });
  }

  private async drain(): Promise<void> {
    // Let appends made in the same tick join the first group instead of waiting for the next.
    await Promise.resolve();
    while (this.pending.length > 0) {
      const group = this.pending.splice(0, MAX_GROUP_SIZE);
      await this.commitGroup(group);
    }
  }

  /**
   * Writes a group of appends as one batch. Version checks run in call order against the heads
   * as the earlier appends of the group leave them, so the group behaves exactly like the
   * appends one after another. Never throws: every outcome goes to its own caller.
   *
   * A group with a `durable: false` append is written behind (docs/log.md, "Written behind"): its
   * positions and heads are taken and its non-durable appends resolved before the batch is
   * written, so the work they record (read-only work) goes on while LevelDB writes. Nobody else
   * sees its events before that write: subscribers are told once the batch is written, and reads
   * wait for the batch in flight. If that batch fails, events the appender was already given are
   * lost (no subscriber or reader ever saw them): the log turns unusable (every later call throws
   * the storage error) rather than go on from events that are not there, and the owner reopens it.
   * A group of durable appends only is written first and acknowledged after, as before: a failed
   * batch then rejects every append of it.
   */
  private async commitGroup(group: AppendRequest[]): Promise<void> {
    const stopped = this.broken ?? this.refusing;
    if (stopped !== undefined) {
      for (const request of group) request.reject(stopped.error);
      return;
    }
    this.forgetHeads(group);
    let plan: GroupPlan;
    try {
      await this.loadHeads(group);
      plan = this.planGroup(group);
    } catch (error) {
      for (const request of group) request.reject(error);
      return;
    }
    const behind = plan.early.length > 0;
    if (behind) this.acknowledge(plan, plan.early);
    const write = this.queueWrite(plan, behind);
    if (behind) {
      // Pipelined: the writer plans (and acknowledges) the next group while this batch is
      // written, instead of holding every later append until it lands (docs/log.md, "Group commit of the write").
      void write.then(
        () => {
          for (const settle of plan.late) settle.resolve();
        },
        (error: unknown) => {
          for (const settle of plan.late) settle.reject(error);
        },
      );
      // Held back once the next batch is large: a loop that appends faster than the disk writes
      // waits for it instead of queueing without bound.
      if ((this.queued?.operations.length ?? 0) >= MAX_QUEUED_OPERATIONS) await write.catch(() => undefined);
      return;
    }
    try {
      await write;
    } catch (error) {
      // Nothing of the group was written, so no append of it, not even one that would have
      // conflicted, can report anything but this error.
      for (const request of group) request.reject(error);
      return;
    }
    this.acknowledge(plan, []);
    for (const settle of plan.late) settle.resolve();
  }

  /**
   * Hands a planned group's operations to LevelDB: at once when no batch is being written, else
   * merged into the next batch with every group planned until the one in flight lands (a group
   * commit of written-behind appends: one write instead of one per append). Batches are written
   * one at a time and in order — each rewrites stream heads, so order matters — and a batch is
   * fsynced when a group of it asked for that (on a `sync` log). Resolves when the group's batch
   * is written. A failed batch that held acknowledged appends breaks the log: nothing after it
   * is written.
   */
  private queueWrite(plan: GroupPlan, behind: boolean): Promise<void> {
    if (plan.operations.length === 0) return Promise.resolve();
    let batch = this.queued;
    if (batch === undefined) {
      let resolve!: () => void;
      let reject!: (error: unknown) => void;
      const done = new Promise<void>((resolveDone, rejectDone) => {
        resolve = resolveDone;
        reject = rejectDone;
      });
      batch = { operations: [], sync: false, behind: false, committed: [], done, resolve, reject };
      this.queued = batch;
      this.lastWrite = done.catch(() => undefined);
    }
    batch.operations.push(...plan.operations);
    batch.committed.push(...plan.committed);
    batch.sync ||= this.durability === "sync" && plan.wantsSync;
    batch.behind ||= behind;
    if (!this.writing) this.writeQueued();
    return batch.done;
  }

  /** Writes the queued batch, then the one queued meanwhile, until none is left. */
  private writeQueued(): void {
    const batch = this.queued;
    if (batch === undefined) {
      this.writing = false;
      return;
    }
    this.queued = undefined;
    this.writing = true;
    const stopped = this.broken ?? this.refusing;
    const written = stopped !== undefined ? Promise.reject(stopped.error) : writeBatch(this.db, batch.operations, batch.sync, this.level);
    written.then(
      () => {
        // A synced batch also makes every earlier, unsynced one durable: LevelDB writes in order.
        this.unsynced = this.durability === "sync" && !batch.sync;
        // Subscribers hear of an event only once LevelDB has written it (docs/log.md, "Written
        // behind"): whatever a consumer was handed survives a crash of this process, and a batch
        // that fails was never handed to anyone. Batches land in order, so they hear in global order.
        this.subscribers.notify(batch.committed);
        batch.resolve();
        this.writeQueued();
      },
      (error: unknown) => {
        const failure = writeFailure(this.directory, error);
        if (batch.behind) this.broken ??= { error: failure };
        // A storage error (ENOSPC, EIO, a failed fsync) may have left a torn record in the
        // write-ahead file, and after a failed fsync the page cache cannot be trusted: appends stop
        // until the log is reopened (LevelDB itself refuses every write after a failed fsync).
        if (failure !== error) this.refusing ??= { error: failure };
        // No event comes after this one until the log is reopened: followers end with the error
        // instead of waiting for what will never be written.
        const stopped = this.broken ?? this.refusing;
        if (stopped !== undefined) this.subscribers.end(stopped.error);
        batch.reject(failure);
        this.writeQueued();
      },
    );
  }

  /**
   * Moves the writer's heads past a group and settles `settled` (in call order). The subscribers
   * are told by `writeQueued`, once the group's batch is written.
   */
  private acknowledge(plan: GroupPlan, settled: ReadonlyArray<() => void>): void {
    for (const [stream, head] of plan.heads) {
      // Moved to the end: the cache forgets the streams least recently appended to first.
      this.heads.delete(stream);
      this.heads.set(stream, head);
    }
    this.lastGlobalPosition = plan.lastGlobalPosition;
    for (const settle of settled) settle();
  }

  /**
   * Resolves once no batch of acknowledged appends is being written: what this process was told
   * is in the log is then readable from it. Throws the storage error of a batch that failed.
   */
  private async written(): Promise<void> {
    await this.lastWrite;
    if (this.broken !== undefined) throw this.broken.error;
  }

  /**
   * Decides what a group writes: checks versions in call order against the heads as the earlier
   * appends of the group leave them, so that the group behaves exactly like its appends one
   * after another, and builds the batch. Writes nothing.
   */
  private planGroup(group: readonly AppendRequest[]): GroupPlan {
    const heads = new Map<string, StreamHead>();
    const operations: PutOperation[] = [];
    const committed: RecordedEvent[] = [];
    const early: GroupPlan["early"] = [];
    const late: GroupPlan["late"] = [];
    // Conflicts and empty appends are told with the group's other outcomes: early when the group
    // is written behind, else once it is written.
    const told: Array<() => void> = [];
    let lastGlobalPosition = this.lastGlobalPosition;
    let wantsSync = false;
    for (const request of group) {
      const { stream } = request;
      const head = heads.get(stream) ?? this.heads.get(stream) ?? EMPTY_STREAM_HEAD;
      const conflict = findVersionConflict(stream, request.expected, head.version);
      if (conflict !== undefined) {
        told.push(() => request.reject(conflict));
        continue;
      }
      if (request.prepared.length === 0) {
        const result = { nextExpectedStreamVersion: head.version, lastGlobalPosition, events: [] };
        told.push(() => request.resolve(result));
        continue;
      }
      let appended: RecordedAppend;
      try {
        appended = recordEvents(stream, head, lastGlobalPosition, request.prepared, this.times, this.ids, request.recordedAt);
      } catch (error) {
        // A throwing clock or ID source fails this append only; nothing of it enters the batch.
        told.push(() => request.reject(error));
        continue;
      }
      appended.events.forEach((event, offset) => {
        const { globalPosition, streamPosition } = event.meta;
        operations.push({ type: "put", key: globalKey(globalPosition), value: appended.raws[offset] ?? "" });
        operations.push({ type: "put", key: streamIndexKey(stream, streamPosition), value: String(globalPosition) });
      });
      heads.set(stream, appended.head);
      lastGlobalPosition = appended.lastGlobalPosition;
      committed.push(...appended.events);
      wantsSync ||= request.durable;
      const result = { nextExpectedStreamVersion: appended.head.version, lastGlobalPosition, events: appended.events };
      if (request.durable) late.push({ resolve: () => request.resolve(result), reject: (error) => request.reject(error) });
      else early.push(() => request.resolve(result));
    }
    if (operations.length > 0) {
      for (const [stream, head] of heads) {
        operations.push({ type: "put", key: streamHeadKey(stream), value: JSON.stringify({ stream, ...head }) });
      }
      operations.push({ type: "put", key: LAST_GLOBAL_KEY, value: String(lastGlobalPosition) });
    }
    if (early.length > 0) early.unshift(...told);
    else late.unshift(...told.map((settle) => ({ resolve: settle, reject: settle })));
    return { operations, heads, committed, early, late, lastGlobalPosition, wantsSync };
  }

  /**
   * Forgets the heads (and the times, recorded-time.ts) of the streams least recently appended to
   * beyond `maxCachedHeads`, but not those of `group`. Only while no batch is being written or
   * queued: storage then holds every head the writer moved, so `loadHeads` reads a forgotten one
   * back exactly, with the stream's last stored time, as a reopened log does. The writer plans
   * one group at a time, so nothing uses a head between here and `loadHeads`.
   */
  private forgetHeads(group: readonly AppendRequest[]): void {
    if (this.heads.size <= maxCachedHeads || this.writing || this.queued !== undefined) return;
    const appending = new Set(group.map((request) => request.stream));
    for (const stream of this.heads.keys()) {
      if (this.heads.size <= maxCachedHeads) return;
      if (appending.has(stream)) continue;
      this.heads.delete(stream);
      this.times.forget(stream);
    }
  }

  /** Reads into the cache the heads of the group's streams that the writer has not seen yet. */
  private async loadHeads(group: readonly AppendRequest[]): Promise<void> {
    const unseen = [...new Set(group.map((request) => request.stream))].filter((stream) => !this.heads.has(stream));
    if (unseen.length === 0) return;
    const values = await this.db.getMany(unseen.map(streamHeadKey));
    const heads = unseen.map((stream, index) => ({ stream, head: parseHead(values[index], stream) }));
    // The last stored time of each, so a reopened log never records a stream's next event before it.
    const stored = heads.filter(({ head }) => head.version > 0);
    if (stored.length > 0) {
      const positions = await this.db.getMany(stored.map(({ stream, head }) => streamIndexKey(stream, head.version)));
      const raws = await this.db.getMany(positions.map((value) => globalKey(parsePosition(value) ?? 0)));
      stored.forEach(({ stream }, index) => {
        const recordedAt = lastRecordedAt(raws[index]);
        if (recordedAt !== undefined) this.times.observe(stream, recordedAt);
      });
    }
    for (const { stream, head } of heads) this.heads.set(stream, head);
  }

  private async *iterateAll(after: number, limit: number): AsyncGenerator<RecordedEvent> {
    this.assertOpen();
    // The end is fixed when reading starts, so a reader that appends as it goes still finishes.
    const end = Math.min(this.lastGlobalPosition, after + limit);
    if (end <= after) return;
    await this.written();
    // One iterator, read a page at a time: a seek per page cost a third of the read rate. Values
    // only: each event's key is needed only to name an unreadable event, which `keyOf` finds
    // again, and handing over every key as well cost a tenth of reading and parsing the log
    // (median 4.3 → 3.9 CPU-seconds for a million stored events).
    const iterator = this.db.values({ gt: globalKey(after), lte: globalKey(end), highWaterMarkBytes: PAGE_BYTES });
    let next: Promise<string[]> | undefined;
    let read = 0;
    // Global positions are dense: every position up to the end holds an event, except those a
    // repair recorded as dropped (`absent`). A position skipped is an event LevelDB lost.
    let expected = this.nextPresent(after + 1);
    try {
      next = iterator.nextv(PAGE_SIZE);
      for (;;) {
        let values: string[];
        try {
          values = await next;
        } catch (error) {
          next = undefined;
          throw await explainStorageError(this.directory, error);
        }
        next = undefined;
        if (values.length === 0) {
          if (expected <= end) throw missingGlobalError(this.directory, expected);
          return;
        }
        // LevelDB reads the next page on libuv's thread pool while this one is parsed and folded.
        next = iterator.nextv(PAGE_SIZE);
        for (const raw of values) {
          // Checked per event, not per page: a page can hold the whole of a small log.
          this.assertOpen();
          let event: RecordedEvent;
          try {
            event = JSON.parse(raw) as RecordedEvent;
          } catch (error) {
            throw await explainStorageError(this.directory, new LogCorruptedError(`the event stored under ${await this.keyOf(after, end, read)} is unreadable; run verify()`, { cause: error }));
          }
          read += 1;
          const position = event?.meta?.globalPosition;
          if (position !== expected) throw missingGlobalError(this.directory, expected);
          expected = this.nextPresent(expected + 1);
          yield event;
        }
      }
    } finally {
      // A page still being read must land before the iterator closes (its error no longer matters).
      if (next !== undefined) await next.catch(() => undefined);
      await iterator.close();
    }
  }

  /**
   * The key of the value `index` (0-based) of `readAll`'s range after `after` up to `end`, read
   * again: only to name an unreadable event. The range holds the same keys as when it was read,
   * since events are only ever added after the end of the log.
   */
  private async keyOf(after: number, end: number, index: number): Promise<string> {
    const keys = await this.db.keys({ gt: globalKey(after), lte: globalKey(end), limit: index + 1 }).all();
    return keys[index] ?? `a key after ${globalKey(after)}`;
  }

  private async verifyStream(stream: string): Promise<ChainVerification> {
    const head = parseHead(await this.db.get(streamHeadKey(stream)), stream, { lenient: true });
    const verifier = new ChainVerifier(stream);
    const range = prefixRange(streamIndexPrefix(stream));
    let intact = true;
    let lastKey: string | undefined;
    while (intact) {
      const bounds = lastKey === undefined ? range : { gt: lastKey, lt: range.lt };
      const entries = await this.db.iterator({ ...bounds, limit: PAGE_SIZE }).all();
      const globalPositions = entries.map(([, value]) => parsePosition(value));
      const raws = await this.getStored(globalPositions.map((position) => globalKey(position ?? 0)));
      for (const [index, [key]] of entries.entries()) {
        const globalPosition = globalPositions[index];
        intact = verifier.check(
          globalPosition === undefined
            ? { position: positionOfIndexKey(key), raw: undefined }
            : { position: positionOfIndexKey(key), globalPosition, raw: raws[index] },
        );
        if (!intact) break;
      }
      if (entries.length < PAGE_SIZE) break;
      lastKey = entries[entries.length - 1]?.[0];
    }
    if (head !== undefined) return verifier.finish(head);
    const result = verifier.finish();
    if (!result.ok) return result;
    return {
      ok: false,
      checked: result.checked,
      firstBadPosition: Math.max(1, result.checked),
      kind: "head-mismatch",
      reason: "head-mismatch: the stream head is unreadable",
    };
  }

  private assertOpen(): void {
    if (this.closed) throw new LogClosedError();
  }
}

/** classic-level reports a held LOCK file as a failed open caused by LEVEL_LOCKED. */
function isLockedError(error: unknown): boolean {
  const code = errorCode(error);
  if (code === "LEVEL_LOCKED") return true;
  return code === "LEVEL_DATABASE_NOT_OPEN" && errorCode((error as { cause?: unknown }).cause) === "LEVEL_LOCKED";
}

function errorCode(error: unknown): unknown {
  return typeof error === "object" && error !== null ? (error as { code?: unknown }).code : undefined;
}

function parsePosition(value: string | undefined): number | undefined {
  if (value === undefined || !/^\d{1,16}$/.test(value)) return undefined;
  return Number(value);
}

/** The `recordedAt` (ms) of a stored event, or `undefined` when it is missing or unreadable (verify() reports that). */
function lastRecordedAt(raw: string | undefined): number | undefined {
  if (raw === undefined) return undefined;
  try {
    const recordedAt: unknown = (JSON.parse(raw) as { meta?: { recordedAt?: unknown } }).meta?.recordedAt;
    const time = typeof recordedAt === "string" ? Date.parse(recordedAt) : Number.NaN;
    return Number.isFinite(time) ? time : undefined;
  } catch {
    return undefined;
  }
}

function parseHead(value: string | undefined, stream: string): StreamHead;
function parseHead(value: string | undefined, stream: string, options: { lenient: true }): StreamHead | undefined;
function parseHead(value: string | undefined, stream: string, options?: { lenient: true }): StreamHead | undefined {
  if (value === undefined) return EMPTY_STREAM_HEAD;
  try {
    const head: unknown = JSON.parse(value);
    if (
      typeof head === "object" &&
      head !== null &&
      Number.isSafeInteger((head as StreamHead).version) &&
      typeof (head as StreamHead).hash === "string"
    ) {
      return { version: (head as StreamHead).version, hash: (head as StreamHead).hash };
    }
  } catch {
    // Falls through to the same answer as a head of the wrong shape.
  }
  if (options?.lenient) return undefined;
  throw new LogCorruptedError(`the head of stream ${JSON.stringify(stream)} is unreadable; run verify()`);
}

function parseStoredEvent(raw: string | undefined, key: string): RecordedEvent {
  if (raw === undefined) throw new LogCorruptedError(`the event stored under ${key} is missing; run verify()`);
  try {
    return JSON.parse(raw) as RecordedEvent;
  } catch (error) {
    throw new LogCorruptedError(`the event stored under ${key} is unreadable; run verify()`, { cause: error });
  }
}

/**
 * Checks that a `readStream` window came back whole: the stream positions it was asked for, each
 * once and in order, as far as the stream's head (read before the window) reaches. LevelDB drops
 * what it cannot read of a damaged write-ahead file without a word, so an index entry lost with it
 * would otherwise shorten the answer silently.
 */
function assertWholeWindow(stream: string, window: { low: number; high: number; backwards: boolean; limit: number }, version: number, events: readonly RecordedEvent[]): void {
  const top = Math.min(window.high, version);
  const wanted = top < window.low ? 0 : Math.min(window.limit, top - window.low + 1);
  const step = window.backwards ? -1 : 1;
  const first = window.backwards ? events[0]?.meta?.streamPosition ?? top : window.low;
  if (window.backwards && first < top) throw missingStreamError(stream, top);
  for (const [index, event] of events.entries()) {
    const position = first + step * index;
    if (event?.meta?.streamPosition !== position || event.meta.stream !== stream) throw missingStreamError(stream, position);
  }
  if (events.length < wanted) throw missingStreamError(stream, first + step * events.length);
}

function missingStreamError(stream: string, position: number): LogCorruptedError {
  return new LogCorruptedError(`event ${position} of stream ${JSON.stringify(stream)} is missing or out of place although the stream's head is past it: the log is damaged; run verify()`);
}

function missingGlobalError(directory: string, position: number): LogCorruptedError {
  return new LogCorruptedError(`the event at global position ${position} (${globalKey(position)}) is missing from the log at ${directory}: the log is damaged; run verify()`);
}

function damagedFileError(directory: string, file: string | undefined, detail: string, cause?: unknown): LogCorruptedError {
  return new LogCorruptedError(
    `the log at ${directory} is damaged: ${detail}. Nothing was changed: "turnlog verify --log ${directory}" names the first bad position, "turnlog repair ${directory} --out <new-dir>" salvages what is whole`,
    { ...(file !== undefined ? { file } : {}), ...(cause !== undefined ? { cause } : {}) },
  );
}

/** The LevelDB error an operation failed with, unwrapping classic-level's "database is not open". */
function storageCause(error: unknown): unknown {
  const code = errorCode(error);
  if (code === "LEVEL_DATABASE_NOT_OPEN") return (error as { cause?: unknown }).cause ?? error;
  return error;
}

/**
 * A LevelDB corruption error — or an I/O error naming one of the directory's files, such as a
 * table that is gone — as a `LogCorruptedError` that names the damaged file: the one LevelDB's
 * message names, or the first the file check (`findDamagedFile`, reading every table whole) finds.
 * Any other error is returned as it is.
 */
async function explainStorageError(directory: string, error: unknown): Promise<unknown> {
  if (LogFormatError.isInstance(error)) return error;
  if (LogCorruptedError.isInstance(error)) {
    // An event's content is damaged: the file holding it, when a checksum tells.
    if (error.file !== undefined) return error;
    const damage = await findDamagedFile(directory, { deep: true }).catch(() => undefined);
    return damage === undefined ? error : new LogCorruptedError(`${error.message} (${describeDamage(damage)})`, { file: damage.file, cause: error });
  }
  const cause = storageCause(error);
  const code = errorCode(cause);
  const message = describeThrown(cause);
  // LevelDB calls the MANIFEST its "descriptor" in the errors of reading one.
  const named = fileNamedIn(message) ?? (/descriptor/.test(message) ? await manifestOf(directory) : undefined);
  if (code !== "LEVEL_CORRUPTION" && !(code === "LEVEL_IO_ERROR" && named !== undefined && !/No space left|Input\/output error/.test(message))) return error;
  const damage = await findDamagedFile(directory, { deep: true }).catch(() => undefined);
  if (damage !== undefined) return damagedFileError(directory, damage.file, `${describeDamage(damage)} (LevelDB: ${message})`, error);
  return damagedFileError(directory, named, named === undefined ? `LevelDB: ${message}` : `${named}: ${message}`, error);
}

/**
 * A failed batch's error as the append's caller should see it: an error the storage raised
 * (classic-level's `LEVEL_IO_ERROR`, or the `LEVEL_CORRUPTION` LevelDB repeats for every write
 * after a failed fsync) becomes a {@link LogWriteError}; anything else is returned as it is.
 */
function writeFailure(directory: string, error: unknown): unknown {
  const cause = storageCause(error);
  const code = errorCode(cause);
  if (code !== "LEVEL_IO_ERROR" && code !== "LEVEL_CORRUPTION") return error;
  const message = describeThrown(cause);
  const errno = /No space left on device/i.test(message) ? "ENOSPC" : /Input\/output error/i.test(message) ? "EIO" : undefined;
  return new LogWriteError(directory, errno, { cause: error });
}

function parseAbsent(value: string | undefined, directory: string): Array<readonly [number, number]> {
  if (value === undefined) return [];
  try {
    const ranges: unknown = JSON.parse(value);
    if (Array.isArray(ranges) && ranges.every((range) => Array.isArray(range) && range.length === 2 && range.every((end) => Number.isSafeInteger(end)))) {
      return (ranges as Array<[number, number]>).map(([from, to]) => [from, to] as const).sort((a, b) => a[0] - b[0]);
    }
  } catch {
    // Falls through to the same answer as ranges of the wrong shape.
  }
  throw new LogCorruptedError(`the log at ${directory} records dropped positions (${ABSENT_KEY}) that are unreadable; run verify()`);
}

/** The MANIFEST file the directory's `CURRENT` names, if it names one. */
async function manifestOf(directory: string): Promise<string | undefined> {
  const current = await readFile(path.join(directory, "CURRENT"), "utf8").catch(() => "");
  return /^(MANIFEST-\d+)\n$/.exec(current)?.[1];
}
