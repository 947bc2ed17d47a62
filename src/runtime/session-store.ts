import type { Budgets } from "../contracts/budgets.js";
import type { TurnlogEvent } from "../contracts/events.js";
import { parseEvent } from "../contracts/events.js";
import type { PolicySnapshot } from "../contracts/policy.js";
import type { EventLog, RecordedEvent } from "../log/event-log.js";
import { SessionFold } from "../core/session-fold.js";
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
 * One session's events and their fold: appends validated events with an exact expected version
 * (a second writer is detected, never interleaved), then folds what the log recorded.
 */
export class SessionStore {
  readonly #fold = new SessionFold();
  #version = 0;
  #reloads = 0;
  /** Appends run one at a time: each carries the exact expected version of the one before. */
  #appending: Promise<unknown> = Promise.resolve();

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
    const validated = events.map((event) => parseEvent(event));
    const result = await this.log.appendToStream(sessionStream(this.sessionId), validated, {
      expectedStreamVersion: this.#version,
      ...(options.durable === false ? { durable: false } : {}),
    });
    for (const recorded of result.events) this.#foldOne(recorded);
    return result.events;
  }

  #foldOne(event: RecordedEvent): void {
    this.#fold.apply(event);
    this.#version = event.meta.streamPosition;
  }
}
