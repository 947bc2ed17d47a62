import { spawn } from "node:child_process";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import pg from "pg";
import { afterAll, describe, expect, it } from "vitest";
import { createLogReader, createRuntime, LevelEventLog, PostgresEventLog, sessionStream } from "../../src/index.js";
import type { EventLog, RecordedEvent, ResumeAllReport } from "../../src/index.js";
import { bundledScript } from "../support/bundled-child.js";
import { crashTools, finalAnswer as crashFinalAnswer, crashSessionId } from "../support/crash-session-script.js";
import { startNodeChild, type LogChildProcess } from "../support/log-child-process.js";
import { describeWithPostgres, dropSchema, freshSchemaName, requirePostgresUrl } from "../support/postgres.js";
import { workerProvider } from "../support/worker-script.js";
import { approvalFinalAnswer, approvalPolicy, approvalTools } from "../support/approval-host-script.js";

/**
 * docs/embedding.md, "A worker that picks up what was left", with real processes: a host is
 * SIGKILLed with sessions parked for approval, or in the middle of a tool; another process answers
 * a held call; a NEW host process's `runtime.resumeAll()` finishes what is owed. Counted by effect:
 * each tool run appends a line to a file outside the log. On PostgreSQL two workers race one log.
 * Children run from a bundle (test/support/bundled-child.ts) and wait for events, never for time.
 */
const repositoryRoot = fileURLToPath(new URL("../..", import.meta.url));
const directories: string[] = [];
afterAll(async () => {
  await Promise.all(directories.map((directory) => rm(directory, { recursive: true, force: true })));
});

async function scenarioDirectory(label: string): Promise<{ directory: string; effectsFile: string }> {
  const directory = await mkdtemp(path.join(tmpdir(), `turnlog-worker-${label}-`));
  directories.push(directory);
  const effectsFile = path.join(directory, "effects.txt");
  await writeFile(effectsFile, "");
  return { directory, effectsFile };
}

const effectLines = async (file: string) => (await readFile(file, "utf8")).split("\n").filter((line) => line !== "");

interface Worker {
  lines: string[];
  waitForLine(predicate: (line: string) => boolean): Promise<string>;
  go(): void;
  exited: Promise<number | null>;
  stderr(): string;
}

/** A worker process (test/support/worker-child.ts, `sweep`), with a stdin to start its sweep. */
async function startWorker(args: readonly string[]): Promise<Worker> {
  const child = spawn(process.execPath, [await bundledScript("worker-child.ts"), ...args], { cwd: repositoryRoot, stdio: ["pipe", "pipe", "pipe"] });
  const lines: string[] = [];
  const waiters = new Set<() => void>();
  let partial = "";
  let errors = "";
  child.stdout.setEncoding("utf8");
  child.stdout.on("data", (chunk: string) => {
    const parts = (partial + chunk).split("\n");
    partial = parts.pop() ?? "";
    lines.push(...parts);
    for (const wake of [...waiters]) wake();
  });
  child.stderr.setEncoding("utf8");
  child.stderr.on("data", (chunk: string) => (errors += chunk));
  const exited = new Promise<number | null>((resolve) =>
    child.on("exit", (code) => {
      for (const wake of [...waiters]) wake();
      resolve(code);
    }),
  );
  const waitForLine = (predicate: (line: string) => boolean) =>
    new Promise<string>((resolve, reject) => {
      const check = () => {
        const found = lines.find(predicate);
        if (found !== undefined) {
          waiters.delete(check);
          resolve(found);
        } else if (child.exitCode !== null || child.signalCode !== null) {
          waiters.delete(check);
          reject(new Error(`the worker exited before the expected output; stderr:\n${errors}`));
        }
      };
      waiters.add(check);
      check();
    });
  return { lines, waitForLine, go: () => child.stdin.end("go\n"), exited, stderr: () => errors };
}

/** Runs the workers' sweeps together and returns their reports. */
async function sweep(workers: readonly Worker[]): Promise<ResumeAllReport[]> {
  await Promise.all(workers.map((worker) => worker.waitForLine((line) => line === "ready")));
  for (const worker of workers) worker.go();
  const reports = await Promise.all(workers.map(async (worker) => JSON.parse((await worker.waitForLine((line) => line.startsWith("report "))).slice("report ".length)) as ResumeAllReport));
  return reports;
}

async function killed(child: LogChildProcess): Promise<void> {
  child.child.kill("SIGKILL");
  expect(await child.exited).toMatchObject({ signal: "SIGKILL" });
}

