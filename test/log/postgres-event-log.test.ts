import { describe, expect, it, vi } from "vitest";
import pg from "pg";
import { ExpectedVersionConflictError, STREAM_DOES_NOT_EXIST } from "../../src/errors/expected-version-conflict-error.js";
import { LogFormatError } from "../../src/errors/log-format-error.js";
import { LogStalledError } from "../../src/errors/log-stalled-error.js";
import type { RecordedEvent } from "../../src/log/event-log.js";
import { PostgresEventLog } from "../../src/log/postgres/postgres-event-log.js";
import { urlWithoutPassword } from "../../src/log/postgres/connection-string.js";
import { describeWithPostgres, dropSchema, freshSchemaName, postgresFixtures, requirePostgresUrl } from "../support/postgres.js";
import { runEventLogConformance, someEvents } from "./event-log.conformance.js";
import { startLogChild } from "../support/log-child-process.js";

async function collectAll(log: PostgresEventLog): Promise<RecordedEvent[]> {
  const events: RecordedEvent[] = [];
  for await (const event of log.readAll()) events.push(event);
  return events;
}

/**
 * Another process's append caught half-way: a transaction that has reserved the next global
 * position and stays open. `commit()` writes its event (stream `late`) and commits it.
 */
async function openLateAppend(client: pg.Client, schema: string): Promise<{ position: number; commit(): Promise<void> }> {
  await client.query("BEGIN");
  const { rows } = await client.query(`SELECT ${schema}.reserve_positions(1) AS first`);
  const position = Number(rows[0].first);
  return {
    position,
    commit: async () => {
      const late = JSON.stringify({ type: "test.late", data: {}, meta: { globalPosition: position } });
      await client.query(`INSERT INTO ${schema}.events (global_position, stream_id, stream_position, event_id, type, recorded_at, event) VALUES ($1, 'late', 1, 'late', 'test.late', now(), $2)`, [position, late]);
      await client.query(`INSERT INTO ${schema}.streams VALUES ('late', 1, 'x')`);
      await client.query("COMMIT");
    },
  };
}

