import type { Budgets } from "../contracts/budgets.js";
import type { TurnlogEvent } from "../contracts/events.js";
import { parseEvent } from "../contracts/events.js";
import type { PolicySnapshot } from "../contracts/policy.js";
import { isDeepStrictEqual } from "node:util";
import type { EventLog, RecordedEvent } from "../log/event-log.js";
import { SessionFold, type FoldCheckpoint } from "../core/session-fold.js";
import { sessionStream } from "../core/session-stream.js";
import { ExpectedVersionConflictError } from "../errors/expected-version-conflict-error.js";

export { sessionStream } from "../core/session-stream.js";

/**
 * How many lost races in a row one append (or one operation) carries on through before the
 * conflict is thrown after all. Each lost race means another writer appended — progress, not a
 * spin — so the bound only stops a host that keeps losing to a faster one.
 */
export const maxCarriedConflicts = 16;

/**
 * Whether every event this runtime builds is checked against the event schemas before it is
 * appended: on in the test suite (`TURNLOG_CHECK_EVENTS=1`, set by vitest.config.ts), off in use.
 * The events are built by this code and typed; parsing each one again on every append cost about
 * a tenth of a tool call (DESIGN.md §15), so the schemas are checked where data comes in — a log
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
 * One session's events and their fold: appends events with an exact expected version (a second
 * writer is detected, never interleaved), then folds what the log recorded.
 *
 * Decisions can also be staged: folded at once, so the next decision sees them, and appended
 * together by `flush` — one append for a run of pure decisions (DESIGN.md §15). Their
 * `recordedAt` is settled when the first is staged and the log records that time, so a decision
 * that reads time (the wall-clock budget) sees in the live run what replay sees in the log.
 */
export class SessionStore {
  readonly #fold = new SessionFold();
  #version = 0;
  #reloads = 0;
  /** Appends run one at a time: each carries the exact expected version of the one before. */
  #appending: Promise<unknown> = Promise.resolve();
  /** Events folded but not yet appended, the fold before them, and their settled time. */
  #staged: { events: TurnlogEvent[]; before: FoldCheckpoint; recordedAt: number } | undefined;

  private constructor(
    readonly log: EventLog,
    readonly sessionId: string,
  ) {}

  /** Loads a session by folding its stream (empty for a new session). */
  static async load(log: EventLog, sessionId: string): Promise<SessionStore> {
    const store = new SessionStore(log, sessionId);
    await store.reload();
    return store;
  }

