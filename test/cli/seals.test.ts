import { execFile, spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdtemp, readdir, rm, stat } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { defaultRunLogDirectory, sealKeyDirectory } from "../../src/log/seal/user-directories.js";
import type { SealedVerifyReport } from "../../src/log/seal/seal-verifier.js";
import { finishChunk, textChunk } from "../providers/stream-builders.js";
import { fakeKey } from "../providers/support/provider-session.js";
import { openAiSse, startSseTestServer, type SseTestServer } from "../providers/support/sse-test-server.js";
import { rechainStream } from "../support/level-tamper.js";
import { ensureBuiltCli, repoRoot, runTurnlog } from "./support/turnlog-bin.js";

/*
 * Seals and the witness end to end: the built bin as a child process on a real LevelDB log, the
 * log tampered with as an agent with file access would (truncate, rm, a re-chained rewrite), and
 * a `turnlog run` killed with SIGKILL mid-turn.
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

const turnlog = (args: readonly string[]) => runTurnlog(args, { cwd: workDir, env: { [keyEnv]: fakeKey } });
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
    await expect.poll(() => server.requests.length, { timeout: 20_000 }).toBe(2);
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
  });
});
