import type { EventOf, TurnlogEventType } from "../contracts/events.js";
import type { ExpectedStreamVersion } from "../errors/expected-version-conflict-error.js";
import type { SnapshotStore } from "./snapshot-store.js";

/** A JSON value: what an event's data may hold (it is hashed as RFC 8785 canonical JSON). */
export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };

/** An event as a caller hands it to `appendToStream`. */
export interface EventToAppend<Type extends string = string, Data = unknown> {
  type: Type;
  data: Data;
  metadata?: {
    /** Overrides the log's ID source (e.g. when copying events in a fork). */
    eventId?: string;
    causationId?: string;
    schemaVersion?: number;
    /**
     * Records this event that many whole milliseconds before the append's `recordedAt` (default
     * 0), so that a copy keeps the spacing of its source's times (a fork's copy: a decision that
     * read elapsed time replays as it was made). Only in an append that creates its stream, and
     * never more than the event before it in the append (times never decrease along a stream).
     */
    recordedBeforeMs?: number;
  };
}

/** What the log adds to every event it stores. */
export interface RecordedEventMeta {
  eventId: string;
  stream: string;
  /** 1-based position within the stream. */
  streamPosition: number;
  /** 1-based position across every stream of the log. */
  globalPosition: number;
  /** ISO-8601 time from the log's injected clock. */
  recordedAt: string;
  schemaVersion: number;
  causationId?: string;
  /** The hash of the previous event of the same stream ("" for the first). */
  prevHash: string;
  /** SHA-256 (hex) over prevHash and the canonical JSON of this event without `hash`. */
  hash: string;
}

export interface RecordedEvent<Type extends string = string, Data = unknown> {
  type: Type;
  data: Data;
  meta: RecordedEventMeta;
}

/**
 * A recorded turnlog event: the log's `meta` around one event of the catalogue
 * (src/contracts/events.ts). It is a union discriminated on `type`, so checking `event.type`
 * narrows `event.data` with no cast. The log itself stores any `RecordedEvent`; a session's
 * events become these where they are read (`readEvent`, src/core/read-events.ts: upcast, then
 * checked), and everything after that — the fold, projections, replay, the CLI — takes them.
 *
 * @example
 * if (event.type === "turn.completed") console.log(event.data.text);
 */
export type RecordedTurnlogEvent = {
  [Type in TurnlogEventType]: RecordedEvent<Type, EventOf<Type>["data"]>;
}[TurnlogEventType];

export interface AppendOptions {
  /** Default: NO_CONCURRENCY_CHECK. */
  expectedStreamVersion?: ExpectedStreamVersion;
  /**
   * `false`: the append need not be durable when it resolves. A `sync` log skips the fsync for it
   * (the next synced append makes it durable, since the log is written in order), and a LevelDB
   * log acknowledges it once its events are readable in this process, writing its batch behind
   * (a crash of the process may then lose it, never an earlier append). For the events of
   * read-only work (docs/performance.md#what-makes-a-tool-call-cheap-issue-15).
   */
  durable?: boolean;
  /**
   * The `recordedAt` of every event of this append, in ms since the epoch, instead of the log's
   * clock read at append time: an appender that folded its events before appending them (to
   * decide a run of decisions and append them at once) settles their time first, so that what
   * it decided from them is what replay decides from the log. Take it from the log's `clock`.
   */
  recordedAt?: number;
}

export interface AppendResult {
  nextExpectedStreamVersion: number;
  lastGlobalPosition: number;
  /** The events as recorded (with their meta), so a caller can fold them without reading back. */
  events: RecordedEvent[];
}

export interface ReadStreamOptions {
  /** Inclusive, 1-based. Default 1 (forwards) or the last position (backwards). */
  from?: number;
  /** Inclusive, 1-based. */
  to?: number;
  maxCount?: number;
  direction?: "forwards" | "backwards";
}

export interface ReadAllOptions {
  /** Global position to start after (exclusive). Default 0. */
  after?: number;
  limit?: number;
}