/** The host that parks `sessionIds` for approval and holds on until it is killed. */
async function parkAndKill(log: { location: string; schema: string }, directory: string, effectsFile: string, sessionIds: readonly string[]): Promise<Map<string, string>> {
  const host = startNodeChild([await bundledScript("worker-child.ts")], ["deploy", log.location, log.schema, effectsFile, directory, "park", sessionIds.join(",")]);
  await host.waitForLine((line) => line === "holding");
  const held = new Map(host.lines.filter((line) => line.startsWith("parked ")).map((line) => line.split(" ").slice(1, 3) as [string, string]));
  await killed(host);
  return held;
}

/** Another process's answer (here, the test's): the existing `session.approve` from a runtime with the same tools. */
async function approve(log: EventLog, directory: string, effectsFile: string, sessionId: string, callId: string): Promise<void> {
  const reviewer = await createRuntime({ log, provider: workerProvider(), tools: approvalTools(effectsFile), policy: approvalPolicy(directory) });
  await (await reviewer.openSession(sessionId, { create: false })).approve(callId, { by: "reviewer", note: "go ahead" });
  await reviewer.close();
}

/** One stream, checked: positions 1..n, the chain verifies, every started call ended once. */
async function expectSound(log: EventLog, sessionId: string): Promise<RecordedEvent[]> {
  const events = await log.readStream(sessionStream(sessionId), { maxCount: Number.MAX_SAFE_INTEGER });
  expect(events.map((event) => event.meta.streamPosition)).toEqual(events.map((_, index) => index + 1));
  expect(await log.verify({ stream: sessionStream(sessionId) })).toMatchObject({ ok: true });
  const started = events.filter((event) => event.type === "turn.tool.started").map((event) => (event.data as { callId: string }).callId);
  expect(new Set(started).size, `${sessionId}: a call started twice`).toBe(started.length);
  return events;
}

const terminalToolEvents = new Set(["turn.tool.succeeded", "turn.tool.failed", "turn.tool.interrupted"]);
const callIdOf = (event: RecordedEvent) => (event.data as { callId?: string }).callId ?? "";
const packetsOf = (events: readonly RecordedEvent[]) =>
  events.filter((event) => event.type === "turn.results.packetized").flatMap((event) => (event.data as { packets: { callId: string; ok: boolean; content: string }[] }).packets);

describe("a worker picks up what a killed host left (LevelDB)", () => {
  it("after the host is killed with sessions parked and one is answered, a new host's resumeAll() finishes it once and leaves the other alone", async () => {
    const { directory, effectsFile } = await scenarioDirectory("level-parked");
    const logDirectory = path.join(directory, "log");
    const held = await parkAndKill({ location: logDirectory, schema: "-" }, directory, effectsFile, ["answered", "waiting"]);

    let log = await LevelEventLog.open(logDirectory);
    await approve(log, directory, effectsFile, "answered", held.get("answered")!);
    const waitingBefore = await log.readStream(sessionStream("waiting"));
    await log.close();
    expect(await effectLines(effectsFile)).toEqual([]);

    const worker = await startWorker(["deploy", logDirectory, "-", effectsFile, directory, "sweep"]);
    const [report] = await sweep([worker]);
    expect(await worker.exited, worker.stderr()).toBe(0);
    expect(report).toMatchObject({
      continued: [{ sessionId: "answered", outcome: { status: "completed", text: approvalFinalAnswer } }],
      waiting: [{ sessionId: "waiting", callIds: [held.get("waiting")] }],
      skipped: [],
      failed: [],
    });

    expect(await effectLines(effectsFile)).toEqual([`answered ${held.get("answered")}`]);
    log = await LevelEventLog.open(logDirectory);
    try {
      const events = await expectSound(log, "answered");
      expect(events.at(-1)?.type).toBe("turn.completed");
      // The session waiting for a person was not touched: not one event appended.
      expect(await log.readStream(sessionStream("waiting"))).toEqual(waitingBefore);
      expect(await createLogReader(log, { tools: approvalTools(effectsFile) }).replay("answered")).toMatchObject({ identical: true });
    } finally {
      await log.close();
    }
  }, 120_000);

  for (const tool of ["charge", "read_order"] as const) {
    it(`a host killed while ${tool} runs is picked up by resumeAll(), the call ${tool === "charge" ? "interrupted, never run again" : "run again (idempotent and read-only)"}`, async () => {
      const { directory, effectsFile } = await scenarioDirectory(`level-${tool}`);
      const logDirectory = path.join(directory, "log");
      const heldLine = (line: string) => (tool === "charge" ? line.startsWith("effect ") : line.startsWith("begin ") && line.endsWith(" read_order"));
      const host = startNodeChild([await bundledScript("crash-session-child.ts")], [logDirectory, directory, effectsFile, `hold=${tool}`]);
      await host.waitForLine(heldLine);
      const heldCallId = host.lines.find(heldLine)?.split(" ")[1] ?? "";
      await killed(host);

      const worker = await startWorker(["crash", logDirectory, "-", effectsFile, directory, "sweep"]);
      const [report] = await sweep([worker]);
      expect(await worker.exited, worker.stderr()).toBe(0);
      expect(report).toMatchObject({ continued: [{ sessionId: crashSessionId, outcome: { status: "completed", text: crashFinalAnswer } }], waiting: [], skipped: [], failed: [] });

      const log = await LevelEventLog.open(logDirectory);
      try {
        await expectCrashRecovered(log, tool, heldCallId, effectsFile, { rerunInDoubt: true });
      } finally {
        await log.close();
      }
    }, 120_000);
  }
});

