import { execFile } from "node:child_process";
import { createHash } from "node:crypto";
import { cp, mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import "../support/isolated-user-directories.js";
import { runCli } from "../../src/cli/run-cli.js";
import { LogCorruptedError } from "../../src/errors/log-corrupted-error.js";
import { LevelEventLog } from "../../src/log/level/level-event-log.js";
import { openLog } from "../../src/reader/index.js";
import { disk } from "../../soak/families/disk.js";
import { startLogChild } from "../support/log-child-process.js";

const repositoryRoot = fileURLToPath(new URL("../..", import.meta.url));
let work: string;

beforeAll(async () => {
  work = await mkdtemp(path.join(tmpdir(), "turnlog-disk-test-"));
});
afterAll(async () => {
  await rm(work, { recursive: true, force: true });
});

async function cli(argv: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = "";
  let stderr = "";
  const code = await runCli(argv, { stdout: { write: (text: string) => (stdout += text) }, stderr: { write: (text: string) => (stderr += text) }, env: process.env });
  return { code, stdout, stderr };
}

async function fingerprint(directory: string): Promise<string> {
  const hash = createHash("sha256");
  for (const name of (await readdir(directory)).sort()) hash.update(name).update(await readFile(path.join(directory, name)));
  return hash.digest("hex");
}

describe("the disk fault family, CI-sized", () => {
  it("injects every kind of disk fault once with every invariant holding", async () => {
    const result = await disk.run({ seed: 17, count: disk.ciCount, log: () => {} });
    expect(result.failures, result.failures.join("\n")).toEqual([]);
    expect(result.failed).toBe(0);
    expect(result.passed).toBe(disk.ciCount);
    for (const kind of ["enospc", "fsync", "truncated-table", "truncated-log", "truncated-manifest", "corrupted-table", "corrupted-log", "corrupted-manifest"]) expect(result.summary).toContain(`${kind} 1`);
  }, 120_000);
});

describe("a damaged write-ahead file (issue 17: events --json exited 0 with 663 of 668 events)", () => {
  it("makes events fail naming the file, verify name the first bad position, and repair salvage a log that opens, verifies and replays", async () => {
    const directory = path.join(work, "damaged-wal");
    await cp(path.join(repositoryRoot, "test/fixtures/level/v1-run"), directory, { recursive: true });
    const sessionId = await (async () => {
      const copy = path.join(work, "session-id");
      await cp(directory, copy, { recursive: true });
      const reader = await openLog({ dir: copy });
      try {
        return (await reader.sessions())[0]!.id;
      } finally {
        await reader.close();
      }
    })();
    const intact = await cli(["events", sessionId, "--log", path.join(work, "session-id"), "--json"]);
    const all = (JSON.parse(intact.stdout) as unknown[]).length;
    // One byte of a batch in the first 32 KiB block of 000003.log: LevelDB would drop it and the rest of its block.
    const wal = path.join(directory, "000003.log");
    const bytes = await readFile(wal);
    bytes[20_000] = bytes[20_000]! ^ 0x41;
    await writeFile(wal, bytes);
    const before = await fingerprint(directory);

    await expect(LevelEventLog.open(directory)).rejects.toSatisfy((error: unknown) => LogCorruptedError.isInstance(error) && error.file === "000003.log" && /000003\.log at byte \d+: checksum mismatch/.test(error.message));
    const events = await cli(["events", sessionId, "--log", directory, "--json"]);
    expect(events.code).not.toBe(0);
    expect(events.stdout).toBe("");
    expect(events.stderr).toMatch(/000003\.log at byte \d+/);
    const verified = await cli(["verify", "--log", directory, "--json"]);
    expect(verified.code).toBe(1);
    const report = JSON.parse(verified.stdout) as { ok: boolean; damagedFile: { file: string }; faults: Array<{ kind: string; stream: string; position: number }> };
    expect(report.ok).toBe(false);
    expect(report.damagedFile.file).toBe("000003.log");
    const chainFault = report.faults.find((fault) => fault.kind === "chain" && fault.stream === `session-${sessionId}`);
    expect(chainFault?.position).toBeGreaterThan(1);

    const out = path.join(work, "repaired");
    const repaired = await cli(["repair", directory, "--out", out, "--json"]);
    expect(repaired.code).toBe(1);
    const repair = JSON.parse(repaired.stdout) as { kept: number; dropped: number; streams: Array<{ stream: string; kept: number; dropped: number; firstBadPosition: number }> };
    const row = repair.streams.find((candidate) => candidate.stream === `session-${sessionId}`)!;
    expect(row.kept).toBe(chainFault!.position - 1);
    expect(row.firstBadPosition).toBe(chainFault!.position);
    expect(row.kept + row.dropped).toBe(all);
    expect(await fingerprint(directory)).toBe(before);

    const reader = await openLog({ dir: out });
    try {
      expect(await reader.verify()).toMatchObject({ ok: true });
      expect((await reader.events(sessionId)).length).toBe(row.kept);
    } finally {
      await reader.close();
    }
    // Replayed as `turnlog replay` does (a version-1 log: the workspace's tools judge its decisions).
    const replay = await cli(["replay", sessionId, "--log", out]);
    expect(replay.stdout).toMatch(/^identical: \d+ decisions recomputed, 0 divergences/m);
    expect(replay.code).toBe(0);
    const repairedEvents = await cli(["events", sessionId, "--log", out, "--json"]);
    expect(repairedEvents.code).toBe(0);
    expect((JSON.parse(repairedEvents.stdout) as unknown[]).length).toBe(row.kept);
  }, 60_000);
});

describe("a failing fsync", () => {
  it("fails the append unacknowledged and unseen by subscribers, refuses later appends, and the log reopens", async () => {
    const shim = path.join(work, "shim.so");
    await promisify(execFile)("cc", ["-shared", "-fPIC", "-O2", "-o", shim, path.join(repositoryRoot, "test/support/disk-fault-shim.c"), "-ldl"]);
    const directory = path.join(work, "fsync");
    const previous = { ...process.env };
    Object.assign(process.env, { LD_PRELOAD: shim, DISK_FAULT_DIR: directory, DISK_FAULT_MODE: "fsync", DISK_FAULT_AFTER: "5" });
    let child;
    try {
      child = startLogChild("disk-fault-child.ts", [directory, "1", "20"]);
    } finally {
      for (const key of ["LD_PRELOAD", "DISK_FAULT_DIR", "DISK_FAULT_MODE", "DISK_FAULT_AFTER"]) {
        if (previous[key] === undefined) delete process.env[key];
        else process.env[key] = previous[key];
      }
    }
    expect((await child.exited).code).toBe(0);
    const acked = child.lines.filter((line) => line.startsWith("acked "));
    const rejected = child.lines.filter((line) => line.startsWith("rejected ")).map((line) => JSON.parse(line.slice("rejected ".length)) as { code: string; errno: string; message: string; version: number });
    // The open's first write and four appends were synced; the fifth append's fsync failed.
    expect(acked.length).toBe(4);
    expect(rejected).toEqual([expect.objectContaining({ code: "TURNLOG_LOG_WRITE", errno: "EIO", version: 5 })]);
    expect(rejected[0]!.message).toContain(directory);
    expect(child.lines.filter((line) => line.startsWith("seen ")).map((line) => line.split(" ").slice(0, 3).join(" "))).toEqual(["seen w0 1", "seen w0 2", "seen w0 3", "seen w0 4"]);
    expect(child.lines).toContain(`refused ${JSON.stringify({ code: "TURNLOG_LOG_WRITE" })}`);
    expect(child.lines).toContain("closed");

    const log = await LevelEventLog.open(directory);
    try {
      const versions: number[] = [];
      for await (const event of log.readAll()) versions.push(event.meta.streamPosition);
      // Events 1–4 were acknowledged; whether the page cache still wrote event 5 is what a failed fsync leaves unknown.
      expect(versions.slice(0, 4)).toEqual([1, 2, 3, 4]);
      expect(versions.length).toBeLessThanOrEqual(5);
      expect(await log.verify()).toMatchObject({ ok: true });
      await log.appendToStream("w0", [{ type: "test.disk.appended", data: {} }], { expectedStreamVersion: versions.length });
    } finally {
      await log.close();
    }
  }, 60_000);
});
