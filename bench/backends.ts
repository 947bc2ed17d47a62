/**
 * LevelDB beside PostgreSQL (issue 14; docs/log.md "What it costs"), in one table, for 1, 4 and 16
 * concurrent sessions on one log:
 *
 * - **appends/s**: raw `appendToStream` throughput, N writers at once, each appending one small
 *   event at a time to a stream of its own with its expected version (as a session does), durable
 *   and `durable: false`;
 * - **per-call overhead**: the scenario of bench/run.ts (the model answers with 4 tool calls a
 *   turn, tools do no work), run by N sessions at once, each with a runtime and scripted provider
 *   of its own, on one log: µs per tool call as one session sees it (its wall time ÷ its calls),
 *   and the log's throughput (all calls ÷ wall time).
 *
 * LevelDB runs with durability `sync`. PostgreSQL is a real, fsyncing server: `TURNLOG_BENCH_PG_URL`
 * when it is set (each measurement in a fresh schema, dropped after), otherwise a throw-away one
 * started with fsync on (scripts/postgres-server.mjs, never `fast`). Without either, the PostgreSQL
 * rows say they were not measured. Under the table, the fsync floor of each log's disk: one
 * 8 KiB write + fdatasync, which is what a commit costs PostgreSQL at the least (its default
 * `wal_sync_method` on Linux is fdatasync).
 *
 *   npm run bench                                   (after bench/run.ts, fold.ts and redaction.ts)
 *   node --import tsx bench/backends.ts [turns-per-session=25] [appends-per-writer=200]
 *   TURNLOG_BENCH_PG_URL=postgres://me@db.internal/bench node --import tsx bench/backends.ts
 */
