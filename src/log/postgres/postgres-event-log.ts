import type pg from "pg";
import {
  ExpectedVersionConflictError,
  NO_CONCURRENCY_CHECK,
  STREAM_DOES_NOT_EXIST,
  STREAM_EXISTS,
} from "../../errors/expected-version-conflict-error.js";
import type { ExpectedStreamVersion } from "../../errors/expected-version-conflict-error.js";
import { LogClosedError } from "../../errors/log-closed-error.js";
import { LogCorruptedError } from "../../errors/log-corrupted-error.js";
import { LogStalledError } from "../../errors/log-stalled-error.js";
import type {
  AppendOptions,
  AppendResult,
  Clock,
  EventLog,
  EventToAppend,
  IdSource,
  LogLease,
  ReadAllOptions,
  ReadStreamOptions,
  RecordedEvent,
  SessionLeases,
  SubscribeOptions,
  VerifyReport,
} from "../event-log.js";
import { assertRecordedAt, assertStreamName, prepareEvents, randomIds, recordEvents, systemClock } from "../event-recording.js";
import type { PreparedEvent } from "../event-recording.js";
import { assertExpectedStreamVersion, findVersionConflict } from "../expected-version.js";
import { ChainVerifier, EMPTY_STREAM_HEAD, verifyStreams } from "../hash-chain.js";
import type { ChainVerification, StreamHead } from "../hash-chain.js";
import { StreamTimes } from "../recorded-time.js";
import { resolveReadAll, resolveStreamWindow } from "../read-options.js";
import type { ListenerErrorHandler } from "../subscriber-registry.js";
import { assertCurrentSchema, assertSchemaName, migrateSchema } from "./postgres-migrations.js";
import { PostgresTail } from "./postgres-tail.js";
import { loadPg, type PgDriver } from "./pg-driver.js";
import { connectionPasswords, poolAddress, urlWithoutPassword } from "./connection-string.js";
import type { PostgresPool } from "./postgres-pool.js";
import { PostgresSnapshotStore } from "./postgres-snapshot-store.js";
import { logUnavailable, type UnavailableContext } from "./postgres-unavailable.js";

/** Options of {@link PostgresEventLog.open}. */
export interface PostgresEventLogOptions {
  /** The schema holding the log's tables. Default `turnlog`. One database can hold many logs. */
  schema?: string;
  /** Connections in the pool this log creates from a URL (ignored for a pool you pass). Default 10. */
  poolSize?: number;
  /** Apply missing migrations on open. Default true; `false` refuses a schema that is not current. */
  migrate?: boolean;
  /** Where `recordedAt` comes from. Default: the system clock. */
  clock?: Clock;
  /** Where event IDs come from. Default: `crypto.randomUUID`. */
  ids?: IdSource;
  /** Told about a subscriber that threw. Default: ignore it (the append has committed anyway). */
  onListenerError?: ListenerErrorHandler;
  /** How often a subscription polls when no notification arrives. Default 1 000 ms. */
  pollIntervalMs?: number;
  /**
   * How long `readAll` waits for a transaction left open on the server (older than the events it
   * must return next) before it throws `LogStalledError`. Default 30 000 ms.
   */
  stallTimeoutMs?: number;
}

interface StreamRow {
  version: string;
  head_hash: string;
}

/** Rows read per query by `readAll`, `verify` and the live tail. */
const PAGE_SIZE = 1_000;

/** The most streams whose time (recorded-time.ts) a PostgresEventLog keeps between appends. */
const maxTimedStreams = 4096;

/**
 * The {@link EventLog} on PostgreSQL: many processes, on many machines, share one log.
 *
 * - One append is one transaction. Its stream is locked for the transaction (an advisory
 *   transaction lock on the stream, then its head row is read), the expected version is checked
 *   against that head, and a unique `(stream_id, stream_position)` backs the check in the
 *   database itself. A conflict carries the stream's real version.
 * - Global positions are reserved together with the transaction ID (see `reserve_positions` in
 *   the migrations), so readers of the global order can use the snapshot-xmin technique: they
 *   return only events whose transaction is older than every transaction still running, and so
 *   never pass an event that commits late. Positions increase strictly; an append that fails
 *   after reserving leaves a gap.
 * - `durable: false` commits with `synchronous_commit = off`: the commit returns before its WAL
 *   reaches disk (a server crash may lose it, never corrupt the log).
 * - `subscribe` follows the global order through `LISTEN/NOTIFY`, polling when no notification
 *   comes, so it sees appends made by every process.
 *
 * @example
 * const log = await PostgresEventLog.open("postgres://turnlog@db.internal/agents"); // password from PGPASSWORD or ~/.pgpass
 * await log.appendToStream("session-s1", [{ type: "session.opened", data: {} }]);
 * await log.close();
 */