/** What recovery does with the held call (docs/design.md#7-recovery-and-many-hosts), and the session replays identical. */
async function expectCrashRecovered(log: EventLog, tool: "charge" | "read_order", heldCallId: string, effectsFile: string, { rerunInDoubt }: { rerunInDoubt: boolean }): Promise<void> {
  const events = await log.readStream(sessionStream(crashSessionId), { maxCount: Number.MAX_SAFE_INTEGER });
  expect(events.map((event) => event.meta.streamPosition)).toEqual(events.map((_, index) => index + 1));
  expect(await log.verify({ stream: sessionStream(crashSessionId) })).toMatchObject({ ok: true });
  const ends = events.filter((event) => callIdOf(event) === heldCallId && terminalToolEvents.has(event.type)).map((event) => event.type);
  const packet = packetsOf(events).find((candidate) => candidate.callId === heldCallId);
  const effects = await effectLines(effectsFile);
  // Every charge ran once at most: the one in doubt was not charged again.
  expect(new Set(effects).size).toBe(effects.length);
  if (tool === "charge" || !rerunInDoubt) {
    expect(ends).toEqual(["turn.tool.interrupted"]);
    expect(packet).toMatchObject({ ok: false, content: expect.stringMatching(/interrupted/) });
    if (tool === "charge") expect(effects.filter((callId) => callId === heldCallId)).toEqual([heldCallId]);
  } else {
    expect(ends).toEqual(["turn.tool.succeeded"]);
    expect(packet).toMatchObject({ ok: true, content: "order A: 10 EUR, unpaid" });
  }
  expect(events.at(-1)?.type).toBe("turn.completed");
  expect(await createLogReader(log, { tools: crashTools(effectsFile) }).replay(crashSessionId)).toMatchObject({ identical: true });
}

/**
 * Waits until no connection holds the session's lease (a killed host's connection the server has
 * not dropped yet): a blocking `pg_advisory_lock` on the lease's key, given back at once. An event
 * to wait on, not a timer.
 */
async function leaseFreed(schema: string, sessionId: string): Promise<void> {
  const client = new pg.Client({ connectionString: requirePostgresUrl() });
  await client.connect();
  try {
    const key = `turnlog.lease:${schema}:${sessionStream(sessionId)}`;
    await client.query("SELECT pg_advisory_lock(hashtextextended($1, 0))", [key]);
    await client.query("SELECT pg_advisory_unlock(hashtextextended($1, 0))", [key]);
  } finally {
    await client.end();
  }
}

