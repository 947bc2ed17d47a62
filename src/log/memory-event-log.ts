import { LogClosedError } from "../errors/log-closed-error.js";
import { LogCorruptedError } from "../errors/log-corrupted-error.js";
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
} from "./event-log.js";
import { assertRecordedAt, assertStreamName, prepareEvents, randomIds, recordEvents, systemClock } from "./event-recording.js";
import { assertExpectedStreamVersion, findVersionConflict } from "./expected-version.js";
import { EMPTY_STREAM_HEAD, verifyChain, verifyStreams } from "./hash-chain.js";
import type { StoredChainEntry, StreamHead } from "./hash-chain.js";
import { StreamTimes } from "./recorded-time.js";
import { resolveReadAll, resolveStreamWindow } from "./read-options.js";
import { SubscriberRegistry } from "./subscriber-registry.js";
import type { ListenerErrorHandler } from "./subscriber-registry.js";
import { MemorySnapshotStore } from "./snapshot-store.js";

/** Options of {@link MemoryEventLog}. */
export interface MemoryEventLogOptions {
  /** Where `recordedAt` comes from. Default: the system clock. */
  clock?: Clock;
  /** Where event IDs come from. Default: `crypto.randomUUID`. */
  ids?: IdSource;
  /** Told about a subscriber that threw. Default: ignore it (the append has committed anyway). */
  onListenerError?: ListenerErrorHandler;
}

/**
 * The storage of a {@link MemoryEventLog}, laid open for tests that tamper with a log on purpose.
 * Events are kept as the JSON text a durable backend would store, so tampering with it exercises
 * the same verification as tampering with a LevelDB value.
 */
export interface MemoryEventLogStorage {
  /** Stored JSON text of every event; index `i` holds global position `i + 1`. */
  events: string[];
  /** Per stream: the global position of each event; index `i` holds stream position `i + 1`. */
  streamIndex: Map<string, number[]>;
  /** Per stream: the version and hash of its last event, as the log believes them to be. */
  heads: Map<string, StreamHead>;
}

/**
 * An {@link EventLog} held in memory, with exactly the semantics of `LevelEventLog` (positions,
 * expected versions, hash chain, verify, subscribe, close) and nothing durable. For tests and
 * throw-away runs.
 *
 * @example
 * const log = new MemoryEventLog({ clock: { now: () => 0 } });
 * await log.appendToStream("s1", [{ type: "session.opened", data: {} }]);
 */
export class MemoryEventLog implements EventLog {
  private readonly storage: MemoryEventLogStorage = { events: [], streamIndex: new Map(), heads: new Map() };
  readonly clock: Clock;
  /** Each stream's time: every stream lives only here, so this instance has seen all of it. */
  private readonly times: StreamTimes;
  private readonly ids: IdSource;
  private readonly subscribers: SubscriberRegistry;
  private closed = false;
  /** Snapshots live in memory too, and go with the log. */
  readonly snapshots = new MemorySnapshotStore();

  constructor(options: MemoryEventLogOptions = {}) {
    this.clock = options.clock ?? systemClock;
    this.times = new StreamTimes(this.clock);
    this.ids = options.ids ?? randomIds;
    this.subscribers = new SubscriberRegistry(options.onListenerError);
  }

  /**
   * **Test-only.** Hands `tamper` the log's raw storage so a test can corrupt it (rewrite an
   * event's JSON, remove or reorder index entries, move a head) and check that `verify()`
   * notices. Never call it in production code: nothing here keeps the log consistent.
   *
   * @example
   * log.unsafeTamper(({ events }) => { events[0] = events[0]!.replace('"a"', '"b"'); });
   */
  unsafeTamper(tamper: (storage: MemoryEventLogStorage) => void): void {
    tamper(this.storage);
  }