export class PostgresEventLog implements EventLog, SessionLeases {
  /** node-postgres, loaded by `open`. */
  readonly #driver: PgDriver;
  readonly #pool: pg.Pool;
  readonly #ownsPool: boolean;
  readonly #s: string;
  readonly #clock: Clock;
  /** Where `recordedAt` comes from. */
  get clock(): Clock {
    return this.#clock;
  }
  /** Each stream's time (recorded-time.ts), told the stream's last stored time on every append. */
  readonly #times: StreamTimes;
  readonly #ids: IdSource;
  readonly #tail: PostgresTail;
  readonly #stallTimeoutMs: number;
  /** Where the log is and which passwords to keep out of a `LogUnavailableError`. */
  readonly #unavailable: UnavailableContext;
  #leasePool: pg.Pool | undefined;
  /** Appends (and reads) under way, so that `close()` lets them finish. */
  readonly #inFlight = new Set<Promise<unknown>>();
  /** Settles when the latest append of this process has reserved its positions (or gave up). */
  #reservationTurn: Promise<void> = Promise.resolve();
  #closed = false;
  #closing: Promise<void> | undefined;
  /** Projection snapshots, in tables of the log's schema (PostgresSnapshotStore). */
  readonly snapshots: PostgresSnapshotStore;

  private constructor(
    driver: PgDriver,
    pool: pg.Pool,
    ownsPool: boolean,
    /** The schema holding this log. */
    readonly schema: string,
    /** Where the log is, for messages: the URL without its password, and the schema. */
    readonly location: string,
    options: PostgresEventLogOptions,
  ) {
    this.#driver = driver;
    this.#pool = pool;
    this.#ownsPool = ownsPool;
    this.#s = driver.escapeIdentifier(schema);
    this.#clock = options.clock ?? systemClock;
    this.#times = new StreamTimes(this.#clock);
    this.#ids = options.ids ?? randomIds;
    this.#stallTimeoutMs = options.stallTimeoutMs ?? 30_000;
    this.#unavailable = { location, passwords: connectionPasswords(pool.options) };
    this.snapshots = new PostgresSnapshotStore(pool, this.#s);
    this.#tail = new PostgresTail(driver, pool, schema, {
      pollIntervalMs: options.pollIntervalMs ?? 1_000,
      pageSize: PAGE_SIZE,
      ...(options.onListenerError === undefined ? {} : { onListenerError: options.onListenerError }),
    });
  }

  /**
   * Opens the log in `schema` (default `turnlog`) of the database at `urlOrPool`, creating or
   * migrating its tables. A URL gets a pool of its own (closed by `close()`); a pool you pass
   * stays yours. The password is best kept out of the URL (`PGPASSWORD`, `~/.pgpass`): turnlog
   * never prints one, but a URL travels through shells and process lists. A server that cannot
   * be reached or refuses the login, a missing database or a missing privilege is a
   * `LogUnavailableError` (here and in every later operation), without the password.
   *
   * @example
   * const log = await PostgresEventLog.open(process.env.DATABASE_URL!, { schema: "agents" });
   */
  static async open(urlOrPool: string | PostgresPool, options: PostgresEventLogOptions = {}): Promise<PostgresEventLog> {
    const schema = options.schema ?? "turnlog";
    assertSchemaName(schema);
    const poolSize = options.poolSize ?? 10;
    if (!Number.isSafeInteger(poolSize) || poolSize < 1) throw new TypeError(`poolSize must be a positive integer, got ${String(poolSize)}`);
    const driver = await loadPg();
    let pool: pg.Pool;
    let location: string;
    if (typeof urlOrPool === "string") {
      if (!/^postgres(ql)?:\/\//.test(urlOrPool)) throw new TypeError("PostgresEventLog.open takes a postgres:// URL or a pg.Pool");
      pool = new driver.Pool({ connectionString: urlOrPool, max: poolSize, application_name: "turnlog" });
      // An idle connection that breaks (a server restart) is dropped from the pool; the next
      // query opens a new one. Without a listener, node-postgres would crash the process.
      pool.on("error", () => {});
      location = `${urlWithoutPassword(urlOrPool)} (schema ${schema})`;
    } else if (urlOrPool instanceof driver.Pool) {
      pool = urlOrPool;
      location = `${poolAddress(pool.options)} (schema ${schema})`;
    } else {
      throw new TypeError("PostgresEventLog.open takes a postgres:// URL or a pg.Pool");
    }
    const unavailable: UnavailableContext = { location, passwords: connectionPasswords(pool.options) };
    try {
      if (options.migrate === false) {
        await assertCurrentSchema(pool, schema);
      } else {
        await migrateSchema(pool, schema);
      }
    } catch (error) {
      if (typeof urlOrPool === "string") await pool.end().catch(() => undefined);
      throw logUnavailable(error, unavailable, "open") ?? error;
    }
    const log = new PostgresEventLog(driver, pool, typeof urlOrPool === "string", schema, location, options);
    try {
      log.#tail.noteSafe(await log.#tail.safePosition());
    } catch (error) {
      await log.close().catch(() => undefined);
      throw logUnavailable(error, unavailable, "open") ?? error;
    }
    return log;
  }

  /**
   * Appends in one transaction. Resolves once it is committed (and, when someone subscribed in
   * this process, once the subscribers were told); rejects with `ExpectedVersionConflictError`
   * carrying the stream's real version, or with the database's error (then nothing was written).
   */
  async appendToStream(stream: string, events: readonly EventToAppend[], options?: AppendOptions): Promise<AppendResult> {
    this.#assertOpen();
    assertStreamName(stream);
    const expected = options?.expectedStreamVersion;
    assertExpectedStreamVersion(expected);
    const durable = options?.durable ?? true;
    if (typeof durable !== "boolean") throw new TypeError("durable must be a boolean");
    const recordedAt = options?.recordedAt;
    assertRecordedAt(recordedAt);
    const prepared = prepareEvents(events);
    // Appends of this process take their positions in call order: each waits until the one
    // before it has reserved its positions (or given up). Only that short phase is ordered; the
    // inserts and commits (the slow, synced part) run in parallel. Nothing waits here while
    // holding a database lock, so processes waiting on each other's locks cannot deadlock.
    const turn = this.#reservationTurn;
    let passTurn!: () => void;
    this.#reservationTurn = new Promise<void>((resolve) => {
      passTurn = resolve;
    });
    const result = await this.#track("appendToStream", turn.then(() => this.#append(stream, prepared, expected, durable, passTurn, recordedAt)));
    // Subscribers in this process see the events before the appender continues, as on LevelDB.
    if (result.events.length > 0) {
      const first = result.events[0]?.meta.globalPosition ?? result.lastGlobalPosition;
      await this.#tail.deliveredThrough(result.lastGlobalPosition);
      this.#tail.noteAppend(first, result.lastGlobalPosition);
    }
    return result;
  }

  async readStream(stream: string, options?: ReadStreamOptions): Promise<RecordedEvent[]> {
    this.#assertOpen();
    assertStreamName(stream);
    const window = resolveStreamWindow(options);
    if (window === undefined) return [];
    const { rows } = await this.#track(
      "readStream",
      this.#pool.query<{ event: string }>(
        `SELECT event::text AS event FROM ${this.#s}.events WHERE stream_id = $1 AND stream_position BETWEEN $2 AND $3
         ORDER BY stream_position ${window.backwards ? "DESC" : "ASC"} ${Number.isFinite(window.limit) ? "LIMIT $4" : ""}`,
        Number.isFinite(window.limit) ? [stream, window.low, window.high, window.limit] : [stream, window.low, window.high],
      ),
    );
    return rows.map((row) => parseStoredEvent(row.event, stream));
  }

  readAll(options?: ReadAllOptions): AsyncIterable<RecordedEvent> {
    const { after, limit } = resolveReadAll(options);
    return this.#iterateAll(after, limit);
  }

  async streamVersion(stream: string): Promise<number> {
    this.#assertOpen();
    assertStreamName(stream);
    const { rows } = await this.#track("streamVersion", this.#pool.query<StreamRow>(`SELECT version FROM ${this.#s}.streams WHERE stream_id = $1`, [stream]));
    return rows.length === 0 ? 0 : Number(rows[0]?.version);
  }

  async streamExists(stream: string): Promise<boolean> {
    return (await this.streamVersion(stream)) > 0;
  }

  async listStreams(): Promise<string[]> {
    this.#assertOpen();
    const { rows } = await this.#track("listStreams", this.#pool.query<{ stream_id: string }>(`SELECT stream_id FROM ${this.#s}.streams WHERE version > 0`));
    // Sorted here, by UTF-16 code units, as every other backend sorts (a collation would differ).
    return rows.map((row) => row.stream_id).sort();
  }

  subscribe(listener: (event: RecordedEvent) => void, options?: SubscribeOptions): () => void {
    this.#assertOpen();
    return this.#tail.add(listener, options);
  }

  /** Walks each stream's chain a page at a time from the stored JSON text, then checks its head. */
  async verify(options?: { stream?: string }): Promise<VerifyReport> {
    this.#assertOpen();
    const streams = options?.stream === undefined ? await this.listStreams() : [options.stream];
    return verifyStreams(streams, (stream) => {
      assertStreamName(stream);
      return this.#track("verify", this.#verifyStream(stream));
    });
  }

  /** Lets appends and reads under way finish, stops the live tail, and ends the pool it owns. */
  async close(): Promise<void> {
    this.#closed = true;
    this.#closing ??= (async () => {
      // A snapshot being written finishes first; none is written after (they are only a cache).
      await this.snapshots.close();
      while (this.#inFlight.size > 0) await Promise.allSettled([...this.#inFlight]);
      await this.#tail.close();
      await this.#leasePool?.end();
      if (this.#ownsPool) await this.#pool.end();
    })();
    return this.#closing;
  }

  /**
   * The pool this log queries through. Typed as {@link PostgresPool} so that turnlog's types stand
   * without `@types/pg`; it is a `pg.Pool` (`log.pool as pg.Pool` for the rest of its API).
   */
  get pool(): PostgresPool {
    return this.#pool;
  }

  /**
   * Takes the lease `name` (the runtime leases a session while it drives it) if no connection to
   * this database holds it: a session-level `pg_try_advisory_lock` on a connection of the leases'
   * own pool, beside the appends' pool (a lease held per session must not starve the appends of
   * connections), kept for as long as the lease is held. `release()` unlocks it and gives the
   * connection back. A lost connection — a
   * crashed process, a network failure — releases the lock on the server by itself; the holder
   * may then still be running, and append-before-act decides between it and the next holder. The
   * key is `hashtextextended('turnlog.lease:<schema>:<name>', 0)`, apart from the keys appends
   * lock their streams with.
   *
   * @example
   * const lease = await log.tryLease("session-s1");
   * if (lease === undefined) throw new Error("another process drives s1");
   * try { … } finally { await lease.release(); }
   */
  async tryLease(name: string): Promise<LogLease | undefined> {
    this.#assertOpen();
    if (typeof name !== "string" || name === "") throw new TypeError("a lease name is a non-empty string");
    const key = `turnlog.lease:${this.schema}:${name}`;
    const client = await this.#leases()
      .connect()
      .catch((error: unknown) => {
        throw logUnavailable(error, this.#unavailable, "tryLease") ?? error;
      });
    // A connection that breaks emits "error"; without a listener it would crash the process.
    // The server has then released the lock; the connection is discarded.
    let broken = false;
    const onError = () => {
      broken = true;
    };
    client.on("error", onError);
    const giveBack = (discard: boolean) => {
      client.off("error", onError);
      client.release(discard || broken);
    };
    let held = false;
    try {
      const { rows } = await client.query<{ held: boolean }>("SELECT pg_try_advisory_lock(hashtextextended($1, 0)) AS held", [key]);
      held = rows[0]?.held === true;
    } catch (error) {
      giveBack(true);
      throw logUnavailable(error, this.#unavailable, "tryLease") ?? error;
    }
    if (!held) {
      giveBack(false);
      return undefined;
    }
    let released: Promise<void> | undefined;
    return {
      name,
      release: () =>
        (released ??= (async () => {
          // A connection whose unlock failed may still hold the lock: it is closed, never reused
          // (closing it releases the lock on the server).
          const unlocked = !broken && (await client.query("SELECT pg_advisory_unlock(hashtextextended($1, 0))", [key]).then(() => true, () => false));
          giveBack(!unlocked);
        })()),
    };
  }

  /**
   * The connections leases are held on: a pool of their own, beside the appends' pool, so that
   * sessions driven at once never starve appends of connections, and a lease taken per operation
   * reuses a connection instead of opening one.
   */
  #leases(): pg.Pool {
    if (this.#leasePool === undefined) {
      this.#leasePool = new this.#driver.Pool({ ...this.#pool.options, max: 1_000, idleTimeoutMillis: 10_000, allowExitOnIdle: true });
      this.#leasePool.on("error", () => {});
    }
    return this.#leasePool;
  }

  async #append(
    stream: string,
    prepared: PreparedEvent[],
    expected: ExpectedStreamVersion | undefined,
    durable: boolean,
    passTurn: () => void,
    recordedAt: number | undefined,
  ): Promise<AppendResult> {
    let client: pg.PoolClient;
    try {
      client = await this.#pool.connect();
    } catch (error) {
      passTurn();
      throw error;
    }
    let broken = false;
    // A connection the server ends (a restart, pg_terminate_backend) emits "error" on its client,
    // even while a query runs; with no listener, node-postgres would crash the process. The query
    // under way rejects anyway, and the connection is discarded below.
    const onBroken = () => {
      broken = true;
    };
    client.on("error", onBroken);
    let reserving = false;
    try {
      try {
        // Round trip 1: BEGIN and `begin_append` — the stream's advisory transaction lock (not a
        // row lock: that would take a transaction ID before the positions are reserved, and the
        // global order's readers need IDs that grow with positions), its head, the expected
        // version, and the positions when it holds. Sent as one simple query, so values are
        // literals, each escaped by node-postgres.
        reserving = true;
        // The stream's last recordedAt comes along (under the stream's lock, so it is the head's):
        // another host may have appended to the stream, and its next event is never recorded before it.
        const begun = await client.query(
          `BEGIN;${durable ? "" : " SET LOCAL synchronous_commit = off;"} SELECT head_version, head_hash_now, first_position FROM ${this.#s}.begin_append(${this.#driver.escapeLiteral(stream)}, ${prepared.length}, ${this.#driver.escapeLiteral(expectedForSql(expected))}); ` +
            `SELECT (extract(epoch FROM e.recorded_at) * 1000)::float8 AS last_ms FROM ${this.#s}.events e JOIN ${this.#s}.streams st ON st.stream_id = e.stream_id AND st.version = e.stream_position WHERE st.stream_id = ${this.#driver.escapeLiteral(stream)}`,
        );
        reserving = false;
        passTurn();
        const results = Array.isArray(begun) ? begun : [begun];
        const row = (results[results.length - 2] as pg.QueryResult<{ head_version: string; head_hash_now: string; first_position: string | null }> | undefined)?.rows[0];
        if (row === undefined) throw new TypeError("begin_append returned no row");
        const lastMs = lastResult<{ last_ms: number | null }>(begun).rows[0]?.last_ms;
        // Told before every append, so the times of other streams need not be kept: bounded.
        this.#times.trim(maxTimedStreams);
        if (typeof lastMs === "number") this.#times.observe(stream, lastMs);
        const head: StreamHead = { version: Number(row.head_version), hash: row.head_hash_now };
        const conflict = findVersionConflict(stream, expected, head.version);
        if (conflict !== undefined) throw conflict;
        if (prepared.length === 0 || row.first_position === null) {
          await client.query("ROLLBACK");
          return { nextExpectedStreamVersion: head.version, lastGlobalPosition: await this.#lastPosition(client), events: [] };
        }
        const appended = recordEvents(stream, head, Number(row.first_position) - 1, prepared, this.#times, this.#ids, recordedAt);
        const events = appended.events;
        const array = (values: readonly (string | number)[], type: string) =>
          `ARRAY[${values.map((value) => (typeof value === "number" ? String(value) : this.#driver.escapeLiteral(value))).join(", ")}]::${type}[]`;
        // Round trip 2: the rows, the head and the notice, then COMMIT. If `write_events` fails,
        // the COMMIT after it is not run, and the transaction is rolled back below.
        await client.query(
          `SELECT ${this.#s}.write_events(${this.#driver.escapeLiteral(stream)}, ${head.version}, ${appended.head.version}, ${this.#driver.escapeLiteral(appended.head.hash)}, ` +
            `${array(events.map((event) => event.meta.globalPosition), "bigint")}, ${array(events.map((event) => event.meta.streamPosition), "bigint")}, ` +
            `${array(events.map((event) => event.meta.eventId), "text")}, ${array(events.map((event) => event.type), "text")}, ` +
            `${array(events.map((event) => event.meta.recordedAt), "timestamptz")}, ${array(appended.raws, "text")}, ${this.#driver.escapeLiteral(this.#tail.channel)}); COMMIT`,
        );
        return { nextExpectedStreamVersion: appended.head.version, lastGlobalPosition: appended.lastGlobalPosition, events };
      } catch (error) {
        await client.query("ROLLBACK").catch(() => undefined);
        if (isLostRace(error)) {
          // Another writer got past the lock (one that does not take it): the database's unique
          // position and the head check are the last word, and the caller hears the real version.
          throw new ExpectedVersionConflictError(stream, expected ?? NO_CONCURRENCY_CHECK, await this.streamVersion(stream));
        }
        throw error;
      }
    } catch (error) {
      // After any other failure the connection's state is unknown (it may even hold the
      // reservation lock, had the reservation failed half-way): it is closed, never handed to
      // the next append.
      broken ||= reserving || !ExpectedVersionConflictError.isInstance(error);
      throw error;
    } finally {
      passTurn();
      client.off("error", onBroken);
      client.release(broken);
    }
  }

  async #lastPosition(client: pg.PoolClient | pg.Pool): Promise<number> {
    const { rows } = await client.query<{ last: string | null }>(`SELECT max(global_position) AS last FROM ${this.#s}.events`);
    return rows[0]?.last === null || rows[0]?.last === undefined ? 0 : Number(rows[0].last);
  }

  async *#iterateAll(after: number, limit: number): AsyncGenerator<RecordedEvent> {
    this.#assertOpen();
    // The end is fixed when reading starts (what had committed then), so a reader that appends
    // as it goes still finishes; events below it that are still being written are waited for.
    const end = Math.min(await this.#track("readAll", this.#lastPosition(this.#pool)), after + limit);
    let cursor = after;
    let waitedMs = 0;
    let pause = 2;
    while (cursor < end) {
      this.#assertOpen();
      const { rows } = await this.#track(
        "readAll",
        this.#pool.query<{ event: string; global_position: string }>(
          `SELECT global_position, event::text AS event FROM ${this.#s}.events
           WHERE global_position > $1 AND global_position <= $2 AND transaction_id < pg_snapshot_xmin(pg_current_snapshot())
           ORDER BY global_position LIMIT ${PAGE_SIZE}`,
          [cursor, end],
        ),
      );
      for (const row of rows) {
        this.#assertOpen();
        yield parseStoredEvent(row.event, `global position ${row.global_position}`);
      }
      if (rows.length > 0) {
        cursor = Number(rows[rows.length - 1]?.global_position);
        waitedMs = 0;
        pause = 2;
        continue;
      }
      // Nothing is safe to return yet: a transaction older than the ones that wrote the rest is
      // still running (it may be writing an event below them). Wait for it, within reason.
      if (waitedMs >= this.#stallTimeoutMs) throw new LogStalledError(this.location, cursor, await this.#oldestOpenTransaction(), waitedMs);
      await new Promise((resolve) => setTimeout(resolve, pause));
      waitedMs += pause;
      pause = Math.min(pause * 2, 100);
    }
  }

  /** What the server says of the transaction holding the global order back, for the error. */
  async #oldestOpenTransaction(): Promise<string> {
    try {
      const { rows } = await this.#pool.query<{ pid: number; state: string | null; since: string | null; application_name: string | null }>(
        `SELECT pid, state, xact_start::text AS since, application_name FROM pg_stat_activity
         WHERE backend_xid IS NOT NULL ORDER BY age(backend_xid) DESC LIMIT 1`,
      );
      const row = rows[0];
      if (row === undefined) return "a prepared transaction, see pg_prepared_xacts";
      return `process ${row.pid}${row.application_name ? ` (${row.application_name})` : ""}, ${row.state ?? "state unknown"}, open since ${row.since ?? "unknown"}`;
    } catch {
      return "not named: pg_stat_activity could not be read";
    }
  }

  async #verifyStream(stream: string): Promise<ChainVerification> {
    // One snapshot for the head and every page: a host still appending to the stream commits its
    // events and its head together, so what one snapshot holds agrees, and an append committed
    // since is not counted against a head read before it (or the other way round).
    const client = await this.#pool.connect();
    try {
      await client.query("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY");
      const verified = await this.#verifyStreamIn(client, stream);
      await client.query("COMMIT");
      return verified;
    } catch (error) {
      await client.query("ROLLBACK").catch(() => undefined);
      throw error;
    } finally {
      client.release();
    }
  }

  async #verifyStreamIn(client: pg.PoolClient, stream: string): Promise<ChainVerification> {
    const { rows: heads } = await client.query<StreamRow>(`SELECT version, head_hash FROM ${this.#s}.streams WHERE stream_id = $1`, [stream]);
    const verifier = new ChainVerifier(stream);
    let after = 0;
    for (;;) {
      const { rows } = await client.query<{ stream_position: string; global_position: string; event: string }>(
        `SELECT stream_position, global_position, event::text AS event FROM ${this.#s}.events
         WHERE stream_id = $1 AND stream_position > $2 ORDER BY stream_position LIMIT ${PAGE_SIZE}`,
        [stream, after],
      );
      let intact = true;
      for (const row of rows) {
        intact = verifier.check({ position: Number(row.stream_position), globalPosition: Number(row.global_position), raw: row.event });
        if (!intact) break;
      }
      if (!intact || rows.length < PAGE_SIZE) break;
      after = Number(rows[rows.length - 1]?.stream_position);
    }
    const head = heads[0];
    return verifier.finish(head === undefined ? EMPTY_STREAM_HEAD : { version: Number(head.version), hash: head.head_hash });
  }

  /**
   * Keeps `work` in the set `close()` waits for, and turns a failure of the connection, the login
   * or a privilege into a {@link LogUnavailableError} naming `operation`.
   */
  #track<T>(operation: string, work: Promise<T>): Promise<T> {
    this.#inFlight.add(work);
    void work.catch(() => undefined).then(() => this.#inFlight.delete(work));
    return work.catch((error: unknown) => {
      throw logUnavailable(error, this.#unavailable, operation) ?? error;
    });
  }

  #assertOpen(): void {
    if (this.#closed) throw new LogClosedError();
  }
}

/** A unique position taken, or a head that moved although the stream was locked (TL409). */
function isLostRace(error: unknown): boolean {
  const code = typeof error === "object" && error !== null ? (error as { code?: unknown }).code : undefined;
  return code === "23505" || code === "TL409";
}

/** The expected version as `begin_append` takes it. */
function expectedForSql(expected: ExpectedStreamVersion | undefined): string {
  if (expected === undefined || expected === NO_CONCURRENCY_CHECK) return "any";
  if (expected === STREAM_EXISTS) return "exists";
  if (expected === STREAM_DOES_NOT_EXIST) return "none";
  return String(expected);
}

/** The last statement's result of a simple query that ran several. */
function lastResult<Row extends pg.QueryResultRow>(result: pg.QueryResult | pg.QueryResult[]): pg.QueryResult<Row> {
  const last = Array.isArray(result) ? result[result.length - 1] : result;
  if (last === undefined) throw new TypeError("the query returned no result");
  return last as pg.QueryResult<Row>;
}

function parseStoredEvent(raw: string, where: string): RecordedEvent {
  try {
    return JSON.parse(raw) as RecordedEvent;
  } catch (error) {
    throw new LogCorruptedError(`the event stored at ${where} is unreadable; run verify()`, { cause: error });
  }
}
