import type { Budgets } from "../contracts/budgets.js";
import type { TurnlogEvent } from "../contracts/events.js";
import { parseEvent } from "../contracts/events.js";
import type { PolicySnapshot } from "../contracts/policy.js";
import { isDeepStrictEqual } from "node:util";
import type { EventLog, RecordedTurnlogEvent } from "../log/event-log.js";
import { eventDataSnapshot, systemClock } from "../log/event-recording.js";
import { advanceTime, monotonicReading, type TimeAnchor } from "../log/recorded-time.js";
import { appendedEvents, readEvents } from "../core/read-events.js";
import { SessionFold, type SessionFoldCheckpoint } from "../core/session-fold.js";
import { sessionStream } from "../core/session-stream.js";
import { isAlwaysSealed } from "../log/seal/seal-record.js";
import { SessionSnapshotReader, SessionSnapshotWriter } from "../projections/session-snapshot.js";
import { ExpectedVersionConflictError } from "../errors/expected-version-conflict-error.js";
import { EventRefusedError } from "../errors/event-refused-error.js";
import { TurnlogError } from "../errors/turnlog-error.js";

/**
 * How many lost races in a row one append (or one operation) carries on through before the
 * conflict is thrown after all. Each lost race means another writer appended — progress, not a
 * spin — so the bound only stops a host that keeps losing to a faster one.
 */
export const maxCarriedConflicts = 16;

/**
 * How often a session's snapshot is written, in events (docs/design.md#5-projections): at the first
 * point between turns after this many events since the last one. A write costs what changed since
 * the one before (its new chunks and a record of a few hundred kB at most), so this is a balance
 * between that cost, paid every few hundred tool calls in the background, and what opening a
 * session or `stateAt` folds after the nearest snapshot: at most this many events plus a turn,
 * a few milliseconds.
 */
export const defaultSnapshotEvery = 2_000;

/** How a store uses the log's snapshots: written every `every` events; `false`, none. */
export type SnapshotUse = false | { every: number };

/**
 * Whether every event this runtime builds is checked against the event schemas before it is
 * appended: on in the test suite (`TURNLOG_CHECK_EVENTS=1`, set by vitest.config.ts), off in use.
 * The events are built by this code and typed; parsing each one again on every append cost about
 * a tenth of a tool call (docs/performance.md#what-makes-a-tool-call-cheap-issue-15), so the schemas are checked where data comes in — a log
 * read, host input — and, in tests, here: an event the schema would reject or change fails them.
 */
const checkBuiltEvents = process.env.TURNLOG_CHECK_EVENTS === "1";

function checkBuilt(event: TurnlogEvent): void {
  const parsed = parseEvent(event);
  if (!isDeepStrictEqual(JSON.parse(JSON.stringify(parsed)), JSON.parse(JSON.stringify(event)))) {
    throw new Error(`built ${event.type} event is not what its schema parses it to: ${JSON.stringify(event)}`);
  }
}

/**
 * Told about every event a store folds from the log, in stream order: what it read when it first
 * loaded the session (its history), and from then on each event recorded — appended by the store,
 * or another writer's read back on a reload. Only durable events: staged ones are told once
 * appended. The live spans (`createRuntime({ tracer })`) are fed this way. An observer that
 * throws is ignored: the events are recorded whatever it does.
 */
export interface SessionObserver {
  loaded(sessionId: string, events: readonly RecordedTurnlogEvent[]): void;
  recorded(sessionId: string, events: readonly RecordedTurnlogEvent[]): void;
}

/** How an append is to be made: `durable: false` for the events of read-only work. */
export interface AppendRequestOptions {
  durable?: boolean;
}

interface AppendRequest {
  /**
   * Called on the state right before it (with `repeat`, again until it returns no event; `index`
   * counts the calls of one attempt, from 0 — an attempt after a lost race starts again at 0).
   */
  build: (index: number) => readonly TurnlogEvent[];
  repeat: boolean;
  options: AppendRequestOptions | (() => AppendRequestOptions);
  carryOn: boolean;
  /** The turn loop's flush of what it staged. */
  flush: boolean;
  resolve(events: RecordedTurnlogEvent[]): void;
  reject(error: unknown): void;
}

