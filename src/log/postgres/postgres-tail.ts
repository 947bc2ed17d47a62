import { createHash } from "node:crypto";
import type pg from "pg";
import type { RecordedEvent, SubscribeOptions } from "../event-log.js";
import { tellEnded, type ListenerErrorHandler } from "../subscriber-registry.js";
import type { PgDriver } from "./pg-driver.js";

interface Subscription {
  listener: (event: RecordedEvent) => void;
  stream: string | undefined;
  /** This process's own appends up to here resolved before the subscription: not told. */
  localUpTo: number;
  onEnd: ((error?: unknown) => void) | undefined;
}

/** How many of this process's recent appends are remembered (see `#localAppends`). */
const LOCAL_APPENDS_KEPT = 1_024;

interface Waiter {
  position: number;
  resolve(): void;
}

export interface PostgresTailOptions {
  pollIntervalMs: number;
  pageSize: number;
  onListenerError?: ListenerErrorHandler;
}

/** How long an append waits for its own events to reach this process's subscribers. */
const DELIVERY_WAIT_MS = 5_000;

/**
 * The live tail of a PostgreSQL log: one reader per log handle, running only while someone is
 * subscribed. It reads the global order with the snapshot-xmin rule (only rows whose transaction
 * is older than every running one, so a row that commits late is never passed), wakes on the
 * schema's `NOTIFY` channel, and polls when no notification comes (a lost connection, a proxy
 * that drops them).
 *
 * Why this is written by hand: node-postgres has no subscription helper, and libraries that
 * tail tables (pg-listen, graphile-worker) tail their own shapes, not this global order.
 */
export class PostgresTail {
  /** The `LISTEN/NOTIFY` channel of the schema (at most 63 bytes, as identifiers are). */
  readonly channel: string;
  readonly #subscriptions = new Set<Subscription>();
  readonly #waiters: Waiter[] = [];
  /**
   * Every event at or below this position has been told to the subscribers (or was before them).
   * Always a safe position (nothing below it can still commit); `undefined` until the tail's first
   * round has read one from the server.
   */
  #cursor: number | undefined;
  /** The highest position this process has appended. */
  #knownHead = 0;
  /** A safe position this process once read (on open, or where the tail stopped). */
  #knownSafe = 0;
  /** Where a starting tail may begin at the latest: what this process knew when it subscribed. */
  #startCeiling = 0;
  /**
   * This process's recent appends, as [first, last] position ranges. A subscription starts at the
   * server's safe position, which may be below appends this process made before subscribing
   * (an older transaction elsewhere was still running); those are not told to it. Only the most
   * recent ones are kept: an older append is long below any safe position.
   */
  readonly #localAppends: Array<[number, number]> = [];
  #running: Promise<void> | undefined;
  #wake: (() => void) | undefined;
  #poked = false;
  #closed = false;
  #listener: pg.Client | undefined;

  constructor(
    /** node-postgres, loaded by the log that owns this tail. */
    private readonly driver: PgDriver,
    private readonly pool: pg.Pool,
    private readonly schema: string,
    private readonly options: PostgresTailOptions,
  ) {
    const name = `turnlog:${schema}`;
    this.channel = Buffer.byteLength(name) <= 63 ? name : `turnlog:${createHash("sha256").update(schema).digest("hex").slice(0, 32)}`;
  }

  /** Records a position below which nothing can still commit (read on open). */
  noteSafe(position: number): void {
    if (position > this.#knownSafe) this.#knownSafe = position;
  }

  /** Records an append of this process (positions `first`..`last`), resolved to its caller now. */
  noteAppend(first: number, last: number): void {
    if (last > this.#knownHead) this.#knownHead = last;
    this.#localAppends.push([first, last]);
    if (this.#localAppends.length > LOCAL_APPENDS_KEPT) this.#localAppends.shift();
  }

  add(listener: (event: RecordedEvent) => void, options?: SubscribeOptions): () => void {
    if (typeof listener !== "function") throw new TypeError("subscribe takes a listener function");
    const stream = options?.stream;
    if (stream !== undefined && typeof stream !== "string") throw new TypeError("subscribe's stream must be a string");
    const onEnd = options?.onEnd;
    if (onEnd !== undefined && typeof onEnd !== "function") throw new TypeError("subscribe's onEnd must be a function");
    const subscription: Subscription = { listener, stream, localUpTo: this.#knownHead, onEnd };
    // The first subscriber of a stopped tail. Its first round starts at the server's safe
    // position then, or earlier: at what this process knew now. Starting at the position then
    // alone would skip an event that committed between this call and that round.
    if (this.#subscriptions.size === 0 && this.#running === undefined) {
      this.#cursor = undefined;
      this.#startCeiling = Math.max(this.#knownSafe, this.#knownHead);
    }
    this.#subscriptions.add(subscription);
    this.#start();
    return () => {
      this.#subscriptions.delete(subscription);
      this.#poke();
    };
  }

  /**
   * Resolves once every subscriber of this process has been told of the events up to
   * `position` (at once when there is none). Bounded: an unrelated transaction left open holds
   * the global order back, and an append must not hang on it; its subscribers hear later.
   */
  async deliveredThrough(position: number): Promise<void> {
    if (this.#subscriptions.size === 0 || (this.#cursor ?? 0) >= position || this.#closed) return;
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, DELIVERY_WAIT_MS);
      timer.unref();
      this.#waiters.push({
        position,
        resolve: () => {
          clearTimeout(timer);
          resolve();
        },
      });
      this.#poke();
    });
  }

