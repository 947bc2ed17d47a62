/**
 * The disk fault family (docs/reliability.md): faults of the disk under a LevelDB log, each at a
 * seeded position, on real LevelDB directories.
 *
 * - `enospc`, `fsync`: a child process (test/support/disk-fault-child.ts) appends — every third
 *   append of a writer `durable: false`, written behind — with the LD_PRELOAD shim
 *   test/support/disk-fault-shim.c loaded, which fails a write of the write-ahead file with
 *   ENOSPC (half of it written: a torn record) or an fdatasync with EIO, after a seeded number of
 *   successful ones. The shim is compiled with `cc` into a temporary directory per run.
 * - `truncated-*`, `corrupted-*`: a copy of a log holding a table, a write-ahead file and a
 *   MANIFEST is cut at a seeded byte, or has a seeded byte changed, in the file of the kind.
 *
 * Invariants: the right typed error (`LogWriteError` naming the directory and the cause;
 * `LogCorruptedError` naming the damaged file); every acknowledged event, and every event a
 * subscriber was handed, present and unchanged after a reopen, and the log opens and appends
 * afterwards; nothing silently dropped or changed — a read either
 * returns every acknowledged event as it was written or fails with `LogCorruptedError`, `verify`
 * (and `turnlog verify`, `turnlog events --json`) never succeed on a short or changed log, except
 * that a write-ahead file cut short reads as a whole prefix (what a crash leaves; docs/log.md,
 * "Damaged files"); `turnlog repair` leaves the damaged log unchanged and writes a log that opens,
 * verifies, and holds exactly each stream's acknowledged prefix it reports as kept.
 */