  /**
   * Folds what the log holds beyond this store's version, for when another writer appended to the
   * stream (an append hit an `ExpectedVersionConflictError`, or the session is opened again): the
   * state is then the log's, not this process's stale copy. Only the new events are read — a
   * failed append folded nothing, so what the store holds is a prefix of the log. Call it only
   * while no append is in flight.
   */
  async reload(): Promise<void> {
    this.discardStaged();
    // Paged so a long session never sits in memory twice.
    const page = 10_000;
    for (;;) {
      const events = await this.log.readStream(sessionStream(this.sessionId), { from: this.#version + 1, maxCount: page });
      this.#fold.applyAll(events);
      const last = events.at(-1);
      if (last !== undefined) {
        this.#version = last.meta.streamPosition;
        this.#reloads += 1;
      }
      if (events.length < page) break;
    }
  }

  /** Whether the log holds events of this session that this store has not folded (another writer's). */
  async isBehind(): Promise<boolean> {
    const next = await this.log.readStream(sessionStream(this.sessionId), { from: this.#version + 1, maxCount: 1 });
    return next.length > 0;
  }

  /** The session's events folded: the projection, the open turn's machine, what is owed next. */
  get fold(): SessionFold {
    return this.#fold;
  }

  /** How many times a reload folded another writer's events: a caller's derived caches are stale when it moved. */
  get reloads(): number {
    return this.#reloads;
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

  /** Validates, appends atomically, folds. Resolves once the log acknowledged the append. */
  append(events: readonly TurnlogEvent[], options: { durable?: boolean } = {}): Promise<RecordedEvent[]> {
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
   */
  appendWith(
    build: () => readonly TurnlogEvent[],
    options: { durable?: boolean } | (() => { durable?: boolean }) = {},
    { carryOn = false }: { carryOn?: boolean } = {},
  ): Promise<RecordedEvent[]> {
    const result = this.#appending.then(async () => {
      for (let lost = 0; ; lost += 1) {
        const events = build();
        // Nothing was decided: nothing is written.
        if (events.length === 0) return [];
        try {
          return await this.#append(events, typeof options === "function" ? options() : options);
        } catch (error) {
          if (!carryOn || !ExpectedVersionConflictError.isInstance(error) || lost >= maxCarriedConflicts) throw error;
          // Inside the append chain: no other append of this store is in flight while it reloads.
          await this.reload();
        }
      }
    });
    this.#appending = result.catch(() => undefined);
    return result;
  }

  async #append(events: readonly TurnlogEvent[], options: { durable?: boolean }): Promise<RecordedEvent[]> {
    if (this.#staged !== undefined) throw new Error(`session ${this.sessionId}: staged events must be flushed before another append`);
    if (checkBuiltEvents) events.forEach(checkBuilt);
    const result = await this.log.appendToStream(sessionStream(this.sessionId), events, {
      expectedStreamVersion: this.#version,
      ...(options.durable === false ? { durable: false } : {}),
    });
    // One immer draft for the whole append.
    this.#fold.applyAll(result.events);
    const last = result.events.at(-1);
    if (last !== undefined) this.#version = last.meta.streamPosition;
    return result.events;
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
    if (events.length === 0) return;
    if (checkBuiltEvents) events.forEach(checkBuilt);
    const staged = (this.#staged ??= { events: [], before: this.#fold.checkpoint(), recordedAt: this.#now() });
    const recordedAt = new Date(staged.recordedAt).toISOString();
    const at = this.#fold.checkpoint();
    const first = this.#version + staged.events.length + 1;
    try {
      this.#fold.applyAll(
        events.map((event, index): RecordedEvent => ({
          type: event.type,
          // As the log stores it: the JSON form (undefined members gone).
          data: JSON.parse(JSON.stringify(event.data)) as unknown,
          meta: { eventId: "", stream: sessionStream(this.sessionId), streamPosition: first + index, globalPosition: 0, recordedAt, schemaVersion: 1, prevHash: "", hash: "" },
        })),
      );
    } catch (error) {
      this.#fold.restore(at);
      if (staged.events.length === 0) this.#staged = undefined;
      throw error;
    }
    staged.events.push(...events);
  }

  /**
   * Appends the staged events in one append, at their settled time. If the append fails (a lost
   * race, a storage error) the fold is put back as it was before them and the error thrown.
   */
  flush(options: { durable?: boolean } = {}): Promise<RecordedEvent[]> {
    const staged = this.#staged;
    if (staged === undefined) return Promise.resolve([]);
    const result = this.#appending.then(async () => {
      try {
        const appended = await this.log.appendToStream(sessionStream(this.sessionId), staged.events, {
          expectedStreamVersion: this.#version,
          recordedAt: staged.recordedAt,
          ...(options.durable === false ? { durable: false } : {}),
        });
        this.#staged = undefined;
        const recordedAt = new Date(staged.recordedAt).toISOString();
        if (appended.events.some((event) => event.meta.recordedAt !== recordedAt)) {
          // A log that does not take the settled time: fold what it recorded instead.
          this.#fold.restore(staged.before);
          this.#fold.applyAll(appended.events);
        }
        const last = appended.events.at(-1);
        if (last !== undefined) this.#version = last.meta.streamPosition;
        return appended.events;
      } catch (error) {
        this.#staged = undefined;
        this.#fold.restore(staged.before);
        throw error;
      }
    });
    this.#appending = result.catch(() => undefined);
    return result;
  }

  /** Drops the staged events and puts the fold back as it was before them. */
  discardStaged(): void {
    const staged = this.#staged;
    if (staged === undefined) return;
    this.#staged = undefined;
    this.#fold.restore(staged.before);
  }

  #now(): number {
    return (this.log.clock ?? Date).now();
  }
}
