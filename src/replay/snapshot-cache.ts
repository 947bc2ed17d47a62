import { PositionOutOfRangeError } from "../errors/position-out-of-range-error.js";
import { LogCorruptedError } from "../errors/log-corrupted-error.js";
import { UnknownSessionError } from "../errors/unknown-session-error.js";
import type { EventLog, RecordedEvent, RecordedTurnlogEvent } from "../log/event-log.js";
import { applyEventInPlace, applyEvents } from "../projections/projection.js";
import { freezeState, sessionStateProjection, thawState, type SessionState } from "../projections/session-state.js";
import { readEvent, readEvents } from "../core/read-events.js";
import { sessionStream } from "../core/session-stream.js";
import { SessionSnapshotReader } from "../projections/session-snapshot.js";

/** Options of {@link SnapshotCache}. */
export interface SnapshotCacheOptions {
  /** A snapshot is kept every `every` events of a stream (at positions every, 2·every, …). Default 1 000. */
  every?: number;
  /** At most this many snapshots are kept, across every session; the least recently used goes first. Default 64. */
  maxSnapshots?: number;
  /** Events read per `readStream` call while folding. Default 1 000. */
  pageSize?: number;
  /**
   * Also start from the log's own snapshots (`log.snapshots`, docs/design.md#5-projections) when
   * none held in memory is near the position: the newest one at or below it that passes its checks.
   * Default false (a cache over memory only); `runtime.stateAt` and the log reader turn it on.
   */
  logSnapshots?: boolean;
  /** With `logSnapshots`: decoded chunks of the log's snapshots kept in memory (see SessionSnapshotReader). Default 4 096. */
  maxChunks?: number;
}

/**
 * Time travel (docs/design.md#5-projections, docs/design.md#6-replay-and-decision-versions): the session state right after any stream position, folded from
 * the nearest snapshot at or below it. Snapshots are `(session, position) → SessionState` taken
 * every `every` events while folding; they live in memory, bounded (LRU), and are throw-away: a
 * miss folds from the log's newest snapshot below the position (with `logSnapshots`: those the
 * runtime writes beside the log as a session grows, src/projections/session-snapshot.ts) or from
 * the start. This cache writes none to the log. They stay valid because a stream is append-only
 * (an event at a position never changes). Immer states are frozen and structurally shared, so a
 * snapshot costs little more than what changed since the previous one.
 *
 * @example
 * const cache = new SnapshotCache();
 * const state = await cache.stateAt(log, "s1", 4_200); // folds 1..4 200, keeps 1 000 … 4 000
 * await cache.stateAt(log, "s1", 4_100);               // folds 4 001..4 100 only
 */
export class SnapshotCache {
  readonly every: number;
  readonly maxSnapshots: number;
  readonly pageSize: number;
  readonly logSnapshots: boolean;
  /** Reads the log's snapshots, keeping the chunks it decoded: a second snapshot of a session decodes only what is new in it. */
  readonly #reader: SessionSnapshotReader;
  /** Key `${sessionId}\u0000${position}`; a Map iterates in insertion order, which makes it an LRU. */
  readonly #snapshots = new Map<string, SessionState>();

  constructor(options: SnapshotCacheOptions = {}) {
    this.every = positiveInteger(options.every ?? 1_000, "every");
    this.maxSnapshots = positiveInteger(options.maxSnapshots ?? 64, "maxSnapshots");
    this.pageSize = positiveInteger(options.pageSize ?? 1_000, "pageSize");
    this.logSnapshots = options.logSnapshots === true;
    this.#reader = new SessionSnapshotReader({ maxChunks: positiveInteger(options.maxChunks ?? 4_096, "maxChunks") });
  }

  /** Number of snapshots held. */
  get size(): number {
    return this.#snapshots.size;
  }

  /** Forgets every snapshot (they are only a cache). */
  clear(): void {
    this.#snapshots.clear();
  }