import { execFile, spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { cp, mkdir, mkdtemp, readdir, readFile, realpath, rm, stat, truncate, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { runCli } from "../../src/cli/run-cli.js";
import { sessionStream } from "../../src/core/session-stream.js";
import { LogCorruptedError } from "../../src/errors/log-corrupted-error.js";
import type { RecordedEvent } from "../../src/log/event-log.js";
import { findDamagedFile } from "../../src/log/level/level-files.js";
import { LevelEventLog } from "../../src/log/level/level-event-log.js";
import { repairLevelLog } from "../../src/log/level/level-repair.js";
import type { SoakFamily, SoakOptions, SoakResult } from "../family.js";

const repositoryRoot = fileURLToPath(new URL("../..", import.meta.url));
const run = promisify(execFile);

/** Every kind of fault, in the order cases cycle through them. */
export const diskFaultKinds = ["enospc", "fsync", "truncated-table", "truncated-log", "truncated-manifest", "corrupted-table", "corrupted-log", "corrupted-manifest"] as const;
export type DiskFaultKind = (typeof diskFaultKinds)[number];

/** A deterministic generator of numbers in [0, 1) (mulberry32): the same seed, the same cases. */
function seeded(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 2 ** 32;
  };
}

/** Which of the ways a case could end it ended in (for the summary). */
type Outcome = "refused-and-recovered" | "open-named-file" | "read-named-file" | "verify-found" | "tail-cut-like-a-crash" | "harmless";

interface CaseResult {
  outcome: Outcome;
  /** Acknowledged events, and how many of them a repair kept (file faults that were found). */
  repaired?: { acked: number; kept: number };
}

interface Context {
  work: string;
  shim: string;
  base: { directory: string; events: RecordedEvent[]; streams: string[] };
}

const baseStreams = ["disk-a", "disk-b", "disk-c"];

export const disk: SoakFamily = {
  name: "disk",
  soakCount: 280,
  ciCount: diskFaultKinds.length,
  async run({ seed, count, log }: SoakOptions): Promise<SoakResult> {
    const work = await realpath(await mkdtemp(path.join(tmpdir(), "turnlog-soak-disk-")));
    try {
      const shim = await compileShim(work);
      const base = await buildBase(path.join(work, "base"));
      const context: Context = { work, shim, base };
      const perKind = new Map<DiskFaultKind, number>(diskFaultKinds.map((kind) => [kind, 0]));
      const outcomes = new Map<Outcome, number>();
      const failures: string[] = [];
      let acked = 0;
      let kept = 0;
      let passed = 0;
      for (let index = 0; index < count; index += 1) {
        const kind = diskFaultKinds[index % diskFaultKinds.length]!;
        perKind.set(kind, (perKind.get(kind) ?? 0) + 1);
        const random = seeded(seed * 1_000_003 + index);
        const directory = path.join(work, `case-${index}`);
        try {
          const result = kind === "enospc" || kind === "fsync" ? await writeFaultCase(kind, random, directory, context) : await fileFaultCase(kind, random, directory, context);
          outcomes.set(result.outcome, (outcomes.get(result.outcome) ?? 0) + 1);
          acked += result.repaired?.acked ?? 0;
          kept += result.repaired?.kept ?? 0;
          passed += 1;
        } catch (error) {
          failures.push(`case ${index} (${kind}; reproduce: npm run soak -- --family disk --seed ${seed} --count disk=${index + 1}): ${error instanceof Error ? error.message : String(error)}`);
        } finally {
          await rm(directory, { recursive: true, force: true });
          await rm(`${directory}-repaired`, { recursive: true, force: true });
        }
        if ((index + 1) % 40 === 0) log(`${index + 1}/${count} cases, ${failures.length} failed`);
      }
      const kinds = diskFaultKinds.map((kind) => `${kind} ${perKind.get(kind)}`).join(", ");
      const ends = [...outcomes].map(([outcome, times]) => `${outcome} ${times}`).join(", ");
      return {
        passed,
        failed: failures.length,
        summary: `${count} disk faults (${kinds}); outcomes: ${ends}; repair kept ${kept} of ${acked} acknowledged events of the damaged logs`,
        failures,
      };
    } finally {
      await rm(work, { recursive: true, force: true });
    }
  },
};

/** Compiles the LD_PRELOAD shim into `work` (a binary is never committed). */
async function compileShim(work: string): Promise<string> {
  const output = path.join(work, "disk-fault-shim.so");
  await run("cc", ["-shared", "-fPIC", "-O2", "-o", output, path.join(repositoryRoot, "test/support/disk-fault-shim.c"), "-ldl"]);
  return output;
}

/**
 * A log with every kind of file: events appended, the log closed and reopened (LevelDB turns the
 * write-ahead file into a table), more appended, closed. Every event is acknowledged.
 */
async function buildBase(directory: string): Promise<Context["base"]> {
  const streams = baseStreams.map(sessionStream);
  // Fixed IDs and times: the base log is the same bytes on every run, so a failed case's seed and
  // index reproduce the same damage to the same content.
  let tick = 0;
  const clock = { now: () => Date.UTC(2026, 0, 1) + tick++ };
  let id = 0;
  const ids = { next: () => `00000000-0000-4000-8000-${String(id++).padStart(12, "0")}` };
  for (const [round, perStream] of [[0, 120], [1, 50]] as const) {
    const log = await LevelEventLog.open(directory, { durability: "sync", clock, ids });
    for (let index = 0; index < perStream; index += 1) {
      await Promise.all(streams.map((stream) => log.appendToStream(stream, [{ type: "test.disk.appended", data: { round, index, padding: "y".repeat(200 + ((index * 37) % 300)) } }], { durable: index % 5 === 0 })));
    }
    await log.close();
  }
  // Read from a copy: an open turns the write-ahead file into a table, and the base keeps one.
  const copy = `${directory}-read`;
  await cp(directory, copy, { recursive: true });
  const log = await LevelEventLog.open(copy);
  try {
    const events: RecordedEvent[] = [];
    for await (const event of log.readAll()) events.push(event);
    const report = await log.verify();
    if (!report.ok) throw new Error(`the base log does not verify: ${report.reason}`);
    const names = await readdir(directory);
    for (const pattern of Object.values(fileOf)) {
      const file = names.find((name) => pattern.test(name));
      if (file === undefined || (await stat(path.join(directory, file))).size === 0) throw new Error(`the base log has no non-empty file matching ${pattern}: ${names.join(", ")}`);
    }
    return { directory, events, streams };
  } finally {
    await log.close();
    await rm(copy, { recursive: true, force: true });
  }
}

interface ChildLines {
  acked: Array<{ stream: string; version: number }>;
  /** `durable: false` appends answered before their batch was written: a failed batch loses them. */
  answered: Array<{ stream: string; version: number }>;
  seen: Array<{ stream: string; version: number; hash: string }>;
  rejected: Array<{ code?: string; errno?: string; message: string; stream: string; version: number }>;
  refused: { code?: string; acked?: boolean } | undefined;
  closed: boolean;
  stderr: string;
}

function runChild(directory: string, env: NodeJS.ProcessEnv): Promise<ChildLines> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ["--import", "tsx", path.join(repositoryRoot, "test/support/disk-fault-child.ts"), directory, "2", "60", "mixed"], { cwd: repositoryRoot, env, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.setEncoding("utf8").on("data", (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk));
    const timer = setTimeout(() => child.kill("SIGKILL"), 60_000);
    child.on("exit", (code, signal) => {
      clearTimeout(timer);
      if (code !== 0) {
        reject(new Error(`the child exited ${code ?? signal}; stderr: ${stderr.slice(-500)}`));
        return;
      }
      const lines: ChildLines = { acked: [], answered: [], seen: [], rejected: [], refused: undefined, closed: false, stderr };
      for (const line of stdout.split("\n")) {
        const [word, ...rest] = line.split(" ");
        if (word === "acked") lines.acked.push({ stream: rest[0]!, version: Number(rest[1]) });
        else if (word === "answered") lines.answered.push({ stream: rest[0]!, version: Number(rest[1]) });
        else if (word === "seen") lines.seen.push({ stream: rest[0]!, version: Number(rest[1]), hash: rest[2]! });
        else if (word === "rejected") lines.rejected.push(JSON.parse(rest.join(" ")) as ChildLines["rejected"][number]);
        else if (word === "refused") lines.refused = JSON.parse(rest.join(" ")) as ChildLines["refused"];
        else if (word === "closed") lines.closed = true;
      }
      resolve(lines);
    });
  });
}