  async close(): Promise<void> {
    this.#closed = true;
    const ending = [...this.#subscriptions];
    this.#subscriptions.clear();
    tellEnded(ending);
    this.#poke();
    await this.#running;
  }

  #start(): void {
    if (this.#running !== undefined || this.#closed) return;
    this.#running = this.#run().finally(() => {
      this.#running = undefined;
      this.#settleWaiters(true);
      if (this.#subscriptions.size > 0 && !this.#closed) this.#start();
    });
  }

  #poke(): void {
    this.#poked = true;
    this.#wake?.();
  }

  async #run(): Promise<void> {
    let pause = 1;
    try {
      while (this.#subscriptions.size > 0 && !this.#closed) {
        await this.#ensureListening();
        this.#poked = false;
        let rows: Array<{ event: string; global_position: string }>;
        try {
          this.#cursor ??= Math.min(await this.safePosition(), this.#startCeiling);
          ({ rows } = await this.pool.query<{ event: string; global_position: string }>(
            `SELECT global_position, event::text AS event FROM ${this.driver.escapeIdentifier(this.schema)}.events
             WHERE global_position > $1 AND transaction_id < pg_snapshot_xmin(pg_current_snapshot())
             ORDER BY global_position LIMIT ${this.options.pageSize}`,
            [this.#cursor],
          ));
        } catch {
          // The server is unreachable for now: try again at the next poll.
          await this.#sleep(this.options.pollIntervalMs);
          continue;
        }
        for (const row of rows) this.#deliver(JSON.parse(row.event) as RecordedEvent);
        this.#settleWaiters(false);
        if (rows.length === this.options.pageSize) continue;
        if (this.#waiters.length > 0) {
          // An append of this process is committed but not yet readable: an older transaction is
          // still running. It is short-lived (an append), so look again soon.
          await this.#sleep(pause);
          pause = Math.min(pause * 2, 50);
          continue;
        }
        pause = 1;
        if (!this.#poked) await this.#sleep(this.options.pollIntervalMs);
      }
    } finally {
      if (this.#cursor !== undefined) this.noteSafe(this.#cursor);
      await this.#stopListening();
    }
  }

  /** The highest position below which nothing can still commit (0 for an empty log). */
  async safePosition(): Promise<number> {
    const { rows } = await this.pool.query<{ safe: string | null }>(
      `SELECT max(global_position) AS safe FROM ${this.driver.escapeIdentifier(this.schema)}.events WHERE transaction_id < pg_snapshot_xmin(pg_current_snapshot())`,
    );
    return rows[0]?.safe === null || rows[0]?.safe === undefined ? 0 : Number(rows[0].safe);
  }

  #isLocalAppend(position: number): boolean {
    return this.#localAppends.some(([first, last]) => first <= position && position <= last);
  }

  #deliver(event: RecordedEvent): void {
    const position = event.meta.globalPosition;
    this.#cursor = Math.max(this.#cursor ?? 0, position);
    // An event at or below a subscription's start that another process appended may have
    // committed after it subscribed (late, below later positions): it is told, never skipped.
    const local = this.#isLocalAppend(position);
    for (const subscription of [...this.#subscriptions]) {
      if (!this.#subscriptions.has(subscription)) continue;
      if (local && position <= subscription.localUpTo) continue;
      if (subscription.stream !== undefined && subscription.stream !== event.meta.stream) continue;
      try {
        subscription.listener(event);
      } catch (error) {
        try {
          this.options.onListenerError?.(error, event);
        } catch {
          // Nobody is left to tell; the append stands.
        }
      }
    }
  }

  #settleWaiters(all: boolean): void {
    for (let index = this.#waiters.length - 1; index >= 0; index -= 1) {
      const waiter = this.#waiters[index];
      if (waiter !== undefined && (all || waiter.position <= (this.#cursor ?? 0) || this.#subscriptions.size === 0)) {
        this.#waiters.splice(index, 1);
        waiter.resolve();
      }
    }
  }

  async #sleep(ms: number): Promise<void> {
    if (this.#poked || this.#closed) return;
    await new Promise<void>((resolve) => {
      const timer = setTimeout(done, ms);
      function done(): void {
        clearTimeout(timer);
        resolve();
      }
      this.#wake = done;
    });
    this.#wake = undefined;
  }

  async #ensureListening(): Promise<void> {
    if (this.#listener !== undefined) return;
    // A connection of its own, outside the pool: it is held for as long as someone subscribes,
    // and a pool of one connection would otherwise have none left for appends.
    const client = new this.driver.Client(this.pool.options);
    client.on("notification", (message) => {
      if (message.channel === this.channel) this.#poke();
    });
    client.on("error", () => {
      // The connection broke: polling carries on, and the next round listens again.
      if (this.#listener === client) this.#listener = undefined;
      void client.end().catch(() => undefined);
    });
    try {
      await client.connect();
      await client.query(`LISTEN ${this.driver.escapeIdentifier(this.channel)}`);
      this.#listener = client;
    } catch {
      await client.end().catch(() => undefined);
    }
  }

  async #stopListening(): Promise<void> {
    const client = this.#listener;
    this.#listener = undefined;
    await client?.end().catch(() => undefined);
  }
}