describeWithPostgres("workers on one PostgreSQL log", () => {
  it("two workers race resumeAll() after the host was killed: the answered turn finishes once; autoResume then picks up a later answer", async () => {
    const url = requirePostgresUrl();
    const schema = freshSchemaName("worker_race");
    const { directory, effectsFile } = await scenarioDirectory("pg-race");
    const log = await PostgresEventLog.open(url, { schema, poolSize: 4 });
    try {
      const held = await parkAndKill({ location: url, schema }, directory, effectsFile, ["answered", "waiting"]);
      await approve(log, directory, effectsFile, "answered", held.get("answered")!);
      const waitingVersion = await log.streamVersion(sessionStream("waiting"));

      const workers = await Promise.all([0, 1].map(() => startWorker(["deploy", url, schema, effectsFile, directory, "sweep"])));
      const reports = await sweep(workers);
      for (const worker of workers) expect(await worker.exited, worker.stderr()).toBe(0);

      // Continued by exactly one worker; the other found it busy, or already finished (settled, or
      // not listed at all when its sweep began after the turn ended).
      const continued = reports.flatMap((report) => report.continued);
      expect(continued).toEqual([{ sessionId: "answered", outcome: expect.objectContaining({ status: "completed", text: approvalFinalAnswer }) }]);
      for (const report of reports) {
        expect(report.failed).toEqual([]);
        for (const entry of report.skipped) expect(entry).toMatchObject({ sessionId: "answered", reason: expect.stringMatching(/^(busy|settled)$/) });
        expect(report.waiting).toEqual([{ sessionId: "waiting", callIds: [held.get("waiting")] }]);
      }
      expect(await effectLines(effectsFile)).toEqual([`answered ${held.get("answered")}`]);
      const events = await expectSound(log, "answered");
      expect(events.filter((event) => event.type === "turn.completed")).toHaveLength(1);
      expect(await log.streamVersion(sessionStream("waiting"))).toBe(waitingVersion);
      expect(await log.verify()).toMatchObject({ ok: true });
      expect(await createLogReader(log, { tools: approvalTools(effectsFile) }).replay("answered")).toMatchObject({ identical: true });

      // A worker with autoResume: the session it found waiting finishes when its answer comes later.
      const auto = await startWorker(["deploy", url, schema, effectsFile, directory, "sweep-auto"]);
      const [autoReport] = await sweep([auto]);
      expect(autoReport).toMatchObject({ continued: [], waiting: [{ sessionId: "waiting" }] });
      await approve(log, directory, effectsFile, "waiting", held.get("waiting")!);
      expect(await auto.waitForLine((line) => line.startsWith("auto "))).toBe(`auto waiting completed ${approvalFinalAnswer}`);
      expect(await auto.exited, auto.stderr()).toBe(0);
      expect((await effectLines(effectsFile)).sort()).toEqual([`answered ${held.get("answered")}`, `waiting ${held.get("waiting")}`].sort());
      await expectSound(log, "waiting");
      expect(await createLogReader(log, { tools: approvalTools(effectsFile) }).replay("waiting")).toMatchObject({ identical: true });
    } finally {
      await log.close();
      await dropSchema(schema);
    }
  }, 180_000);

  for (const tool of ["charge", "read_order"] as const) {
    it(`a host killed while ${tool} runs is picked up by one of two racing workers, under the lease`, async () => {
      const url = requirePostgresUrl();
      const schema = freshSchemaName(`worker_${tool}`);
      const { directory, effectsFile } = await scenarioDirectory(`pg-${tool}`);
      const log = await PostgresEventLog.open(url, { schema, poolSize: 4 });
      try {
        const heldLine = (line: string) => (tool === "charge" ? line.startsWith("effect ") : line.startsWith("begin ") && line.endsWith(" read_order"));
        const host = startNodeChild([await bundledScript("postgres-crash-host-child.ts")], [url, schema, crashSessionId, directory, effectsFile, `hold=${tool}`]);
        await host.waitForLine(heldLine);
        const heldCallId = host.lines.find(heldLine)?.split(" ")[1] ?? "";
        await killed(host);
        await leaseFreed(schema, crashSessionId);

        const workers = await Promise.all([0, 1].map(() => startWorker(["crash", url, schema, effectsFile, directory, "sweep"])));
        const reports = await sweep(workers);
        for (const worker of workers) expect(await worker.exited, worker.stderr()).toBe(0);
        expect(reports.flatMap((report) => report.continued)).toEqual([{ sessionId: crashSessionId, outcome: expect.objectContaining({ status: "completed", text: crashFinalAnswer }) }]);
        for (const report of reports) {
          expect(report.failed).toEqual([]);
          for (const entry of report.skipped) expect(entry).toMatchObject({ sessionId: crashSessionId, reason: expect.stringMatching(/^(busy|settled)$/) });
        }
        // Under the lease a worker knows the killed host is gone: the same rule as LevelDB's owner.
        await expectCrashRecovered(log, tool, heldCallId, effectsFile, { rerunInDoubt: true });
      } finally {
        await log.close();
        await dropSchema(schema);
      }
    }, 180_000);
  }
});