import { randomBytes } from "node:crypto";
import { mkdtemp, open, rm } from "node:fs/promises";
import { cpus, tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";
import { z } from "zod";
import { createRuntime, defineTool, LevelEventLog, PostgresEventLog } from "../src/index.js";
import type { EventLog } from "../src/index.js";
import { urlWithoutPassword } from "../src/log/postgres/connection-string.js";
import { scriptedProvider } from "../src/testing/index.js";
import type { ScriptStep } from "../src/testing/index.js";
// @ts-expect-error: a plain ES module script without types (scripts/ is not compiled).
import { postgresBinDirectory, startPostgres } from "../scripts/postgres-server.mjs";

const turnsPerSession = Number(process.argv[2] ?? 25);
const appendsPerWriter = Number(process.argv[3] ?? 200);
const sessionCounts = [1, 4, 16] as const;
const callsPerTurn = 4;

const noop = defineTool({ name: "noop", description: "does nothing", risk: "read-only-local", input: z.object({ n: z.number() }), run: () => "ok" });

/** A log made fresh for one measurement, and how to throw it away. */
interface FreshLog {
  log: EventLog;
  dispose(): Promise<void>;
}

interface Backend {
  name: string;
  /** The disk the log writes to, for the fsync floor's line. */
  disk: string;
  /** A directory on that disk, for the fsync floor (undefined: the disk is not on this machine). */
  floorDirectory: string | undefined;
  open(concurrency: number): Promise<FreshLog>;
}

const level: Backend = {
  name: "LevelDB, sync",
  disk: "the LevelDB directories' disk",
  floorDirectory: tmpdir(),
  async open() {
    const directory = await mkdtemp(join(tmpdir(), "turnlog-bench-level-"));
    const log = await LevelEventLog.open(directory, { durability: "sync" });
    return {
      log,
      async dispose() {
        await log.close();
        await rm(directory, { recursive: true, force: true });
      },
    };
  },
};

function postgres(url: string, floorDirectory: string | undefined): Backend {
  return {
    name: "PostgreSQL",
    disk: "the PostgreSQL data directory's disk",
    floorDirectory,
    async open(concurrency) {
      const schema = `bench_${randomBytes(6).toString("hex")}`;
      // A connection per concurrent session, so the pool is not what is measured (docs/log.md, "Pool size").
      const log = await PostgresEventLog.open(url, { schema, poolSize: Math.max(10, concurrency) });
      return {
        log,
        async dispose() {
          await log.close();
          const client = new pg.Client({ connectionString: url });
          await client.connect();
          try {
            await client.query(`DROP SCHEMA ${pg.escapeIdentifier(schema)} CASCADE`);
          } finally {
            await client.end();
          }
        },
      };
    },
  };
}

/** Appends per second: `writers` writers at once, each on its own stream, one event per append. */
async function appendsPerSecond(backend: Backend, writers: number, durable: boolean): Promise<number> {
  const { log, dispose } = await backend.open(writers);
  try {
    const data = { callId: "call_x", output: "ok" };
    const started = process.hrtime.bigint();
    await Promise.all(
      Array.from({ length: writers }, async (_, writer) => {
        let version = 0;
        for (let append = 0; append < appendsPerWriter; append += 1) {
          const result = await log.appendToStream(`bench-${writer}`, [{ type: "turn.tool.succeeded", data }], { expectedStreamVersion: version, durable });
          version = result.nextExpectedStreamVersion;
        }
      }),
    );
    const seconds = Number(process.hrtime.bigint() - started) / 1e9;
    return (writers * appendsPerWriter) / seconds;
  } finally {
    await dispose();
  }
}

/** The per-call scenario of bench/run.ts, by `sessions` sessions at once on one log. */
async function toolCalls(backend: Backend, sessions: number, turns: number): Promise<{ perSessionMicros: number; callsPerSecond: number }> {
  const { log, dispose } = await backend.open(sessions);
  try {
    const runs = await Promise.all(
      Array.from({ length: sessions }, async (_, index) => {
        const steps: ScriptStep[] = [];
        for (let turn = 0; turn < turns; turn += 1) {
          steps.push({ toolCalls: Array.from({ length: callsPerTurn }, (_, call) => ({ name: "noop", arguments: JSON.stringify({ n: turn * callsPerTurn + call }) })) });
        }
        steps.push({ content: "done" });
        const runtime = await createRuntime({
          log,
          provider: scriptedProvider(steps),
          tools: [noop],
          budgets: { maxIterations: turns + 1, maxToolCalls: turns * callsPerTurn + 1 },
        });
        return { runtime, session: await runtime.openSession(`bench-${index}`) };
      }),
    );
    const started = process.hrtime.bigint();
    const elapsed = await Promise.all(
      runs.map(async ({ session }) => {
        const outcome = await session.send("go");
        if (outcome.status !== "completed") throw new Error(`bench session ended ${outcome.status}: ${outcome.reason}`);
        return Number(process.hrtime.bigint() - started) / 1000;
      }),
    );
    const wallMicros = Number(process.hrtime.bigint() - started) / 1000;
    for (const { runtime } of runs) await runtime.close();
    const calls = turns * callsPerTurn;
    const perSessionMicros = elapsed.reduce((sum, micros) => sum + micros, 0) / sessions / calls;
    return { perSessionMicros, callsPerSecond: (sessions * calls) / (wallMicros / 1e6) };
  } finally {
    await dispose();
  }
}

/** µs per 8 KiB write + fdatasync of one file in `directory` (the commit floor of that disk). */
async function fsyncFloor(directory: string, rounds = 300): Promise<number> {
  const path = join(directory, `turnlog-fsync-floor-${randomBytes(4).toString("hex")}`);
  const file = await open(path, "w");
  try {
    const page = Buffer.alloc(8192, 1);
    await file.write(page, 0, page.length, 0);
    await file.datasync();
    const started = process.hrtime.bigint();
    for (let round = 0; round < rounds; round += 1) {
      await file.write(page, 0, page.length, 0);
      await file.datasync();
    }
    return Number(process.hrtime.bigint() - started) / 1000 / rounds;
  } finally {
    await file.close();
    await rm(path, { force: true });
  }
}

/** The PostgreSQL to measure: the given URL, a throw-away server, or why there is none. */
async function findPostgres(): Promise<{ backend: Backend; label: string; stop(): void } | { missing: string }> {
  const given = process.env.TURNLOG_BENCH_PG_URL;
  if (given !== undefined && given !== "") {
    return { backend: postgres(given, undefined), label: `TURNLOG_BENCH_PG_URL (${urlWithoutPassword(given)})`, stop: () => undefined };
  }
  const binDirectory = postgresBinDirectory() as string | undefined;
  if (binDirectory === undefined) {
    return { missing: "no PostgreSQL server binaries (initdb, pg_ctl on PATH or in /usr/lib/postgresql/*/bin) and TURNLOG_BENCH_PG_URL is not set" };
  }
  const server = (await startPostgres({ fast: false })) as { url: string; directory: string; stop(): void };
  return { backend: postgres(server.url, server.directory), label: `a throw-away server from ${binDirectory}, fsync on, in ${server.directory}`, stop: () => server.stop() };
}

function formatRate(value: number): string {
  return Math.round(value).toLocaleString("en-US");
}

const postgresFound = await findPostgres();
try {
  const backends: Backend[] = [level, ...("backend" in postgresFound ? [postgresFound.backend] : [])];
  const header = ["log", "sessions", "appends/s durable", "appends/s durable: false", "µs per tool call (one session)", "tool calls/s (all sessions)"];
  const rows: string[][] = [header];
  for (const backend of backends) {
    await appendsPerSecond(backend, 1, true); // warm up
    await toolCalls(backend, 1, 5);
    for (const sessions of sessionCounts) {
      const durable = await appendsPerSecond(backend, sessions, true);
      const relaxed = await appendsPerSecond(backend, sessions, false);
      const calls = await toolCalls(backend, sessions, turnsPerSession);
      rows.push([backend.name, String(sessions), formatRate(durable), formatRate(relaxed), calls.perSessionMicros.toFixed(0), formatRate(calls.callsPerSecond)]);
    }
  }
  if ("missing" in postgresFound) rows.push(["PostgreSQL", "-", "not measured", "not measured", "not measured", "not measured"]);
  const widths = header.map((_, column) => Math.max(...rows.map((row) => row[column]!.length)));
  console.log();
  console.log(`LevelDB beside PostgreSQL: ${turnsPerSession} turns × ${callsPerTurn} tool calls per session, ${appendsPerWriter} appends per writer; ${cpus().length} CPUs`);
  for (const row of rows) console.log(row.map((cell, column) => (column < 2 ? cell.padEnd(widths[column]!) : cell.padStart(widths[column]!))).join("  "));
  if ("missing" in postgresFound) {
    console.log(`PostgreSQL was NOT measured: ${postgresFound.missing}.`);
  } else {
    console.log(`PostgreSQL: ${postgresFound.label}`);
  }
  for (const backend of backends) {
    const floor = backend.floorDirectory === undefined ? "not measured (the server came from TURNLOG_BENCH_PG_URL: where its data directory is, is not known here)" : `${(await fsyncFloor(backend.floorDirectory)).toFixed(0)} µs (${backend.floorDirectory})`;
    console.log(`fsync floor on ${backend.disk}: one 8 KiB write + fdatasync = ${floor}`);
  }
} finally {
  if ("stop" in postgresFound) postgresFound.stop();
}
