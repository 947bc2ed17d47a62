/**
 * `npm run bench` and `npm run bench:ci`: runs the bench scripts one after another, each in a
 * process of its own (so one script's heap and JIT state do not colour the next), collects their
 * machine-readable results (bench/results.ts) in one file, and ends with bench/summary.ts: one
 * table of the figures with targets (full form), or the ratios compared with
 * bench/baseline.json (CI form). docs/performance.md describes every figure.
 *
 *   npm run bench                                  full sizes: minutes
 *   npm run bench:ci                               small sizes, ratios only: seconds
 *   npm run bench:ci -- --write-baseline           refresh bench/baseline.json from this machine: each
 *                                                  ratio at its worst of 3 runs (--baseline-runs N)
 *   npm run bench -- --skip backends,redaction     leave scripts out (names as below)
 *   npm run bench -- --only startup                run only these scripts (the start-up figures: seconds)
 *   npm run bench -- --long-session-events 50000   a shorter long session
 *
 * The long session is bench/long-session.ts, run when that file exists; its last line of output
 * must read `long-session last/first per-call ratio: <number>`, which becomes the summary's row.
 *
 * The full form exits 1 only when a script failed (a missed target is a mark, not a failure); the
 * CI form also exits 1 when a ratio regressed by more than 50% against the baseline.
 */
import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { deriveResults, readResults, recordResult, resultsFileVariable, writeResults } from "./results.js";

const { values: options } = parseArgs({
  options: {
    ci: { type: "boolean", default: false },
    "write-baseline": { type: "boolean", default: false },
    skip: { type: "string", default: "" },
    only: { type: "string", default: "" },
    "long-session-events": { type: "string" },
    "baseline-runs": { type: "string", default: "3" },
  },
});
const ci = options.ci || options["write-baseline"];
/** How many runs `--write-baseline` takes the worst ratio of. */
const baselineRuns = Number(options["baseline-runs"]);
const skipped = new Set(options.skip.split(",").filter((name) => name !== ""));
/** With `--only`, the scripts to run; every other one is skipped. */
const only = new Set(options.only.split(",").filter((name) => name !== ""));
const root = fileURLToPath(new URL("..", import.meta.url));
const longSessionScript = join(root, "bench", "long-session.ts");
const longSessionEvents = options["long-session-events"] ?? (ci ? "10000" : "200000");
/** The line bench/long-session.ts ends with; the number is last-turns ÷ first-turns per-call cost. */
const longSessionLine = /^long-session last\/first per-call ratio: ([0-9]*\.?[0-9]+(?:e[-+]?[0-9]+)?)\s*$/i;

interface Step {
  name: string;
  /** Node flags and script arguments after `--import tsx`. */
  args: string[];
  env?: Record<string, string>;
  /** Called with the script's whole standard output once it exited 0. */
  parse?: (output: string) => void;
}

const steps: Step[] = ci
  ? [
      { name: "run", args: ["bench/run.ts", "--short", "20", "--long", "80", "--rounds", "3", "--no-seals"] },
      { name: "realistic", args: ["bench/realistic.ts", "--short", "20", "--long", "80", "--rounds", "3", "--warmups", "2"] },
      { name: "fold", args: ["--expose-gc", "bench/fold.ts", "20000", "10", "60"] },
      { name: "many-sessions", args: ["bench/many-sessions.ts", "--sessions", "50", "--turns", "4"] },
      { name: "session-memory", args: ["--expose-gc", "bench/session-memory.ts", "--sessions", "1000", "--kept", "200", "--small-bound", "10"] },
      { name: "startup", args: ["bench/startup.ts", "--runs", "9"] },
    ]
  : [
      { name: "run", args: ["bench/run.ts"] },
      { name: "realistic", args: ["bench/realistic.ts"] },
      { name: "fold", args: ["--expose-gc", "bench/fold.ts"] },
      { name: "snapshots", args: ["--expose-gc", "bench/snapshots.ts"] },
      { name: "redaction", args: ["bench/redaction.ts"] },
      { name: "backends", args: ["bench/backends.ts"] },
      { name: "many-sessions", args: ["bench/many-sessions.ts"] },
      { name: "session-memory", args: ["--expose-gc", "bench/session-memory.ts"] },
      { name: "tracing", args: ["bench/tracing.ts"] },
      { name: "startup", args: ["bench/startup.ts"] },
    ];
// Each speed-up timed against the reference it keeps (docs/design.md#14-speed-ups-and-their-references).
if (!ci && (only.size === 0 || only.has("references"))) steps.push({ name: "references", args: ["bench/references.ts"] });
if (existsSync(longSessionScript) && (only.size === 0 || only.has("long-session"))) {
  steps.push({
    name: "long-session",
    args: ["--import", "./bench/memory-probe.ts", "bench/long-session.ts", longSessionEvents],
    env: { TURNLOG_BENCH_PROBE: "longSession", TURNLOG_BENCH_PROBE_LABEL: `long session (${longSessionEvents} events)` },
    parse(output) {
      const lines = output.split("\n").map((line) => line.trim()).filter((line) => line !== "");
      const ratioLines = lines.filter((line) => longSessionLine.test(line));
      if (ratioLines.length === 0) throw new Error("bench/long-session.ts printed no line `long-session last/first per-call ratio: <number>`");
      if (ratioLines.at(-1) !== lines.at(-1)) console.log("(bench/long-session.ts: the ratio line was not its last line; using the last ratio line)");
      const ratio = Number(longSessionLine.exec(ratioLines.at(-1)!)![1]);
      recordResult("longSession.ratio", `long session (${longSessionEvents} events): last ÷ first turns, per call`, ratio, "×");
    },
  });
} else {
  console.log("bench/long-session.ts is not here: the long-session row will read “not measured”.");
}