describeWithPostgres("PostgreSQL", () => {
  runEventLogConformance("PostgresEventLog", async (options) => {
    const schema = freshSchemaName("conf");
    const log = await PostgresEventLog.open(requirePostgresUrl(), { schema, poolSize: 4, pollIntervalMs: 200, ...options });
    return {
      log,
      dispose: async () => {
        await log.close();
        await dropSchema(schema);
      },
    };
  });

  describe("PostgresEventLog", () => {
    const fixtures = postgresFixtures();
    const open = fixtures.open;
    const schemaForTest = fixtures.schema;

    it("migrates once, however many handles open the schema at the same moment", async () => {
      const schema = schemaForTest("migrate");
      const logs = await Promise.all(Array.from({ length: 6 }, () => open(schema)));
      await logs[0]?.appendToStream("a", someEvents(1));
      const client = await fixtures.client();
      const { rows } = await client.query(`SELECT version FROM ${schema}.schema_migrations`);
      expect(rows.map((row) => row.version)).toEqual([1, 2]);
      expect(await logs[5]?.streamVersion("a")).toBe(1);
    });

    it("never records a stream's event before its last one, when another host's clock is an hour behind", async () => {
      const schema = schemaForTest("clock");
      const ahead = await open(schema, { clock: { now: () => Date.UTC(2025, 0, 1, 12, 0, 0, 250) } });
      const behind = await open(schema, { clock: { now: () => Date.UTC(2025, 0, 1, 11), monotonic: () => 0 } });
      await ahead.appendToStream("a", someEvents(1));
      await behind.appendToStream("a", someEvents(1));
      await behind.appendToStream("b", someEvents(1));
      expect((await behind.readStream("a")).map((event) => event.meta.recordedAt)).toEqual(Array(2).fill("2025-01-01T12:00:00.250Z"));
      expect((await behind.readStream("b"))[0]?.meta.recordedAt).toBe("2025-01-01T11:00:00.000Z");
      expect(await behind.verify()).toMatchObject({ ok: true });
    });

    it("refuses a schema written by a newer turnlog, and with migrate: false one that was never migrated", async () => {
      const schema = schemaForTest("newer");
      await open(schema);
      const client = await fixtures.client();
      await client.query(`INSERT INTO ${schema}.schema_migrations (version, name) VALUES (99, 'from the future')`);
      await expect(PostgresEventLog.open(requirePostgresUrl(), { schema })).rejects.toThrow(LogFormatError);
      await expect(PostgresEventLog.open(requirePostgresUrl(), { schema: schemaForTest("never"), migrate: false })).rejects.toThrow(/turnlog migrate/);
    });

    it("two handles (as two processes would) racing on one stream: one append wins, the other hears the real version", async () => {
      const schema = schemaForTest("race");
      const [first, second] = await Promise.all([open(schema), open(schema)]);
      const outcomes = await Promise.allSettled(
        Array.from({ length: 8 }, (_, index) =>
          (index % 2 === 0 ? first! : second!).appendToStream("session-x", someEvents(2), { expectedStreamVersion: STREAM_DOES_NOT_EXIST }),
        ),
      );
      expect(outcomes.filter((outcome) => outcome.status === "fulfilled")).toHaveLength(1);
      for (const outcome of outcomes) {
        if (outcome.status === "rejected") {
          expect(outcome.reason).toBeInstanceOf(ExpectedVersionConflictError);
          expect((outcome.reason as ExpectedVersionConflictError).current).toBe(2);
        }
      }
      expect(await first!.verify()).toEqual({ ok: true, checked: 2 });
    });

    it("a row written past the stream lock (a writer that skips it) turns the append into a conflict, and nothing of it is stored", async () => {
      const schema = schemaForTest("rogue");
      const log = await open(schema);
      await log.appendToStream("a", someEvents(1));
      const client = await fixtures.client();
      await client.query(`INSERT INTO ${schema}.events (global_position, stream_id, stream_position, event_id, type, recorded_at, event) VALUES (1000, 'a', 2, 'rogue', 'test.rogue', now(), '{}')`);
      await expect(log.appendToStream("a", someEvents(2))).rejects.toBeInstanceOf(ExpectedVersionConflictError);
      const { rows } = await client.query(`SELECT count(*)::int AS n FROM ${schema}.events WHERE stream_id = 'a'`);
      expect(rows[0].n).toBe(2);
      expect(await log.streamVersion("a")).toBe(1);
    });

    it("a subscriber in one handle hears appends made through another", async () => {
      const schema = schemaForTest("listen");
      const [writer, reader] = await Promise.all([open(schema), open(schema)]);
      const seen: RecordedEvent[] = [];
      const heard = new Promise<void>((resolve) => {
        reader.subscribe((event) => {
          seen.push(event);
          if (seen.length === 3) resolve();
        });
      });
      await writer.appendToStream("a", someEvents(2));
      await writer.appendToStream("b", someEvents(1));
      await heard;
      expect(seen.map((event) => `${event.meta.stream}:${event.meta.globalPosition}`)).toEqual(["a:1", "a:2", "b:3"]);
    });

    it("a pool of one connection still appends while someone subscribes (the tail listens on a connection of its own)", async () => {
      const log = await open(schemaForTest("pool1"), { poolSize: 1 });
      const seen: number[] = [];
      log.subscribe((event) => seen.push(event.meta.globalPosition));
      await log.appendToStream("a", someEvents(2));
      await log.appendToStream("b", someEvents(1));
      expect(seen).toEqual([1, 2, 3]);
    });

    it("a subscriber hears an event that another process commits late, below positions that committed before it subscribed", async () => {
      const schema = schemaForTest("latesub");
      const writer = await open(schema);
      await writer.appendToStream("s", someEvents(1));
      // Another process's append holds position 2 open; a third commits position 3.
      const lateAppend = await openLateAppend(await fixtures.client(), schema);
      await writer.appendToStream("t", someEvents(1));
      // A host opens the log now and subscribes: the late event must still reach it.
      const host = await open(schema);
      const seen: number[] = [];
      const heard = new Promise<void>((resolve) => {
        host.subscribe((event) => {
          seen.push(event.meta.globalPosition);
          if (event.meta.globalPosition === 2) resolve();
        });
      });
      await lateAppend.commit();
      await heard;
      expect(seen[0]).toBe(2);
    });

    it("readAll does not pass an event that commits after a later position did (the snapshot-xmin rule)", async () => {
      const schema = schemaForTest("xmin");
      const log = await open(schema);
      await log.appendToStream("a", someEvents(1));
      // A transaction reserves position 2 and stays open; another append takes 3 and commits.
      const lateAppend = await openLateAppend(await fixtures.client(), schema);
      expect(lateAppend.position).toBe(2);
      await log.appendToStream("b", someEvents(1));
      const seen: number[] = [];
      const reading = (async () => {
        for await (const event of log.readAll()) seen.push(event.meta.globalPosition);
      })();
      // The late event commits while the reader waits; the reader then returns every position in order.
      await lateAppend.commit();
      await reading;
      expect(seen).toEqual([1, 2, 3]);
    });

    it("readAll held back by a transaction left open throws LogStalledError naming it, instead of ending early in silence", async () => {
      const schema = schemaForTest("stall");
      const log = await open(schema, { stallTimeoutMs: 300 });
      await log.appendToStream("a", someEvents(1));
      const forgottenClient = await fixtures.client("forgotten-psql");
      await openLateAppend(forgottenClient, schema);
      await log.appendToStream("b", someEvents(1));
      const seen: number[] = [];
      const reading = (async () => {
        for await (const event of log.readAll()) seen.push(event.meta.globalPosition);
      })();
      const error = await reading.then(() => undefined, (caught: unknown) => caught);
      expect(LogStalledError.isInstance(error)).toBe(true);
      expect((error as LogStalledError).blocker).toContain("forgotten-psql");
      expect((error as LogStalledError).position).toBe(1);
      expect(seen).toEqual([1]);
      await forgottenClient.query("ROLLBACK");
      // Once it ends, the same read passes the gap it left and returns everything.
      expect((await collectAll(log)).map((event) => event.meta.globalPosition)).toEqual([1, 3]);
    });

    it("verify finds an event edited in the table, and a tail deleted with its head left behind", async () => {
      const schema = schemaForTest("tamper");
      const log = await open(schema);
      await log.appendToStream("a", someEvents(3));
      await log.appendToStream("b", someEvents(2));
      expect(await log.verify()).toEqual({ ok: true, checked: 5 });
      const client = await fixtures.client();
      await client.query(`UPDATE ${schema}.events SET event = replace(event::text, '"index":1', '"index":7')::json WHERE stream_id = 'a' AND stream_position = 2`);
      expect(await log.verify({ stream: "a" })).toMatchObject({ ok: false, stream: "a", firstBadPosition: 2 });
      await client.query(`DELETE FROM ${schema}.events WHERE stream_id = 'b' AND stream_position = 2`);
      expect(await log.verify({ stream: "b" })).toMatchObject({ ok: false, stream: "b" });
      expect((await log.verify({ stream: "b" })).reason).toMatch(/head-mismatch/);
    });

    it("verify of a stream another writer appends to meanwhile reports it intact (issue 31: turnlog verify failed while a host kept writing)", async () => {
      const schema = schemaForTest("verify-live");
      const log = await open(schema);
      const writer = await open(schema);
      await log.appendToStream("a", someEvents(3));
      // Another writer's append lands after verify read the stream's head, before it reads the events.
      const query = pg.Client.prototype.query;
      let appended = false;
      const spy = vi.spyOn(pg.Client.prototype, "query").mockImplementation(async function (this: pg.Client, ...args: unknown[]) {
        if (!appended && typeof args[0] === "string" && args[0].includes("SELECT stream_position, global_position, event::text")) {
          appended = true;
          await writer.appendToStream("a", someEvents(2), { expectedStreamVersion: 3 });
        }
        return (query as (...a: unknown[]) => unknown).apply(this, args);
      } as never);
      try {
        expect(await log.verify({ stream: "a" })).toMatchObject({ ok: true });
      } finally {
        spy.mockRestore();
      }
      expect(appended).toBe(true);
      expect(await log.verify({ stream: "a" })).toEqual({ ok: true, checked: 5 });
    });

    // Found by the PostgreSQL soak's server restarts: a connection the server ends emits "error"
    // on its node-postgres client even while a query runs, and a checked-out client without a
    // listener crashed the whole host process ("Unhandled 'error' event").
    it("a connection the server ends during an open or an append rejects that call; the process lives on and the next call succeeds", async () => {
      const schema = schemaForTest("outage");
      const [migrationHolder, streamHolder, admin] = [await fixtures.client(), await fixtures.client(), await fixtures.client()];
      const holdLock = async (holder: pg.Client, key: string) => {
        await holder.query("BEGIN");
        await holder.query("SELECT pg_advisory_xact_lock(hashtextextended($1, 0))", [key]);
        return (await holder.query<{ pid: number }>("SELECT pg_backend_pid() AS pid")).rows[0]?.pid;
      };
      /** Ends the backend `holder` blocks, once there is one (each look is a query, not a timer). */
      const terminateBlocked = async (holderPid: number | undefined) => {
        for (let tries = 0; tries < 10_000; tries += 1) {
          const { rows } = await admin.query<{ ended: boolean }>("SELECT pg_terminate_backend(pid) AS ended FROM pg_stat_activity WHERE $1 = ANY(pg_blocking_pids(pid))", [holderPid]);
          if (rows.length > 0) return;
        }
        throw new Error("the child never waited on the lock");
      };
      const migrationPid = await holdLock(migrationHolder, `turnlog.migrate:${schema}`);
      const streamPid = await holdLock(streamHolder, `turnlog.stream:${schema}:s1`);
      const child = startLogChild("postgres-outage-child.ts", [requirePostgresUrl(), schema]);
      fixtures.defer(async () => child.child.kill("SIGKILL"));
      await terminateBlocked(migrationPid);
      await child.waitForLine((line) => line.startsWith("open rejected "));
      await migrationHolder.query("COMMIT");
      await child.waitForLine((line) => line === "opened");
      await terminateBlocked(streamPid);
      await child.waitForLine((line) => line.startsWith("append rejected "));
      await streamHolder.query("COMMIT");
      expect(await child.exited, child.stderr()).toEqual({ code: 0, signal: null });
      expect(child.lines).toEqual(["open rejected TURNLOG_LOG_UNAVAILABLE 57P01", "opened", "append rejected TURNLOG_LOG_UNAVAILABLE 57P01", "appended 1"]);
      const log = await open(schema);
      expect((await log.readStream("s1")).map((event) => event.type)).toEqual(["test.appended"]);
      expect(await log.verify()).toEqual({ ok: true, checked: 1 });
    });

    it("never names the password of a URL it was opened with", async () => {
      expect(urlWithoutPassword("postgres://ada:s3cret@db.example:5432/agents?sslmode=require")).toBe("postgres://ada@db.example:5432/agents?sslmode=require");
      expect(urlWithoutPassword("postgresql://db/agents?password=s3cret")).toBe("postgresql://db/agents");
      const url = new URL(requirePostgresUrl());
      url.password = "not-the-password";
      // The test server trusts loopback, so it accepts (and ignores) the password; the log's
      // location, used in every message about it, never carries it.
      const withPassword = await PostgresEventLog.open(url.toString(), { schema: schemaForTest("redact") });
      fixtures.defer(() => withPassword.close());
      expect(withPassword.location).not.toContain("not-the-password");
      expect(withPassword.location).toContain(`${url.hostname}:${url.port}`);
    });
  });
});