/**
 * Seals `stream` at `version`, announcing `events` as the ones about to be appended after it
 * (`StreamSealer.announce`).
 */
export type SealAnnouncer = (stream: string, version: number, events: readonly { type: string; data: unknown }[]) => Promise<void>;

interface Staged {
  events: TurnlogEvent[];
  before: SessionFoldCheckpoint;
  recordedAt: number;
}

/**
 * The log's `TypeError` for data it cannot store, typed (`EventRefusedError`); any other error
 * (a storage failure, a closed log) as it is.
 */
function refused(sessionId: string, error: unknown): unknown {
  if (!(error instanceof TypeError) || TurnlogError.isTurnlogError(error)) return error;
  return new EventRefusedError(sessionId, error.message, { cause: error });
}

function optionsOf(request: AppendRequest): AppendRequestOptions {
  return typeof request.options === "function" ? request.options() : request.options;
}

/**
 * One session's events and their fold: appends events with an exact expected version (a second
 * writer is detected, never interleaved), then folds what the log recorded.
 *
 * Decisions can also be staged: folded at once, so the next decision sees them, and appended
 * together by `flush` — one append for a run of pure decisions (docs/performance.md#what-makes-a-tool-call-cheap-issue-15). Their
 * `recordedAt` is settled when the first is staged and the log records that time, so a decision
 * that reads time (the wall-clock budget) sees in the live run what replay sees in the log.
 */
export class SessionStore {
  readonly #fold = new SessionFold();
  /** The empty fold, to fold the stream again from its start (see `reload`). */
  readonly #origin = this.#fold.checkpoint();
  #version = 0;
  /** The hash of the event at `#version`: what tells this store's events are still the log's. */
  #headHash: string | undefined;
  #reloads = 0;
  #refolds = 0;
  #failedAppends = 0;
  /**
   * The stream positions this store folded from another writer while it had the session loaded
   * (read by a reload, neither appended here nor part of the history first loaded), as ascending
   * `[first, last]` ranges: see `appendedElsewhere`.
   */
  readonly #elsewhere: Array<[number, number]> = [];
  /**
   * Appends asked for and not yet committed. One batch of them is committed at a time, as one
   * log append carrying the exact expected version the one before left.
   */
  #queue: AppendRequest[] = [];
  #draining = false;
  /** A batch is being built or appended. */
  #committing = false;
  /** A batch is running its builds: they may stage. */
  #inDrain = false;
  /** Events folded but not yet appended, the fold before them, and their settled time. */
  #staged: Staged | undefined;
  /** The last time this store settled, with the monotonic reading then (see `#now`). */
  #anchor: TimeAnchor | undefined;
  /** A time a build read (`recordedTime`) before it staged anything: the next batch takes it. */
  #settledTime: number | undefined;
  /** The stream position of the last snapshot read or written (0: none). */
  #snapshotAt = 0;
  /** A snapshot write is in flight (one at a time). */
  #snapshotting = false;
  #snapshotWriter: SessionSnapshotWriter | undefined;
  /** A snapshot was found wanting when the session was loaded: one is written at the next chance. */
  #snapshotOwed = false;

  private constructor(
    readonly log: EventLog,
    readonly sessionId: string,
    private readonly observer: SessionObserver | undefined,
    private readonly announce: SealAnnouncer | undefined,
    private readonly snapshots: SnapshotUse,
  ) {}

  /**
   * Loads a session by folding its stream (empty for a new session); `observer` is told what it
   * folds, and `announce` (a sealing runtime's) is called before each append that holds an
   * always-sealed event or begins the stream.
   */
  static async load(
    log: EventLog,
    sessionId: string,
    observer?: SessionObserver,
    announce?: SealAnnouncer,
    snapshots: SnapshotUse = { every: defaultSnapshotEvery },
  ): Promise<SessionStore> {
    const store = new SessionStore(log, sessionId, observer, announce, log.snapshots === undefined ? false : snapshots);
    await store.reload();
    return store;
  }