/** Runs one script with tsx, its output shown as it comes; resolves with its output and exit code. */
function runStep(step: Step, resultsFile: string): Promise<{ code: number; output: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ["--import", "tsx", ...step.args], {
      cwd: root,
      env: { ...process.env, ...step.env, [resultsFileVariable]: resultsFile },
      stdio: ["ignore", "pipe", "inherit"],
    });
    let output = "";
    child.stdout.setEncoding("utf8");
    child.stdout.on("data", (chunk: string) => {
      output += chunk;
      process.stdout.write(chunk);
    });
    child.on("error", reject);
    child.on("close", (code, signal) => resolve({ code: code ?? (signal !== null ? 128 : 1), output }));
  });
}

const ownResults = process.env[resultsFileVariable] === undefined || process.env[resultsFileVariable] === "";
const resultsDirectory = ownResults ? mkdtempSync(join(tmpdir(), "turnlog-bench-results-")) : undefined;
const resultsFile = resultsDirectory !== undefined ? join(resultsDirectory, "results.jsonl") : process.env[resultsFileVariable]!;
const failed: string[] = [];

/** Runs steps, results into `file`; the names of those that failed go into `failed`. */
async function runSteps(chosen: readonly Step[], file: string): Promise<void> {
  for (const step of chosen) {
    if (skipped.has(step.name) || (only.size > 0 && !only.has(step.name))) {
      console.log(`\n== ${step.name}: skipped`);
      continue;
    }
    console.log(`\n== ${step.name}: node --import tsx ${step.args.join(" ")}`);
    process.env[resultsFileVariable] = file;
    const { code, output } = await runStep(step, file);
    if (code !== 0) {
      failed.push(`${step.name} (exit ${code})`);
      continue;
    }
    try {
      step.parse?.(output);
    } catch (error) {
      console.log((error as Error).message);
      failed.push(step.name);
    }
  }
}

/** Which step measures a result, by the result id's prefix. */
const stepOfResult: Record<string, string> = { run: "run", realistic: "realistic", fold: "fold", snapshots: "snapshots", many: "many-sessions", longSession: "long-session", startup: "startup" };

/**
 * One results file from several runs of the same steps: each ratio (unit ×) at the lower or the
 * higher of its measurements, every other figure from the last run that has it. Ratios derived
 * from two figures are derived per run first, so that they pair figures of one run.
 */
function mergeResults(files: readonly string[], keep: "lower" | "higher", into: string): void {
  const merged = readResults(files[0]!);
  deriveResults(merged);
  for (const file of files.slice(1)) {
    const next = readResults(file);
    deriveResults(next);
    for (const [id, result] of next) {
      const earlier = merged.get(id);
      const better = keep === "lower" ? result.value < (earlier?.value ?? Infinity) : result.value > (earlier?.value ?? -Infinity);
      if (earlier === undefined || result.unit !== "×" || better) merged.set(id, result);
    }
  }
  writeResults(into, merged.values());
}

try {
  let summaryFile = resultsFile;
  await runSteps(steps, resultsFile);
  if (options["write-baseline"] && baselineRuns > 1) {
    // A baseline is what this machine's ratios reach, not one lucky run: each ratio is stored at
    // the worst of several runs, so the machine's own spread does not fail CI later.
    const files = [resultsFile];
    for (let run = 2; run <= baselineRuns && failed.length === 0; run += 1) {
      console.log(`\nbench:ci: baseline run ${run} of ${baselineRuns}`);
      files.push(`${resultsFile}.run-${run}.jsonl`);
      await runSteps(steps, files.at(-1)!);
    }
    summaryFile = `${resultsFile}.worst.jsonl`;
    mergeResults(files, "higher", summaryFile);
  }
  // A baseline is written only from runs in which every script ran.
  const writeBaseline = options["write-baseline"] && failed.length === 0;
  if (options["write-baseline"] && !writeBaseline) console.log("\nbench: a script failed, so bench/baseline.json was not written");
  const regressedFile = `${resultsFile}.regressed.json`;
  const summaryArgs = (file: string) => ["bench/summary.ts", file, ...(ci ? ["--ci", "--regressed-out", regressedFile] : []), ...(writeBaseline ? ["--write-baseline"] : [])];
  rmSync(regressedFile, { force: true });
  let summary = await runStep({ name: "summary", args: summaryArgs(summaryFile) }, summaryFile);
  const regressed = ci && existsSync(regressedFile) ? (JSON.parse(readFileSync(regressedFile, "utf8")) as string[]) : [];
  if (regressed.length > 0 && failed.length === 0) {
    // This machine's load drifts: one disturbed measurement must not fail CI, a real regression
    // shows twice. So the scripts behind a regressed ratio run once more, and each ratio counts
    // at the better (lower) of its two measurements.
    const again = new Set(regressed.map((id) => stepOfResult[id.split(".")[0]!]));
    console.log(`\nbench:ci: measuring ${[...again].join(", ")} once more, for ${regressed.join(", ")}`);
    const retryFile = `${resultsFile}.retry.jsonl`;
    await runSteps(
      steps.filter((step) => again.has(step.name)),
      retryFile,
    );
    const mergedFile = `${resultsFile}.merged.jsonl`;
    mergeResults([resultsFile, retryFile], "lower", mergedFile);
    summary = await runStep({ name: "summary", args: summaryArgs(mergedFile) }, mergedFile);
  }
  if (failed.length > 0) console.log(`\nbench: these scripts failed: ${failed.join(", ")}`);
  if (failed.length > 0 || summary.code !== 0) process.exitCode = 1;
} finally {
  if (resultsDirectory !== undefined) rmSync(resultsDirectory, { recursive: true, force: true });
}