  /**
   * Appends all events or none. The returned events are frozen: subscribers were handed the
   * same objects.
   */
  async appendToStream(stream: string, events: readonly EventToAppend[], options?: AppendOptions): Promise<AppendResult> {
    this.assertOpen();
    assertStreamName(stream);
    assertExpectedStreamVersion(options?.expectedStreamVersion);
    assertRecordedAt(options?.recordedAt);
    const prepared = prepareEvents(events);
    const { storage } = this;
    const head = storage.heads.get(stream) ?? EMPTY_STREAM_HEAD;
    const conflict = findVersionConflict(stream, options?.expectedStreamVersion, head.version);
    if (conflict !== undefined) throw conflict;
    if (prepared.length === 0) {
      return { nextExpectedStreamVersion: head.version, lastGlobalPosition: storage.events.length, events: [] };
    }
    const appended = recordEvents(stream, head, storage.events.length, prepared, this.times, this.ids, options?.recordedAt);
    // Everything that can fail has run; the commit below cannot, so the append is all or nothing.
    const index = storage.streamIndex.get(stream) ?? [];
    for (const [offset, raw] of appended.raws.entries()) {
      storage.events.push(raw);
      index.push(appended.lastGlobalPosition - appended.raws.length + 1 + offset);
    }
    storage.streamIndex.set(stream, index);
    storage.heads.set(stream, appended.head);
    this.subscribers.notify(appended.events);
    return {
      nextExpectedStreamVersion: appended.head.version,
      lastGlobalPosition: appended.lastGlobalPosition,
      events: appended.events,
    };
  }

  async readStream(stream: string, options?: ReadStreamOptions): Promise<RecordedEvent[]> {
    this.assertOpen();
    assertStreamName(stream);
    const window = resolveStreamWindow(options);
    const index = this.storage.streamIndex.get(stream);
    if (window === undefined || index === undefined) return [];
    const high = Math.min(window.high, index.length);
    const result: RecordedEvent[] = [];
    for (let step = 0; step <= high - window.low && result.length < window.limit; step += 1) {
      const position = window.backwards ? high - step : window.low + step;
      result.push(this.readGlobal(index[position - 1] ?? 0));
    }
    return result;
  }

  readAll(options?: ReadAllOptions): AsyncIterable<RecordedEvent> {
    const { after, limit } = resolveReadAll(options);
    return this.iterateAll(after, limit);
  }

  async streamVersion(stream: string): Promise<number> {
    this.assertOpen();
    assertStreamName(stream);
    return this.storage.heads.get(stream)?.version ?? 0;
  }

  async streamExists(stream: string): Promise<boolean> {
    return (await this.streamVersion(stream)) > 0;
  }

  async listStreams(): Promise<string[]> {
    this.assertOpen();
    return [...this.storage.heads.keys()].sort();
  }

  subscribe(listener: (event: RecordedEvent) => void, options?: SubscribeOptions): () => void {
    this.assertOpen();
    return this.subscribers.add(listener, options);
  }

  async verify(options?: { stream?: string }): Promise<VerifyReport> {
    this.assertOpen();
    const streams = options?.stream === undefined ? await this.listStreams() : [options.stream];
    return verifyStreams(streams, (stream) => {
      assertStreamName(stream);
      const index = this.storage.streamIndex.get(stream) ?? [];
      const entries = index.map(
        (globalPosition, offset): StoredChainEntry => ({
          position: offset + 1,
          globalPosition,
          raw: this.storage.events[globalPosition - 1],
        }),
      );
      return verifyChain(stream, entries, this.storage.heads.get(stream) ?? EMPTY_STREAM_HEAD);
    });
  }

  async close(): Promise<void> {
    this.closed = true;
    this.subscribers.end();
    await this.snapshots.close();
  }

  private async *iterateAll(after: number, limit: number): AsyncGenerator<RecordedEvent> {
    this.assertOpen();
    // The end is fixed when reading starts, so a reader that appends as it goes still finishes.
    const end = Math.min(this.storage.events.length, after + limit);
    for (let position = after + 1; position <= end; position += 1) {
      this.assertOpen();
      yield this.readGlobal(position);
    }
  }

  private readGlobal(globalPosition: number): RecordedEvent {
    const raw = this.storage.events[globalPosition - 1];
    if (raw === undefined) throw new LogCorruptedError(`the event at global position ${globalPosition} is missing; run verify()`);
    try {
      return JSON.parse(raw) as RecordedEvent;
    } catch (error) {
      throw new LogCorruptedError(`the event at global position ${globalPosition} is unreadable; run verify()`, { cause: error });
    }
  }

  private assertOpen(): void {
    if (this.closed) throw new LogClosedError();
  }
}
