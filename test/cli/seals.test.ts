import { execFile, spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdtemp, readdir, rm, stat, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { defaultRunLogDirectory, sealKeyDirectory } from "../../src/util/state-directories.js";
import type { SealedVerifyReport } from "../../src/log/seal/seal-verifier.js";
import { finishChunk, textChunk } from "../providers/stream-builders.js";
import { fakeKey } from "../providers/support/provider-session.js";
import { openAiSse, startSseTestServer, type SseTestServer } from "../providers/support/sse-test-server.js";
import { dropTail, rawStream, rechainStream } from "../support/level-tamper.js";
import { startAppendOnlyWitnessServer } from "../support/append-only-witness-server.js";
import { createRuntime, LevelEventLog, SealWitness } from "../../src/index.js";
import { createLogReader, pendingApprovals } from "../../src/reader/index.js";
import { SealedLogRecord } from "../../src/log/seal/sealed-log-record.js";
import { logIdentity } from "../../src/log/seal/log-identity.js";
import { scriptedProvider } from "../../src/testing/index.js";
import { ensureBuiltCli, repoRoot } from "./support/turnlog-bin.js";
import { runTurnlogInProcess } from "./support/turnlog-in-process.js";

/*
 * Seals and the witness on a real LevelDB log, the log tampered with as an agent with file access
 * would (truncate, rm, a re-chained rewrite). The commands run in-process (each opens and closes
 * the log, as a process does); the built bin runs where the process is the point: a `turnlog run`
 * killed with SIGKILL mid-turn, and `turnlog witness serve` stopped with SIGTERM.
 */

const keyEnv = "TURNLOG_TEST_SEAL_KEY";
let workDir: string;
let server: SseTestServer;

beforeAll(async () => {
  await ensureBuiltCli();
}, 120_000);

beforeEach(async () => {
  server = await startSseTestServer();
  workDir = await mkdtemp(path.join(os.tmpdir(), "turnlog-seal-cli-"));
});

afterEach(async () => {
  await server.close();
  await rm(workDir, { recursive: true, force: true });
});

const turnlog = (args: readonly string[]) => runTurnlogInProcess(args, { cwd: workDir, env: { [keyEnv]: fakeKey } });
const modelFlags = () => ["--base-url", `${server.url}/v1`, "--model", "gpt-test", "--api-key-env", keyEnv];
const sessionIdIn = (stdout: string) => /^session (run-\S+)$/m.exec(stdout)?.[1] ?? "";

async function verifyJson(args: readonly string[] = []): Promise<{ code: number; report: SealedVerifyReport }> {
  const run = await turnlog(["verify", "--json", ...args]);
  return { code: run.code, report: JSON.parse(run.stdout) as SealedVerifyReport };
}

/** A demo session held for approval, approved by alice and resumed: sealed after each step. */
async function approvedDemo(): Promise<{ sessionId: string; callId: string }> {
  const paused = await turnlog(["demo", "--pause"]);
  expect(paused.code).toBe(3);
  const sessionId = /session\s+(demo-\S+)/.exec(paused.stdout)?.[1] ?? "";
  const callId = /turnlog approve \S+ (\S+)/.exec(paused.stdout)?.[1] ?? "";
  expect((await turnlog(["approve", sessionId, callId, "--by", "alice"])).code).toBe(0);
  expect((await turnlog(["resume", sessionId])).code).not.toBe(1);
  return { sessionId, callId };
}

describe("turnlog run keeps its log out of the workspace", () => {
  it("logs into the user's state directory, seals with a key made 0600 in the config directory, and the other commands find the log without flags", async () => {
    server.enqueue(openAiSse([textChunk("Nothing to do."), finishChunk("stop")]));
    const run = await turnlog(["run", ...modelFlags(), "hello"]);
    expect(run.code).toBe(0);
    const logDir = defaultRunLogDirectory(workDir);
    expect(run.stdout).toContain(`log ${logDir}`);
    expect(existsSync(path.join(workDir, ".turnlog"))).toBe(false);
    expect(existsSync(path.join(logDir, "CURRENT"))).toBe(true);
    expect((await stat(path.join(sealKeyDirectory(), "seal-key.pem"))).mode & 0o777).toBe(0o600);
    // The printed follow-up commands need no --dir: they find the workspace's log.
    expect(run.stdout).not.toContain("--dir");
    const sessions = await turnlog(["sessions", "--json"]);
    expect(JSON.parse(sessions.stdout)).toMatchObject([{ id: sessionIdIn(run.stdout) }]);
    const { code, report } = await verifyJson();
    expect(code).toBe(0);
    expect(report).toMatchObject({ ok: true, unsealed: [], seals: { sealedStreams: 2 } });
  });

  it("a log planted at ./.turnlog does not stand in for the workspace's run log", async () => {
    server.enqueue(openAiSse([textChunk("Nothing to do."), finishChunk("stop")]));
    const run = await turnlog(["run", ...modelFlags(), "hello"]);
    expect((await turnlog(["demo"])).code).toBe(0);
    const sessions = JSON.parse((await turnlog(["sessions", "--json"])).stdout) as Array<{ id: string }>;
    expect(sessions.map((session) => session.id)).toEqual([sessionIdIn(run.stdout)]);
  });
});

describe("turnlog verify after tampering", () => {
  it("names a forged approver: the approval re-chained with another name", async () => {
    const { sessionId } = await approvedDemo();
    expect((await verifyJson()).code).toBe(0);
    await rechainStream(path.join(workDir, ".turnlog"), `session-${sessionId}`, (events) =>
      events.map((event) => (event.type === "turn.approval.granted" ? { ...event, data: { ...(event.data as object), by: "mallory" } } : event)),
    );
    const text = await turnlog(["verify"]);
    expect(text.code).toBe(1);
    expect(text.stdout).toMatch(/forged-approval: stream session-demo-\S+ position \d+ \(seal #\d+\): the approval answer at position \d+ \(turn.approval.granted, by "mallory"\)/);
    const { report } = await verifyJson();
    expect(report.faults[0]).toMatchObject({ kind: "forged-approval", stream: `session-${sessionId}`, sealPosition: expect.any(Number), position: expect.any(Number) });
    // The chain itself was re-computed consistently: only the seal can tell.
    expect(report.faults.some((fault) => fault.kind === "chain")).toBe(false);
  });

  it("names a log emptied by truncate -s 0 .turnlog/*.log after the session that wrote it", async () => {
    expect((await turnlog(["demo"])).code).toBe(0);
    // One process wrote everything, so all of it is still in LevelDB's write-ahead .log file.
    await promisify(execFile)("sh", ["-c", "truncate -s 0 .turnlog/*.log"], { cwd: workDir });
    const { code, report } = await verifyJson();
    expect(code).toBe(1);
    expect(report.checked).toBe(0);
    expect(report.faults[0]?.kind).toBe("emptied-log");
    expect((await turnlog(["verify"])).stdout).toContain("emptied-log: ");
  });

  it("names what truncate -s 0 .turnlog/*.log removed from a log written by several processes", async () => {
    await approvedDemo();
    // Each reopening moved the earlier writes into table files: only the last process's are lost.
    await promisify(execFile)("sh", ["-c", "truncate -s 0 .turnlog/*.log"], { cwd: workDir });
    const { code, report } = await verifyJson();
    expect(code).toBe(1);
    expect(["truncated", "dropped-tail", "deleted-stream", "emptied-log"]).toContain(report.faults[0]?.kind);
  });

  it("names a deleted log directory, where a never-sealed one is only missing", async () => {
    await approvedDemo();
    await rm(path.join(workDir, ".turnlog"), { recursive: true, force: true });
    const { code, report } = await verifyJson();
    expect(code).toBe(1);
    expect(report.faults[0]?.kind).toBe("emptied-log");
    const elsewhere = await turnlog(["verify", "--dir", "never-there"]);
    expect(elsewhere.code).toBe(1);
    expect(elsewhere.stderr).toContain("no log at never-there");
  });
});

describe("a turnlog run killed mid-turn", () => {
  it("verifies, with the events after its last seal reported as an unsealed tail", async () => {
    server.enqueue(openAiSse([textChunk("First answer."), finishChunk("stop")]));
    const first = await turnlog(["run", ...modelFlags(), "hello"]);
    expect(first.code).toBe(0);
    const sessionId = sessionIdIn(first.stdout);
    server.enqueue({ kind: "hang" });
    const child = spawn(process.execPath, [path.join(repoRoot, "bin", "turnlog.js"), "run", ...modelFlags(), "--session", sessionId, "again"], {
      cwd: workDir,
      env: { ...process.env, [keyEnv]: fakeKey, TURNLOG_DIR: undefined },
    });
    const exited = new Promise<NodeJS.Signals | null>((resolve) => child.on("close", (_code, signal) => resolve(signal)));
    // A guard against a hang only: a process takes seconds to start on a loaded machine.
    await expect.poll(() => server.requests.length, { timeout: 100_000 }).toBe(2);
    child.kill("SIGKILL");
    expect(await exited).toBe("SIGKILL");
    const { code, report } = await verifyJson();
    expect(code).toBe(0);
    expect(report.ok).toBe(true);
    const tail = report.unsealed.find((entry) => entry.stream === `session-${sessionId}`);
    expect(tail).toBeDefined();
    expect(tail!.from).toBeGreaterThan(1);
    const text = await turnlog(["verify"]);
    expect(text.stdout).toMatch(new RegExp(`unsealed: session-${sessionId} events \\d+–\\d+ after its last seal \\(normal after a crash\\)`));
    // Nothing of the workspace holds the log.
    expect(await readdir(workDir)).toEqual([]);
  }, 120_000);
});

describe("turnlog verify names what was forged with the user's access", () => {
  /** Runs `work` with a runtime on ./.turnlog that has no seal key: what a forger's own host appends. */
  async function asForger(script: Parameters<typeof scriptedProvider>[0], work: (runtime: Awaited<ReturnType<typeof createRuntime>>) => Promise<void>): Promise<void> {
    const log = await LevelEventLog.open(path.join(workDir, ".turnlog"), { durability: "sync" });
    const runtime = await createRuntime({ log, provider: scriptedProvider(script) });
    try {
      await work(runtime);
    } finally {
      await runtime.close();
      await log.close();
    }
  }

  /** The witness file beside the seal key for the log in `directory`. */
  const witnessFileOf = (directory: string) => SealWitness.forLogDirectory(directory, { directory: sealKeyDirectory() }).file;

  it("an approval appended after the last seal by a host without the key: unsealed-approval, exit 1", async () => {
    const paused = await turnlog(["demo", "--pause"]);
    expect(paused.code).toBe(3);
    const sessionId = /session\s+(demo-\S+)/.exec(paused.stdout)?.[1] ?? "";
    expect((await verifyJson()).code).toBe(0);
    // The answer appended with the log's own API, chained on correctly, the way a person with the
    // user's access (but not the runtime that holds the key) would.
    const log = await LevelEventLog.open(path.join(workDir, ".turnlog"), { durability: "sync" });
    try {
      const stream = `session-${sessionId}`;
      const [held] = pendingApprovals(await createLogReader(log).state(sessionId));
      expect(held).toBeDefined();
      await log.appendToStream(stream, [{ type: "turn.approval.granted", data: { turnId: held!.turnId, callId: held!.callId, fingerprint: held!.decision?.fingerprint ?? "", by: "mallory", scope: "call" } }], { expectedStreamVersion: await log.streamVersion(stream) });
      expect((await log.verify()).ok).toBe(true);
    } finally {
      await log.close();
    }
    const text = await turnlog(["verify"]);
    expect(text.code).toBe(1);
    expect(text.stdout).toMatch(new RegExp(`^unsealed-approval: stream session-${sessionId} position \\d+: the approval answer at position \\d+ \\(turn.approval.granted by "mallory"\\)`, "m"));
    const { code, report } = await verifyJson();
    expect(code).toBe(1);
    expect(report.faults[0]).toMatchObject({ kind: "unsealed-approval", stream: `session-${sessionId}`, eventType: "turn.approval.granted" });
  });

  it("a whole session planted in a log that seals: unsealed-stream, exit 1", async () => {
    expect((await turnlog(["demo"])).code).toBe(0);
    await asForger([{ content: "nothing to see" }], async (runtime) => {
      await (await runtime.openSession("planted")).send("hello");
    });
    const text = await turnlog(["verify"]);
    expect(text.code).toBe(1);
    expect(text.stdout).toMatch(/^unsealed-stream: stream session-planted position 1: stream session-planted was never sealed/m);
  });

  it("a deleted witness: no-witness, exit 1", async () => {
    expect((await turnlog(["demo"])).code).toBe(0);
    const witnessFile = witnessFileOf(path.join(workDir, ".turnlog"));
    expect(existsSync(witnessFile)).toBe(true);
    await rm(witnessFile);
    const text = await turnlog(["verify"]);
    expect(text.code).toBe(1);
    expect(text.stdout).toMatch(/^no-witness: stream session-demo-\S+: no witness at \S+\.json, though the seals of session-demo-\S+ say the log was witnessed at /m);
  });

  it("a run log deleted, with its witness: plain verify names it emptied-log where turnlog run wrote it, not ./.turnlog", async () => {
    server.enqueue(openAiSse([textChunk("Nothing to do."), finishChunk("stop")]));
    expect((await turnlog(["run", ...modelFlags(), "hello"])).code).toBe(0);
    // A log in the workspace that would verify fine must not stand in for the deleted one.
    expect((await turnlog(["demo"])).code).toBe(0);
    const runLog = defaultRunLogDirectory(workDir);
    await rm(runLog, { recursive: true, force: true });
    await rm(SealWitness.forLogDirectory(runLog, { directory: sealKeyDirectory() }).file);
    const text = await turnlog(["verify"]);
    expect(text.code).toBe(1);
    expect(text.stdout).toMatch(/^emptied-log: stream \?: the log holds no events, but the seal key's record says it sealed this log/m);
    const { code, report } = await verifyJson();
    expect(code).toBe(1);
    expect(report.faults.map((fault) => fault.kind)).toEqual(["no-witness", "emptied-log"]);
    expect(report.faults[0]?.reason).toContain("the seal key's record says");
  });

  it("--json prints JSON whatever the log: missing, named twice, or with damaged files", async () => {
    const missing = await turnlog(["verify", "--dir", "never-there", "--json"]);
    expect(missing.code).toBe(1);
    expect(JSON.parse(missing.stdout)).toMatchObject({ ok: false, faults: [], error: { code: "TURNLOG_CLI", exitCode: 1, message: expect.stringContaining("no log at never-there") } });
    const twice = await turnlog(["verify", "--dir", "a", "--log", "b", "--json"]);
    expect(twice.code).toBe(2);
    expect(JSON.parse(twice.stdout)).toMatchObject({ ok: false, error: { exitCode: 2, message: expect.stringContaining("--log and --dir both name the log") } });
    expect((await turnlog(["demo"])).code).toBe(0);
    for (const file of await readdir(path.join(workDir, ".turnlog"))) {
      if (file.startsWith("MANIFEST-") || file === "CURRENT") await writeFile(path.join(workDir, ".turnlog", file), "not leveldb\n");
    }
    const damaged = await turnlog(["verify", "--json"]);
    expect(damaged.code).toBe(1);
    expect(JSON.parse(damaged.stdout)).toMatchObject({ ok: false });
  });
});

describe("turnlog run --witness with an HTTP witness on 127.0.0.1", () => {
  it("keeps the witness there, and verify — finding it from the seal key's record, or told with --witness — names a dropped tail the log alone hides", async () => {
    const witnessServer = await startAppendOnlyWitnessServer();
    try {
      server.enqueue(openAiSse([textChunk("First answer."), finishChunk("stop")]));
      const first = await turnlog(["run", ...modelFlags(), "--witness", witnessServer.url, "hello"]);
      expect(first.code).toBe(0);
      const sessionId = sessionIdIn(first.stdout);
      const stream = `session-${sessionId}`;
      const runLog = defaultRunLogDirectory(workDir);
      const sealedAfterFirst = (await rawStream(runLog, stream)).length;
      server.enqueue(openAiSse([textChunk("Second answer."), finishChunk("stop")]));
      expect((await turnlog(["run", ...modelFlags(), "--session", sessionId, "again"])).code).toBe(0);
      expect([...witnessServer.records.values()].flat().length).toBeGreaterThanOrEqual(2);
      // Nothing beside the key: the witness is kept only where the user cannot roll it back.
      expect(existsSync(SealWitness.forLogDirectory(runLog, { directory: sealKeyDirectory() }).file)).toBe(false);
      expect((await verifyJson()).report).toMatchObject({ ok: true, witness: { file: witnessServer.url } });

      await dropTail(runLog, stream, sealedAfterFirst);
      const { code, report } = await verifyJson();
      expect(code).toBe(1);
      expect(report.faults.map((fault) => [fault.kind, fault.stream])).toEqual([["dropped-tail", stream]]);
      expect((await verifyJson(["--witness", witnessServer.url])).report.faults[0]?.kind).toBe("dropped-tail");
      // The seal key's record removed as well: the log's own seals still say where the witness is.
      await rm(SealedLogRecord.forLogLocation({ dir: runLog }, { directory: sealKeyDirectory() }).file);
      const text = await turnlog(["verify"]);
      expect(text.code).toBe(1);
      expect(text.stdout).toMatch(new RegExp(`^dropped-tail: stream ${stream} position ${sealedAfterFirst + 1}: `, "m"));
      expect(text.stdout).toContain(`· witness ${witnessServer.url}`);
    } finally {
      await witnessServer.close();
    }
  });
});

describe("turnlog witness serve", () => {
  /** Starts `turnlog witness serve --dir <records>` as a child; resolves once it printed its URL. */
  async function serveWitness(records: string): Promise<{ url: string; stop(): Promise<void> }> {
    const child = spawn(process.execPath, [path.join(repoRoot, "bin", "turnlog.js"), "witness", "serve", "--dir", records], { cwd: workDir, env: process.env });
    let stdout = "";
    const url = await new Promise<string>((resolve, reject) => {
      child.stdout.on("data", (chunk: Buffer) => {
        stdout += chunk.toString();
        const found = /^ {2}(http:\/\/127\.0\.0\.1:\d+)$/m.exec(stdout)?.[1];
        if (found !== undefined) resolve(found);
      });
      child.on("exit", (code) => reject(new Error(`turnlog witness serve exited ${String(code)}: ${stdout}`)));
    });
    const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)));
    return {
      url,
      async stop() {
        child.kill("SIGTERM");
        expect(await exited).toBe(0);
      },
    };
  }

  it("keeps a run's seals in its directory across restarts, and refuses to take any back", async () => {
    const records = path.join(workDir, "..", `${path.basename(workDir)}-witness-records`);
    const first = await serveWitness(records);
    let stream = "";
    try {
      server.enqueue(openAiSse([textChunk("Witnessed."), finishChunk("stop")]));
      const run = await turnlog(["run", ...modelFlags(), "--witness", first.url, "hello"]);
      expect(run.code).toBe(0);
      stream = `session-${sessionIdIn(run.stdout)}`;
      expect((await verifyJson()).report).toMatchObject({ ok: true, witness: { file: first.url } });
      const name = logIdentity({ dir: defaultRunLogDirectory(workDir) }).name;
      expect((await fetch(`${first.url}/logs/${name}/seals`, { method: "DELETE" })).status).toBe(405);
    } finally {
      await first.stop();
    }
    // Restarted on the same directory (another port): the records are still there.
    const second = await serveWitness(records);
    try {
      const { code, report } = await verifyJson(["--witness", second.url]);
      expect(code).toBe(0);
      expect(report).toMatchObject({ ok: true, witness: { file: second.url } });
      expect(report.witness?.streams).toBeGreaterThanOrEqual(1);
      // With the run's tail dropped, the restarted witness tells.
      const runLog = defaultRunLogDirectory(workDir);
      await dropTail(runLog, stream, 1);
      const dropped = await verifyJson(["--witness", second.url]);
      expect(dropped.code).toBe(1);
      expect(dropped.report.faults.map((fault) => fault.kind)).toContain("dropped-tail");
    } finally {
      await second.stop();
      await rm(records, { recursive: true, force: true });
    }
  });
});
