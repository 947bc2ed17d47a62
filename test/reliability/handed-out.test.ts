/**
 * What was handed out is true (issue 31): every event a subscriber (`log.subscribe`) or a follower
 * (`session.events()`) was handed is in the log after it is reopened — at the same position,
 * unchanged (same hash) — however the process writing it ended: a full disk, or kill -9 at seeded
 * moments while the disk is slow. A consumer that follows by position can then never skip an event
 * that a later one replaced. Real parts: a child process running a runtime on a LevelDB log on
 * disk, the LD_PRELOAD disk fault shim (test/support/disk-fault-shim.c), a tmpfs that fills up
 * (mounted in a private namespace with `unshare`), real SIGKILLs.
 */
import { execFile, spawn } from "node:child_process";
import { once } from "node:events";
import { mkdir, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { LevelEventLog } from "../../src/log/level/level-event-log.js";
import type { RecordedEvent } from "../../src/log/event-log.js";
import { sessionStream } from "../../src/core/session-stream.js";
import { bundleScripts } from "../../soak/kill/child-bundle.js";
import type { ScriptBundle } from "../../soak/kill/child-bundle.js";
import { startNodeChild } from "../support/log-child-process.js";
import type { LogChildProcess } from "../support/log-child-process.js";

const repositoryRoot = fileURLToPath(new URL("../..", import.meta.url));
/** The session test/support/handed-out-child.ts runs. */
const stream = sessionStream("handed-out");
let work: string;
let shim: string;
/** test/support/handed-out-child.ts, bundled once: the test starts it nine times. */
let bundle: ScriptBundle;

beforeAll(async () => {
  work = await mkdtemp(path.join(tmpdir(), "turnlog-handed-out-"));
  shim = path.join(work, "disk-fault-shim.so");
  await promisify(execFile)("cc", ["-shared", "-fPIC", "-O2", "-o", shim, path.join(repositoryRoot, "test/support/disk-fault-shim.c"), "-ldl"]);
  bundle = await bundleScripts({ child: "test/support/handed-out-child.ts" });
}, 60_000);
afterAll(async () => {
  await rm(work, { recursive: true, force: true });
  await bundle?.remove();
});

function startChild(directory: string, workspace: string, messages: number, env?: NodeJS.ProcessEnv): LogChildProcess {
  return startNodeChild([bundle.scripts.child!], [directory, workspace, String(messages)], env);
}

interface HandedOut {
  stream: string;
  position: number;
  type: string;
  hash: string;
  /** Which child handed it out, and how (`seen` by a subscriber, `followed` from `session.events()`). */
  by: string;
}

/** The events a child handed out to its subscriber and its follower, from its output lines. */
function handedOut(child: Pick<LogChildProcess, "lines">, run: string): HandedOut[] {
  return child.lines.flatMap((line) => {
    const [word, eventStream = "", position = "", type = "", hash = ""] = line.split(" ");
    if (word !== "seen" && word !== "followed") return [];
    return [{ stream: eventStream, position: Number(position), type, hash, by: `${run} ${word}` }];
  });
}

/** Every handed-out event that the log in `directory`, reopened, does not hold as it was handed out. */
async function missingFromLog(directory: string, handed: readonly HandedOut[]): Promise<string[]> {
  const log = await LevelEventLog.open(directory);
  try {
    const streams = new Map<string, RecordedEvent[]>();
    const missing: string[] = [];
    for (const event of handed) {
      if (!streams.has(event.stream)) streams.set(event.stream, await log.readStream(event.stream, { maxCount: Number.MAX_SAFE_INTEGER }));
      const stored = streams.get(event.stream)?.[event.position - 1];
      if (stored?.type !== event.type || stored.meta.hash !== event.hash) {
        missing.push(`${event.by}: ${event.stream}@${event.position} ${event.type}; the log holds ${stored === undefined ? "nothing" : `${stored.type} ${stored.meta.hash.slice(0, 12)}`} there`);
      }
    }
    expect((await log.verify()).ok).toBe(true);
    return missing;
  } finally {
    await log.close();
  }
}

function withShim(directory: string, mode: string, extra: Record<string, string>): NodeJS.ProcessEnv {
  return { ...process.env, LD_PRELOAD: shim, DISK_FAULT_DIR: directory, DISK_FAULT_MODE: mode, ...extra };
}

/** Runs the child to its end (no kill) and returns it. */
async function runToEnd(directory: string, workspace: string, messages: number, env?: NodeJS.ProcessEnv): Promise<LogChildProcess> {
  const child = startChild(directory, workspace, messages, env);
  const { code } = await child.exited;
  expect(code, child.stderr()).toBe(0);
  return child;
}

function lineOf(child: LogChildProcess, word: string): { code: string | null; message: string } | undefined {
  const line = child.lines.find((candidate) => candidate.startsWith(`${word} `));
  return line === undefined ? undefined : (JSON.parse(line.slice(word.length + 1)) as { code: string | null; message: string });
}

describe("every event handed to a subscriber or a follower is in the reopened log, unchanged (issue 31)", () => {
  // Where the disk fills: after this many writes of the write-ahead file (two per batch), seeded.
  const fullAfter = fc.sample(fc.integer({ min: 6, max: 40 }), { seed: 31, numRuns: 2 });

  it.each(fullAfter)("on a full disk (after %i writes): the session stops with LogWriteError, and the reopened log goes on from what was written", async (after) => {
    const directory = path.join(work, `full-${after}`);
    const workspace = path.join(work, `full-${after}-workspace`);
    await mkdir(workspace, { recursive: true });
    const full = await runToEnd(directory, workspace, 12, withShim(directory, "enospc", { DISK_FAULT_AFTER: String(after) }));
    expect(full.stderr()).toContain("disk-fault-shim: ENOSPC");
    expect(lineOf(full, "failed")).toMatchObject({ code: "TURNLOG_LOG_WRITE", message: expect.stringContaining("no space left on device") });
    // The same session refuses to go on in this process (how it words that is the runtime's).
    expect(lineOf(full, "refused")?.code).toMatch(/^TURNLOG_/);
    const handed = handedOut(full, "full disk run");
    expect(handed.length).toBeGreaterThan(0);
    expect(await missingFromLog(directory, handed)).toEqual([]);

    // Space freed: the session goes on from what was written, with no hole and no position twice.
    const next = await runToEnd(directory, workspace, 12);
    expect(next.lines).toContain("final completed");
    expect(await missingFromLog(directory, [...handed, ...handedOut(next, "next run")])).toEqual([]);
    const log = await LevelEventLog.open(directory);
    try {
      const events = await log.readStream(stream, { maxCount: Number.MAX_SAFE_INTEGER });
      expect(events.map((event) => event.meta.streamPosition)).toEqual(events.map((_, index) => index + 1));
    } finally {
      await log.close();
    }
  }, 60_000);

  it("on a real full disk (a 160 KiB tmpfs): the session stops with LogWriteError, and the log, moved to a disk with space, goes on", async () => {
    // A private mount namespace (unshare, as any user where user namespaces are allowed) holds the
    // tmpfs; what the child left on it is copied out as it is, since the tmpfs goes with the namespace.
    const mountPoint = path.join(work, "tmpfs");
    const copied = path.join(work, "tmpfs-log");
    const workspace = path.join(work, "tmpfs-workspace");
    await mkdir(mountPoint, { recursive: true });
    await mkdir(workspace, { recursive: true });
    const script = 'mount -t tmpfs -o size=160k tmpfs "$1" || exit 90; "$2" "$3" "$1/log" "$4" 40; status=$?; cp -a "$1/log" "$5"; exit $status';
    const full = spawn("unshare", ["--user", "--map-root-user", "--mount", "sh", "-c", script, "sh", mountPoint, process.execPath, bundle.scripts.child!, workspace, copied], { stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    full.stdout.setEncoding("utf8").on("data", (chunk: string) => (stdout += chunk));
    full.stderr.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk));
    const [code] = (await once(full, "close")) as [number | null];
    expect(code, stderr).toBe(0);
    const lines = stdout.split("\n");
    const failed = lines.find((line) => line.startsWith("failed "));
    expect(failed, "the disk never filled up").toBeDefined();
    expect(JSON.parse(failed!.slice("failed ".length))).toMatchObject({ code: "TURNLOG_LOG_WRITE", message: expect.stringContaining("no space left on device") });
    const handed = handedOut({ lines }, "full tmpfs run");
    expect(handed.length).toBeGreaterThan(0);
    expect(await missingFromLog(copied, handed)).toEqual([]);
    const next = await runToEnd(copied, workspace, 40);
    expect(next.lines).toContain("final completed");
    expect(await missingFromLog(copied, [...handed, ...handedOut(next, "next run")])).toEqual([]);
  }, 60_000);

  it("after kill -9 at seeded moments of a slow disk, and a run to the end", async () => {
    const directory = path.join(work, "killed");
    const workspace = path.join(work, "killed-workspace");
    await mkdir(workspace, { recursive: true });
    // Each kill lands right after the n-th event the run's subscriber was handed; every write of
    // the write-ahead file takes 30 ms, so the kill reaches the child while a batch is being written.
    const kills = fc.sample(fc.integer({ min: 1, max: 12 }), { seed: 3_100, numRuns: 2 });
    const handed: HandedOut[] = [];
    for (const [run, nth] of kills.entries()) {
      const child = startChild(directory, workspace, 6, withShim(directory, "slow", { DISK_FAULT_DELAY_MS: "30" }));
      await child.waitForLine((line, index) => line.startsWith("seen ") && child.lines.slice(0, index + 1).filter((earlier) => earlier.startsWith("seen ")).length >= nth);
      child.child.kill("SIGKILL");
      const { signal } = await child.exited;
      expect(signal).toBe("SIGKILL");
      handed.push(...handedOut(child, `run ${run} (killed after seen #${nth})`));
    }
    const last = await runToEnd(directory, workspace, 6);
    expect(last.lines).toContain("final completed");
    handed.push(...handedOut(last, "last run"));
    expect(await missingFromLog(directory, handed)).toEqual([]);
  }, 60_000);
});