  /**
   * The session state right after the event at stream position `position` (1-based).
   * Throws a TypeError for a position that is not an integer ≥ 1, `UnknownSessionError` for an
   * unknown session, and {@link PositionOutOfRangeError} for a position beyond the stream's end.
   */
  async stateAt(log: EventLog, sessionId: string, position: number): Promise<SessionState> {
    if (!Number.isInteger(position) || position < 1) throw new TypeError(`position must be a stream position ≥ 1 (got ${String(position)})`);
    const stream = sessionStream(sessionId);
    const version = await log.streamVersion(stream);
    if (version === 0) throw new UnknownSessionError(sessionId);
    if (position > version) throw new PositionOutOfRangeError(sessionId, position, version);

    let { state, at } = this.#nearest(sessionId, position);
    if (this.logSnapshots && log.snapshots !== undefined && position - at > this.every) {
      // Nothing in memory near it: the log's newest snapshot between the two, checked against the log.
      const found = await this.#reader.newest(log, log.snapshots, stream, position, at);
      if (found !== undefined) ({ state, at } = { state: found.state, at: found.position });
    }
    // Far from any snapshot: fold in place up to a few snapshot points short of the position,
    // then freeze that state and keep it. immer copies the session's collections once per draft,
    // which is cheap near a snapshot and ruinous over a million events (34 s, against ~6 s in
    // place, for the benchmark's session); the last few thousand events still go through immer,
    // leaving a snapshot at every `every` right before the position, where the next questions
    // usually are.
    const inPlaceUntil = position - (position % this.every) - 4 * this.every;
    if (inPlaceUntil - at > 4 * this.every) {
      // A snapshot is frozen and shared: fold a private copy of it, whose calls are a plain map
      // changed in place, made persistent once at the end (thawState, freezeState).
      const working = thawState(state);
      const read = (from: number): Promise<RecordedEvent[]> => {
        const to = Math.min(inPlaceUntil, from + this.pageSize - 1);
        const page = log.readStream(stream, { from, to, maxCount: to - from + 1 });
        // Awaited below; until then a failure must not count as unhandled.
        page.catch(() => undefined);
        return page;
      };
      let next: Promise<RecordedEvent[]> | undefined = read(at + 1);
      for (let from = at + 1; next !== undefined; from += this.pageSize) {
        const events = await next;
        // The log reads the next page while this one is folded.
        next = from + this.pageSize <= inPlaceUntil ? read(from + this.pageSize) : undefined;
        if (events.length === 0) throw new LogCorruptedError(`session "${sessionId}": no event at position ${from} although its version is ${version}`);
        for (const event of events) applyEventInPlace(sessionStateProjection, working, readEvent(event));
      }
      state = freezeState(working);
      at = inPlaceUntil;
      this.#remember(sessionId, at, state);
    }
    while (at < position) {
      const to = Math.min(position, at + this.pageSize);
      const events = readEvents(await log.readStream(stream, { from: at + 1, to, maxCount: to - at }));
      if (events.length === 0) throw new LogCorruptedError(`session "${sessionId}": no event at position ${at + 1} although its version is ${version}`);
      // One immer draft per run of events up to the next snapshot point (see applyEvents).
      let from = 0;
      while (from < events.length) {
        const firstPosition = (events[from] as RecordedTurnlogEvent).meta.streamPosition;
        const nextSnapshot = firstPosition - (firstPosition % this.every) + this.every;
        let to = from;
        while (to < events.length && (events[to] as RecordedTurnlogEvent).meta.streamPosition <= nextSnapshot) to += 1;
        state = applyEvents(sessionStateProjection, state, events.slice(from, to));
        at = (events[to - 1] as RecordedTurnlogEvent).meta.streamPosition;
        if (at % this.every === 0) this.#remember(sessionId, at, state);
        from = to;
      }
    }
    return state;
  }

  /** The snapshot at the highest multiple of `every` ≤ position that is held, or the initial state. */
  #nearest(sessionId: string, position: number): { state: SessionState; at: number } {
    for (let at = position - (position % this.every); at > 0; at -= this.every) {
      const key = keyOf(sessionId, at);
      const state = this.#snapshots.get(key);
      if (state !== undefined) {
        // Touch: most recently used goes to the end.
        this.#snapshots.delete(key);
        this.#snapshots.set(key, state);
        return { state, at };
      }
    }
    return { state: sessionStateProjection.initialState(), at: 0 };
  }

  #remember(sessionId: string, at: number, state: SessionState): void {
    const key = keyOf(sessionId, at);
    this.#snapshots.delete(key);
    this.#snapshots.set(key, state);
    while (this.#snapshots.size > this.maxSnapshots) {
      const oldest = this.#snapshots.keys().next().value;
      if (oldest === undefined) break;
      this.#snapshots.delete(oldest);
    }
  }
}

function keyOf(sessionId: string, position: number): string {
  return `${sessionId}\u0000${position}`;
}

function positiveInteger(value: number, name: string): number {
  if (!Number.isInteger(value) || value < 1) throw new TypeError(`SnapshotCache: ${name} must be an integer ≥ 1`);
  return value;
}