  /**
   * Starts the fold from the log's newest usable snapshot of this session, if there is one (it
   * was checked against the log: see src/projections/session-snapshot.ts). Not with an observer,
   * which is told every event of the history.
   */
  async #resumeFromSnapshot(): Promise<void> {
    const store = this.log.snapshots;
    if (store === undefined || this.snapshots === false || this.observer !== undefined) return;
    const stream = sessionStream(this.sessionId);
    const reader = new SessionSnapshotReader();
    const found = await reader.newest(this.log, store, stream, Number.MAX_SAFE_INTEGER);
    // A snapshot passed over (damaged, stale) is written again at the next point between turns.
    this.#snapshotOwed = reader.passedOver > 0;
    if (found === undefined) return;
    this.#fold.resume(found);
    this.#version = found.position;
    this.#headHash = found.hash;
    this.#reloads += 1;
    this.#snapshotAt = found.position;
    this.#snapshotWriter = new SessionSnapshotWriter(store, stream);
    this.#snapshotWriter.remember(found);
  }

  /**
   * Writes a snapshot of the fold in the background when `every` events have been folded since
   * the last one and the fold rests between turns (a snapshot keeps no open turn). The state is
   * immutable, so the write reads it while the session goes on; it never holds up an append (the
   * store cuts its work into turns of the event loop), and a failed one is only a cache miss.
   */
  #maybeSnapshot(): void {
    const store = this.log.snapshots;
    if (store === undefined || this.snapshots === false || this.#snapshotting || this.#staged !== undefined) return;
    if (this.#version - this.#snapshotAt < this.snapshots.every && !(this.#snapshotOwed && this.#version > this.#snapshotAt)) return;
    const resting = this.#fold.resting();
    const hash = this.#headHash;
    if (resting === undefined || hash === undefined || resting.state.position !== this.#version) return;
    this.#snapshotAt = this.#version;
    this.#snapshotOwed = false;
    this.#snapshotting = true;
    const writer = (this.#snapshotWriter ??= new SessionSnapshotWriter(store, sessionStream(this.sessionId)));
    const { state, pending } = resting;
    store.track(() => writer.write(state, { hash, pending }).finally(() => (this.#snapshotting = false)));
  }

  /**
   * Folds what the log holds beyond this store's version, for when another writer appended to the
   * stream (an append hit an `ExpectedVersionConflictError`, or the session is opened again): the
   * state is then the log's, not this process's stale copy. Only the new events are read — a
   * failed append folded nothing, so what the store holds is a prefix of the log — unless the log
   * lost events this store folded (a PostgreSQL server crash loses its last asynchronous commits;
   * the host lives on): then the whole stream is folded again. Call it only while no append is in
   * flight.
   */
  async reload(): Promise<void> {
    this.discardStaged();
    this.#settledTime = undefined;
    const history = this.#version === 0;
    // The observer has been told the events up to here; a refold does not tell them again.
    const told = this.#version;
    if (this.#version > 0 && !(await this.#holdsLogPrefix())) {
      // The log no longer holds what this store folded: a PostgreSQL server that crashed lost
      // its last asynchronous commits (`durable: false`) while this process lived on, and maybe
      // another writer appended other events at those positions since. The stream is folded
      // again from its start, so the state is the log's.
      this.#fold.restore(this.#origin);
      this.#version = 0;
      this.#headHash = undefined;
      this.#refolds += 1;
    }
    if (this.#version === 0) await this.#resumeFromSnapshot();
    // Paged so a long session never sits in memory twice.
    const page = 10_000;
    for (;;) {
      const events = readEvents(await this.log.readStream(sessionStream(this.sessionId), { from: this.#version + 1, maxCount: page }));
      this.#fold.applyAll(events);
      const untold = events.filter((event) => event.meta.streamPosition > told);
      if (untold.length > 0) this.#observe(history ? "loaded" : "recorded", untold);
      if (!history && untold.length > 0) this.#noteElsewhere((untold[0] as RecordedTurnlogEvent).meta.streamPosition, (untold.at(-1) as RecordedTurnlogEvent).meta.streamPosition);
      const last = events.at(-1);
      if (last !== undefined) {
        this.#version = last.meta.streamPosition;
        this.#headHash = last.meta.hash;
        this.#reloads += 1;
      }
      if (events.length < page) break;
    }
    this.#maybeSnapshot();
  }

  /**
   * Whether the log holds events of this session that this store has not folded (another
   * writer's), or no longer holds the last one it folded (see `reload`).
   */
  async isBehind(): Promise<boolean> {
    if (this.#version === 0) return (await this.log.readStream(sessionStream(this.sessionId), { from: 1, maxCount: 1 })).length > 0;
    const [head, next] = await this.log.readStream(sessionStream(this.sessionId), { from: this.#version, maxCount: 2 });
    return head?.meta.hash !== this.#headHash || next !== undefined;
  }

  /**
   * Whether the event at stream `position` was appended by another writer (another runtime on
   * the log) while this store had the session loaded, rather than by this store: what tells a
   * turn another host is performing from one this process left unfinished.
   */
  appendedElsewhere(position: number): boolean {
    let low = 0;
    let high = this.#elsewhere.length - 1;
    while (low <= high) {
      const middle = (low + high) >> 1;
      const [first, last] = this.#elsewhere[middle] as [number, number];
      if (position < first) high = middle - 1;
      else if (position > last) low = middle + 1;
      else return true;
    }
    return false;
  }

  /** Whether another writer appended any event at or after stream `position` while this store had the session loaded. */
  appendedElsewhereSince(position: number): boolean {
    const last = this.#elsewhere.at(-1);
    return last !== undefined && last[1] >= position;
  }

  #noteElsewhere(first: number, last: number): void {
    const previous = this.#elsewhere.at(-1);
    if (previous !== undefined && first <= previous[1] + 1) previous[1] = Math.max(previous[1], last);
    else this.#elsewhere.push([first, last]);
  }

  /** Whether the log still holds this store's last folded event, unchanged (a hash chain's head names all before it). */
  async #holdsLogPrefix(): Promise<boolean> {
    const [head] = await this.log.readStream(sessionStream(this.sessionId), { from: this.#version, maxCount: 1 });
    return head?.meta.hash === this.#headHash;
  }

  /** The session's events folded: the projection, the open turn's machine, what is owed next. */
  get fold(): SessionFold {
    return this.#fold;
  }

  /** How many times a reload folded another writer's events: a caller's derived caches are stale when it moved. */
  get reloads(): number {
    return this.#reloads;
  }

  /**
   * How many times a reload found that the log had lost events this store folded, and folded the
   * stream again from its start (see `reload`).
   */
  get refolds(): number {
    return this.#refolds;
  }

  /**
   * How many appends (or stagings) failed for a reason other than a lost race: the log refused an
   * event, or its storage failed. A session that saw it move re-derives what it owes from the log
   * (session.ts).
   */
  get failedAppends(): number {
    return this.#failedAppends;
  }

  get version(): number {
    return this.#version;
  }

  get state() {
    return this.fold.state;
  }

  get policy(): PolicySnapshot {
    const policy = this.fold.state.policy;
    if (policy === null) throw new Error(`session ${this.sessionId} has not started`);
    return policy;
  }

  get budgets(): Budgets {
    const budgets = this.fold.state.budgets;
    if (budgets === null) throw new Error(`session ${this.sessionId} has not started`);
    return budgets;
  }

  /** Appends atomically, then folds. Resolves once the log acknowledged the append. */
  append(events: readonly TurnlogEvent[], options: { durable?: boolean } = {}): Promise<RecordedTurnlogEvent[]> {
    return this.appendWith(() => events, options);
  }

  /**
   * Like `append`, but the events are built once every earlier append has been folded, so a
   * decision computed by `build` sees the state right before it — even with tools running
   * concurrently. `options` may be computed after `build` (what it decided sets the durability);
   * an empty build appends nothing.
   *
   * With `carryOn`, an append that loses a race to another writer (`ExpectedVersionConflictError`)
   * folds what that writer appended and builds again on the state it left — the build decides
   * whether what it wanted to append still stands (a call another host started is not started
   * again; the outcome of a call this process ran is appended unless the log already holds one) —
   * at most {@link maxCarriedConflicts} times.
   *
   * Appends asked for while one is in flight (tools ending together) share the next log append:
   * each build still runs, in call order, on the state the ones before it left (their events
   * are staged), and the append is durable if any of them asked for durability.
   */
  appendWith(
    build: () => readonly TurnlogEvent[],
    options: AppendRequestOptions | (() => AppendRequestOptions) = {},
    { carryOn = false }: { carryOn?: boolean } = {},
  ): Promise<RecordedTurnlogEvent[]> {
    return this.#enqueue({ build, repeat: false, options, carryOn, flush: false });
  }

  /**
   * Like `appendWith`, but `next` is asked again after each answer — on the state with its
   * events staged — until it returns none, and everything it returned is one append: a run of
   * decisions (the tool starts a scheduler clears at once).
   */
  appendRun(
    next: (index: number) => readonly TurnlogEvent[],
    options: AppendRequestOptions | (() => AppendRequestOptions) = {},
    { carryOn = false }: { carryOn?: boolean } = {},
  ): Promise<RecordedTurnlogEvent[]> {
    return this.#enqueue({ build: next, repeat: true, options, carryOn, flush: false });
  }

  /** The events staged for the next `flush`, in order. */
  get staged(): readonly TurnlogEvent[] {
    return this.#staged?.events ?? [];
  }

  /**
   * Folds `events` now, as they will be recorded (positions after the log's and the staged ones,
   * the batch's settled `recordedAt`), so the next decision sees them; `flush` appends them. Call
   * it only while no append is in flight (the turn loop between effects). Throws what the fold
   * throws (an event the machine refuses) and then stages nothing of `events`.
   */
  stage(events: readonly TurnlogEvent[]): void {
    if ((this.#queue.length > 0 || this.#committing) && !this.#inDrain) {
      throw new Error(`session ${this.sessionId}: events are staged only while no append is in flight`);
    }
    this.#stage(events);
  }

  /**
   * The `recordedAt` (ms since the epoch) the events a build stages now will carry: the staged
   * batch's settled time, or, before anything is staged, a time settled now that the batch then
   * takes. For a decision that reads time — an answer judged against its approval deadline, the
   * denials a deadline owes — so that it decides on the very time the log records. Read it only
   * inside a build (`appendWith`, `appendRun`): a time read and not staged is forgotten when the
   * build's append ends.
   */
  recordedTime(): number {
    if (this.#staged !== undefined) return this.#staged.recordedAt;
    this.#settledTime ??= this.#now();
    return this.#settledTime;
  }

  #stage(events: readonly TurnlogEvent[]): void {
    if (events.length === 0) return;
    if (checkBuiltEvents) events.forEach(checkBuilt);
    if (this.#staged === undefined) {
      this.#staged = { events: [], before: this.#fold.checkpoint(), recordedAt: this.#settledTime ?? this.#now() };
      this.#settledTime = undefined;
    }
    const staged = this.#staged;
    const recordedAt = new Date(staged.recordedAt).toISOString();
    const at = this.#fold.checkpoint();
    const first = this.#version + staged.events.length + 1;
    let stored: TurnlogEvent[];
    try {
      // As the log stores it: the JSON form (undefined members gone), frozen; the append takes
      // this very object instead of copying the data a second time.
      stored = events.map((event) => ({ ...event, data: this.#snapshot(event) }) as TurnlogEvent);
      this.#fold.applyAll(
        stored.map((event, index): RecordedTurnlogEvent => ({
          ...event,
          meta: { eventId: "", stream: sessionStream(this.sessionId), streamPosition: first + index, globalPosition: 0, recordedAt, schemaVersion: 1, prevHash: "", hash: "" },
        })),
      );
    } catch (error) {
      this.#fold.restore(at);
      if (staged.events.length === 0) this.#staged = undefined;
      throw error;
    }
    staged.events.push(...stored);
  }

  /** An event's data as the log stores it; data the log refuses is an `EventRefusedError`. */
  #snapshot(event: TurnlogEvent): unknown {
    try {
      return eventDataSnapshot(event.data, event.type);
    } catch (error) {
      this.#failedAppends += 1;
      throw refused(this.sessionId, error);
    }
  }

  /**
   * Appends the staged events in one append, at their settled time. If the append fails (a lost
   * race, a storage error) the fold is put back as it was before them and the error thrown.
   */
  flush(options: AppendRequestOptions = {}): Promise<RecordedTurnlogEvent[]> {
    if (this.#staged === undefined) return Promise.resolve([]);
    return this.#enqueue({ build: () => [], repeat: false, options, carryOn: false, flush: true });
  }

  #enqueue(request: Omit<AppendRequest, "resolve" | "reject">): Promise<RecordedTurnlogEvent[]> {
    return new Promise<RecordedTurnlogEvent[]>((resolve, reject) => {
      this.#queue.push({ ...request, resolve, reject });
      if (!this.#draining) {
        this.#draining = true;
        void this.#drain();
      }
    });
  }

  /** Commits what is queued, a batch at a time: each batch is one log append. */
  async #drain(): Promise<void> {
    try {
      while (this.#queue.length > 0) {
        const batch = this.#queue.splice(0);
        this.#committing = true;
        let settle: Array<() => void>;
        try {
          settle = await this.#commit(batch);
        } catch (error) {
          settle = batch.map((request) => () => request.reject(error));
        } finally {
          this.#committing = false;
        }
        // Told only once the batch is done, so a caller that goes on at once finds the store idle.
        for (const outcome of settle) outcome();
      }
    } finally {
      // Synchronously after the last look at the queue: whoever appends next starts a drain.
      this.#draining = false;
    }
  }

  /**
   * Builds (stages) the events of each request in call order and appends them in one append; on
   * a lost race, builds the requests that carry on again on the state the winner left. Returns
   * what to tell each request.
   */
  async #commit(batch: AppendRequest[]): Promise<Array<() => void>> {
    const settle: Array<() => void> = [];
    let requests = batch;
    if (this.#staged !== undefined && !requests.some((request) => request.flush)) {
      const error = new Error(`session ${this.sessionId}: staged events must be flushed before another append`);
      return requests.map((request) => () => request.reject(error));
    }
    for (let lost = 0; ; lost += 1) {
      // Events the turn loop staged come first; they belong to its flush.
      const flushed = this.#staged?.events.length ?? 0;
      const built: { request: AppendRequest; count: number }[] = [];
      for (const request of requests) {
        const before = this.staged.length;
        const checkpoint = this.#fold.checkpoint();
        this.#inDrain = true;
        try {
          for (let index = 0; ; index += 1) {
            const events = request.build(index);
            if (events.length === 0) break;
            this.#stage(events);
            if (!request.repeat) break;
          }
          built.push({ request, count: this.staged.length - before });
        } catch (error) {
          // Its events are not staged; those of the requests before it still are.
          this.#fold.restore(checkpoint);
          if (this.#staged !== undefined) {
            this.#staged.events.length = before;
            if (before === 0) this.#staged = undefined;
          }
          settle.push(() => request.reject(error));
        } finally {
          this.#inDrain = false;
        }
      }
      // A time a build read without staging anything belongs to no batch.
      this.#settledTime = undefined;
      const staged = this.#staged;
      if (staged === undefined) {
        for (const { request } of built) settle.push(() => request.resolve([]));
        return settle;
      }
      const durable = built.some(({ request, count }) => (count > 0 || (request.flush && flushed > 0)) && optionsOf(request).durable !== false);
      try {
        const appended = await this.#appendStaged(staged, durable);
        let offset = flushed;
        for (const { request, count } of built) {
          const events = request.flush ? appended.slice(0, flushed) : appended.slice(offset, offset + count);
          if (!request.flush) offset += count;
          settle.push(() => request.resolve(events));
        }
        return settle;
      } catch (error) {
        const carried = built.filter(({ request }) => request.carryOn).map(({ request }) => request);
        const retry = ExpectedVersionConflictError.isInstance(error) && lost < maxCarriedConflicts ? carried : [];
        for (const { request } of built) if (!retry.includes(request)) settle.push(() => request.reject(error));
        if (retry.length === 0) return settle;
        try {
          // No other append of this store is in flight while it reloads.
          await this.reload();
        } catch (reloadError) {
          for (const request of retry) settle.push(() => request.reject(reloadError));
          return settle;
        }
        requests = retry;
      }
    }
  }

  /** Appends staged events at their settled time; on failure puts the fold back before them. */
  async #appendStaged(staged: Staged, durable: boolean): Promise<RecordedTurnlogEvent[]> {
    try {
      if (this.announce !== undefined && (this.#version === 0 || staged.events.some((event) => isAlwaysSealed(event.type)))) {
        // Announced first, in order: after a crash the log never holds these events without it (docs/log.md, "Always-sealed events").
        await this.announce(sessionStream(this.sessionId), this.#version, staged.events);
      }
      const appended = await this.log.appendToStream(sessionStream(this.sessionId), staged.events, {
        expectedStreamVersion: this.#version,
        recordedAt: staged.recordedAt,
        ...(durable ? {} : { durable: false }),
      });
      this.#staged = undefined;
      const recorded = appendedEvents(staged.events, appended.events);
      const recordedAt = new Date(staged.recordedAt).toISOString();
      if (recorded.some((event) => event.meta.recordedAt !== recordedAt)) {
        // A log that does not take the settled time: fold what it recorded instead.
        this.#fold.restore(staged.before);
        this.#fold.applyAll(recorded);
      }
      const last = recorded.at(-1);
      if (last !== undefined) {
        this.#version = last.meta.streamPosition;
        this.#headHash = last.meta.hash;
      }
      this.#observe("recorded", recorded);
      this.#maybeSnapshot();
      return recorded;
    } catch (error) {
      this.#staged = undefined;
      this.#fold.restore(staged.before);
      if (ExpectedVersionConflictError.isInstance(error)) throw error;
      this.#failedAppends += 1;
      throw refused(this.sessionId, error);
    }
  }

  /** Drops the staged events and puts the fold back as it was before them. */
  discardStaged(): void {
    const staged = this.#staged;
    if (staged === undefined) return;
    this.#staged = undefined;
    this.#fold.restore(staged.before);
  }

  #observe(kind: "loaded" | "recorded", events: readonly RecordedTurnlogEvent[]): void {
    if (this.observer === undefined) return;
    try {
      this.observer[kind](this.sessionId, events);
    } catch {
      // Observing is never part of recording: the events are in the log already.
    }
  }

  /**
   * The time of the next staged batch, by the rule of recorded-time.ts: the wall clock, but never
   * before the stream's last `recordedAt` (what the fold holds, whoever appended it) nor before
   * that time plus the monotonic time elapsed since this store took it. The log applies the same
   * floor, so it records this very time.
   */
  #now(): number {
    const clock = this.log.clock ?? systemClock;
    const wall = clock.now();
    const monotonic = monotonicReading(clock);
    const last = this.#fold.state.lastRecordedAt;
    const lastMs = last === null ? Number.NaN : Date.parse(last);
    let anchor = this.#anchor;
    if (Number.isFinite(lastMs) && (anchor === undefined || lastMs > anchor.recordedAt)) anchor = { recordedAt: lastMs, monotonic };
    this.#anchor = advanceTime(wall, monotonic, anchor);
    return this.#anchor.recordedAt;
  }
}