function check(condition: boolean, what: string): asserts condition {
  if (!condition) throw new Error(what);
}

/** ENOSPC during an append, or a failing fsync: the append fails typed and unacknowledged, and the log recovers. */
async function writeFaultCase(kind: "enospc" | "fsync", random: () => number, directory: string, context: Context): Promise<CaseResult> {
  await mkdir(directory, { recursive: true });
  // Two stdio writes per record (header, payload), and the open's own first write; one sync per
  // group with a durable append (about 20 in a run: a third of the appends are written behind).
  const after = kind === "enospc" ? 2 + Math.floor(random() * 40) : 1 + Math.floor(random() * 16);
  const lines = await runChild(directory, {
    ...process.env,
    LD_PRELOAD: context.shim,
    DISK_FAULT_DIR: directory,
    DISK_FAULT_MODE: kind,
    DISK_FAULT_AFTER: String(after),
  });
  const where = `fault after ${after}`;
  check(lines.stderr.includes("disk-fault-shim:"), `${where}: the shim never injected the fault`);
  check(lines.rejected.length > 0, `${where}: no append failed`);
  const errno = kind === "enospc" ? "ENOSPC" : "EIO";
  for (const rejection of lines.rejected) {
    check(rejection.code === "TURNLOG_LOG_WRITE", `${where}: the append failed with ${rejection.code}, not TURNLOG_LOG_WRITE: ${rejection.message}`);
    check(rejection.errno === errno, `${where}: errno ${rejection.errno}, not ${errno}`);
    check(rejection.message.includes(directory), `${where}: the error does not name the log directory: ${rejection.message}`);
    if (kind === "enospc") check(rejection.message.includes("no space left on device"), `${where}: the error does not say "no space left on device": ${rejection.message}`);
  }
  check(lines.refused?.code === "TURNLOG_LOG_WRITE", `${where}: an append after the failure was not refused: ${JSON.stringify(lines.refused)}`);
  check(lines.closed, `${where}: the log did not close after the failure`);
  const ackedKeys = new Set(lines.acked.map(({ stream, version }) => `${stream} ${version}`));
  const answeredKeys = new Set(lines.answered.map(({ stream, version }) => `${stream} ${version}`));
  const rejectedKeys = new Set(lines.rejected.map(({ stream, version }) => `${stream} ${version}`));
  const log = await LevelEventLog.open(directory);
  try {
    const present = new Map<string, string>();
    for await (const event of log.readAll()) present.set(`${event.meta.stream} ${event.meta.streamPosition}`, event.meta.hash);
    for (const key of ackedKeys) check(present.has(key), `${where}: acknowledged event ${key} is missing after the reopen`);
    // What a subscriber was handed is in the log, unchanged — written behind or not (docs/log.md,
    // "What a consumer is handed").
    for (const seen of lines.seen) check(present.get(`${seen.stream} ${seen.version}`) === seen.hash, `${where}: a subscriber was handed ${seen.stream} ${seen.version}, which the reopened log does not hold as handed`);
    // After a failed fsync LevelDB cannot say whether the record reached the disk: an event of
    // the failed append may be there (never acknowledged), and a `durable: false` one that was
    // answered may be there or not; no other.
    for (const key of present.keys()) check(ackedKeys.has(key) || answeredKeys.has(key) || rejectedKeys.has(key), `${where}: event ${key} is present but was neither appended nor part of the failed append`);
    const report = await log.verify();
    check(report.ok, `${where}: verify after the reopen: ${report.reason}`);
    await log.appendToStream("after-reopen", [{ type: "test.disk.appended", data: {} }]);
    check((await log.verify()).ok, `${where}: verify after an append on the reopened log`);
  } finally {
    await log.close();
  }
  return { outcome: "refused-and-recovered" };
}