export interface SubscribeOptions {
  /** Only events of this stream. */
  stream?: string;
  /**
   * Told once when no more events will come to this listener: the log closed (no error), or it
   * stopped after a failed write (the `LogWriteError`, docs/log.md) — then nothing it was handed
   * is lost, and it will hear of nothing more until the log is reopened. Not told when the
   * listener unsubscribes itself.
   */
  onEnd?: (error?: unknown) => void;
}

export interface VerifyReport {
  ok: boolean;
  /** Number of events checked. */
  checked: number;
  /** Stream position of the first bad event in `stream`. */
  firstBadPosition?: number;
  stream?: string;
  reason?: string;
}

/**
 * Injected time source. `now()` is the wall clock (ms since the epoch), which may step back or
 * forward; `monotonic()`, when given, is a clock that only moves forward at a steady pace (ms from
 * any origin, like `performance.now()`). With it, a stream's `recordedAt` keeps advancing while the
 * wall clock stands behind (docs/log.md, "recordedAt") and durations are measured from it; a clock
 * without it (`{ now }`) still never gives a stream a `recordedAt` before its last one.
 * `sleep(ms, signal)`, when given, is how the runtime waits before a retried provider attempt
 * (default: a timer); it ends early, rejecting, when `signal` is aborted. A clock that waits
 * in its own time lets a host or a test see the waits asked for without spending them.
 *
 * @example
 * const clock: Clock = { now: () => Date.now(), monotonic: () => performance.now() };
 */
export interface Clock {
  now(): number;
  monotonic?(): number;
  sleep?(ms: number, signal: AbortSignal): Promise<void>;
}

/** Injected ID source. */
export interface IdSource {
  next(): string;
}

/**
 * The append-only event log every turnlog backend implements. Streams are append-only
 * sequences of events; positions are plain 1-based integers; each stream is hash-chained.
 */
export interface EventLog {
  /** The clock `recordedAt` comes from (optional: a log without one uses the system time). */
  readonly clock?: Clock;
  /**
   * Where this log keeps projection snapshots, if it keeps any (docs/design.md#5-projections): a
   * cache beside the events that can always be thrown away. A log without one folds from the start.
   */
  readonly snapshots?: SnapshotStore;
  appendToStream(stream: string, events: readonly EventToAppend[], options?: AppendOptions): Promise<AppendResult>;
  /** Events of one stream, bounded by `maxCount`. An unknown stream reads as `[]`. */
  readStream(stream: string, options?: ReadStreamOptions): Promise<RecordedEvent[]>;
  /** Every event in global order; streams, never loads the whole log. */
  readAll(options?: ReadAllOptions): AsyncIterable<RecordedEvent>;
  /** The stream's current version: 0 when it does not exist. */
  streamVersion(stream: string): Promise<number>;
  streamExists(stream: string): Promise<boolean>;
  listStreams(): Promise<string[]>;
  /** Live tail: the listener sees each event appended after subscribing, in global order. */
  subscribe(listener: (event: RecordedEvent) => void, options?: SubscribeOptions): () => void;
  /** Walks every stream's hash chain (or one stream's) and reports the first bad position. */
  verify(options?: { stream?: string }): Promise<VerifyReport>;
  close(): Promise<void>;
}

/**
 * A lease a log granted: while it is held, no other holder of a lease of the same name — in any
 * process — gets one. `release()` gives it back (it never throws).
 */
export interface LogLease {
  readonly name: string;
  release(): Promise<void>;
}

/**
 * An optional capability of a log that many processes share (`PostgresEventLog`): exclusive,
 * named leases, which the runtime takes on a session for as long as an operation drives it
 * (`RuntimeOptions.sessionLease`). A log that one process owns (LevelDB) needs none.
 */
export interface SessionLeases {
  /** Takes the lease `name` if nobody holds it; `undefined` when another holder has it. */
  tryLease(name: string): Promise<LogLease | undefined>;
}

/** The log's leases, when it grants them (`PostgresEventLog`); `undefined` otherwise. */
export function sessionLeasesOf(log: EventLog): SessionLeases | undefined {
  const candidate = log as Partial<SessionLeases>;
  return typeof candidate.tryLease === "function" ? (log as EventLog & SessionLeases) : undefined;
}