const fileOf: Record<Exclude<DiskFaultKind, "enospc" | "fsync">, RegExp> = {
  "truncated-table": /^\d+\.(ldb|sst)$/,
  "corrupted-table": /^\d+\.(ldb|sst)$/,
  "truncated-log": /^\d+\.log$/,
  "corrupted-log": /^\d+\.log$/,
  "truncated-manifest": /^MANIFEST-\d+$/,
  "corrupted-manifest": /^MANIFEST-\d+$/,
};

async function fingerprint(directory: string): Promise<string> {
  const hash = createHash("sha256");
  for (const name of (await readdir(directory)).sort()) {
    if (name === "LOCK") continue;
    hash.update(name).update(await readFile(path.join(directory, name)));
  }
  return hash.digest("hex");
}

/** A table, write-ahead file or MANIFEST cut short or with a byte changed. */
async function fileFaultCase(kind: Exclude<DiskFaultKind, "enospc" | "fsync">, random: () => number, directory: string, context: Context): Promise<CaseResult> {
  const { base } = context;
  await cp(base.directory, directory, { recursive: true });
  const file = (await readdir(directory)).find((name) => fileOf[kind].test(name));
  if (file === undefined) throw new Error(`the base log has no file for ${kind}`);
  const filePath = path.join(directory, file);
  const { size } = await stat(filePath);
  const at = Math.floor(random() * size);
  let where: string;
  if (kind.startsWith("truncated")) {
    await truncate(filePath, at);
    where = `${file} cut to ${at} of ${size} bytes`;
  } else {
    const bytes = await readFile(filePath);
    const mask = 1 + Math.floor(random() * 255);
    bytes[at] = bytes[at]! ^ mask;
    await writeFile(filePath, bytes);
    where = `${file} byte ${at} of ${size} xor ${mask}`;
  }
  const outcome = await readDamaged(kind, file, directory, base, where);
  if (outcome === "harmless" || outcome === "tail-cut-like-a-crash") return { outcome };
  await cliNeverSucceedsShort(directory, base, where);
  const before = await fingerprint(directory);
  const repaired = await checkRepair(directory, base, where);
  check((await fingerprint(directory)) === before, `${where}: repair changed the damaged log`);
  if (outcome === "open-named-file") {
    // Refused before LevelDB's recovery: the damaged file is still there as it was for a repair.
    check((await readdir(directory)).includes(file), `${where}: ${file} is gone after the refused open`);
  }
  return { outcome, repaired };
}

/** Opens and reads the damaged log; returns how the damage showed, or throws when it went unseen. */
async function readDamaged(kind: DiskFaultKind, file: string, directory: string, base: Context["base"], where: string): Promise<Outcome> {
  let log: LevelEventLog;
  try {
    log = await LevelEventLog.open(directory);
  } catch (error) {
    check(LogCorruptedError.isInstance(error), `${where}: open failed with ${String(error)}, not LogCorruptedError`);
    check(error.file === file, `${where}: open named ${String(error.file)}, not ${file}: ${error.message}`);
    return "open-named-file";
  }
  try {
    const read: RecordedEvent[] = [];
    try {
      for await (const event of log.readAll()) read.push(event);
      for (const stream of base.streams) await log.readStream(stream);
    } catch (error) {
      check(LogCorruptedError.isInstance(error), `${where}: a read failed with ${String(error)}, not LogCorruptedError`);
      check(error.file === undefined || error.file === file, `${where}: a read named ${error.file}, not ${file}`);
      return "read-named-file";
    }
    const same = read.length === base.events.length && read.every((event, index) => event.meta.hash === base.events[index]?.meta.hash && JSON.stringify(event) === JSON.stringify(base.events[index]));
    const report = await log.verify();
    const damage = await findDamagedFile(directory, { deep: true });
    if (same && report.ok) return "harmless";
    if (kind === "truncated-log") {
      // A write-ahead file cut short: the whole prefix before the cut, as after a crash mid-write.
      const prefix = read.every((event, index) => JSON.stringify(event) === JSON.stringify(base.events[index]));
      check(prefix && report.ok, `${where}: the log cut short reads ${read.length} events that are not a whole prefix of the ${base.events.length} written (verify: ${report.reason ?? "ok"})`);
      return "tail-cut-like-a-crash";
    }
    check(!report.ok || damage?.file === file, `${where}: ${same ? "every event reads" : `${read.length} of ${base.events.length} events read, changed or short,`} while verify says ok and the file check names ${damage?.file ?? "nothing"}`);
    return "verify-found";
  } finally {
    await log.close();
  }
}

/** `turnlog verify` and `turnlog events --json` on the damaged log: neither exits 0 with a short or changed answer. */
async function cliNeverSucceedsShort(directory: string, base: Context["base"], where: string): Promise<void> {
  const cli = async (argv: string[]) => {
    let stdout = "";
    const code = await runCli(argv, { stdout: { write: (text: string) => (stdout += text) }, stderr: { write: () => true }, env: process.env });
    return { code, stdout };
  };
  const verified = await cli(["verify", "--log", directory, "--json"]);
  check(verified.code !== 0, `${where}: turnlog verify exited 0 on the damaged log`);
  const id = baseStreams[0]!;
  const events = await cli(["events", id, "--log", directory, "--json"]);
  if (events.code === 0) {
    const printed = JSON.parse(events.stdout) as RecordedEvent[];
    const written = base.events.filter((event) => event.meta.stream === sessionStream(id));
    check(JSON.stringify(printed) === JSON.stringify(written), `${where}: turnlog events --json exited 0 with ${printed.length} of ${written.length} events, or changed ones`);
  }
}

/** `turnlog repair`: a new log holding each stream's verified, acknowledged prefix, as reported. */
async function checkRepair(directory: string, base: Context["base"], where: string): Promise<{ acked: number; kept: number }> {
  const out = `${directory}-repaired`;
  const report = await repairLevelLog(directory, out);
  const log = await LevelEventLog.open(out);
  try {
    const verified = await log.verify();
    check(verified.ok, `${where}: the repaired log does not verify: ${verified.reason}`);
    const read: RecordedEvent[] = [];
    for await (const event of log.readAll()) read.push(event);
    check(read.length === report.kept, `${where}: the repaired log holds ${read.length} events, the report says ${report.kept} kept`);
    const written = new Map(base.events.map((event) => [event.meta.globalPosition, JSON.stringify(event)]));
    for (const event of read) check(written.get(event.meta.globalPosition) === JSON.stringify(event), `${where}: the repaired log holds event ${event.meta.globalPosition} changed or never written`);
    for (const stream of base.streams) {
      const writtenCount = base.events.filter((event) => event.meta.stream === stream).length;
      const keptEvents = await log.readStream(stream);
      const row = report.streams.find((candidate) => candidate.stream === stream);
      const keptCount = row?.kept ?? 0;
      check(keptEvents.length === keptCount, `${where}: stream ${stream}: the report says ${keptCount} kept, the repaired log holds ${keptEvents.length}`);
      check(keptEvents.every((event, index) => event.meta.streamPosition === index + 1), `${where}: stream ${stream}: what was kept is not a prefix`);
      check(keptCount + (row?.dropped ?? 0) <= writtenCount, `${where}: stream ${stream}: kept ${keptCount} + dropped ${row?.dropped} is more than the ${writtenCount} written`);
      if (keptCount < writtenCount && row !== undefined && row.dropped > 0) check(row.firstBadPosition === keptCount + 1, `${where}: stream ${stream}: the first bad position ${row.firstBadPosition} is not ${keptCount + 1}`);
    }
    check(report.kept + report.absentPositions >= base.events.length || report.dropped === 0, `${where}: ${report.kept} kept and ${report.absentPositions} positions recorded absent do not cover the ${base.events.length} events written`);
    await log.appendToStream(sessionStream("after-repair"), [{ type: "test.disk.appended", data: {} }]);
    check((await log.verify()).ok, `${where}: the repaired log does not verify after an append`);
    return { acked: base.events.length, kept: report.kept };
  } finally {
    await log.close();
  }
}
