/**
 * One table of the figures issues 15 and 32 ask for, read from the JSON lines the bench scripts wrote
 * (bench/results.ts), each with its target and a mark. The full form marks targets and never
 * fails on them (a mark informs); the CI form (`--ci`) compares ratios only with
 * bench/baseline.json and exits 1 when one regressed by more than 50%.
 *
 *   node --import tsx bench/summary.ts <results.jsonl>                      (npm run bench does this)
 *   node --import tsx bench/summary.ts <results.jsonl> --ci [--write-baseline] [--regressed-out <file>] [--baseline <file>]
 *                                                                         (npm run bench:ci)
 */
import { readFileSync, writeFileSync } from "node:fs";
import { cpus } from "node:os";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import type { BenchResult } from "./results.js";
import { deriveResults, printRows, readResults } from "./results.js";

interface Target {
  /** "at most", "below", "at least" */
  compare: "≤" | "<" | "≥";
  value: number;
  unit: string;
}

/** The summary's rows, in order: an id, and the target for it when it has one. */
const layout: { id: string; target?: Target }[] = [
  { id: "run.sync.floor" },
  { id: "run.sync.short" },
  { id: "run.sync.long" },
  { id: "run.sync.floorRatio", target: { compare: "≤", value: 2, unit: "×" } },
  { id: "run.sync.growth", target: { compare: "≤", value: 1.3, unit: "×" } },
  { id: "run.relaxed.floor" },
  { id: "run.relaxed.short" },
  { id: "run.relaxed.long" },
  { id: "run.relaxed.floorRatio", target: { compare: "≤", value: 2, unit: "×" } },
  { id: "run.relaxed.growth", target: { compare: "≤", value: 1.3, unit: "×" } },
  { id: "realistic.sync.floor" },
  { id: "realistic.sync.short" },
  { id: "realistic.sync.long" },
  { id: "realistic.sync.shortFloorRatio" },
  { id: "realistic.sync.floorRatio", target: { compare: "≤", value: 2, unit: "×" } },
  { id: "realistic.sync.growth", target: { compare: "≤", value: 1.3, unit: "×" } },
  { id: "realistic.relaxed.floor" },
  { id: "realistic.relaxed.short" },
  { id: "realistic.relaxed.long" },
  { id: "realistic.relaxed.shortFloorRatio" },
  { id: "realistic.relaxed.floorRatio" },
  { id: "realistic.relaxed.growth", target: { compare: "≤", value: 1.3, unit: "×" } },
  { id: "realistic.aiSdk" },
  { id: "realistic.relaxed.aiSdkRatio", target: { compare: "≤", value: 1, unit: "×" } },
  { id: "fold.readRate" },
  { id: "fold.rate", target: { compare: "≥", value: 500_000, unit: "events/s" } },
  { id: "fold.overRead" },
  { id: "fold.peakRss" },
  { id: "fold.peakHeap" },
  { id: "fold.full.rate" },
  { id: "fold.full.peakRss" },
  { id: "fold.full.peakHeap" },
  { id: "fold.stateAtSnapshot", target: { compare: "<", value: 50, unit: "ms" } },
  { id: "fold.stateAtCold", target: { compare: "<", value: 2, unit: "s" } },
  { id: "snapshots.stateAt", target: { compare: "≤", value: 50, unit: "ms" } },
  { id: "snapshots.stateAtAgain" },
  { id: "snapshots.open" },
  { id: "snapshots.resume", target: { compare: "≤", value: 200, unit: "ms" } },
  { id: "snapshots.replayRate", target: { compare: "≥", value: 300_000, unit: "events/s" } },
  { id: "snapshots.replayPeakHeap" },
  { id: "longSession.ratio", target: { compare: "≤", value: 1.5, unit: "×" } },
  { id: "longSession.peakRss" },
  { id: "longSession.peakHeap" },
  { id: "many.callsPerSecond" },
  { id: "many.callP50" },
  { id: "many.callP99" },
  { id: "many.turnP99" },
  { id: "many.floorRatio" },
  { id: "many.peakRss" },
  { id: "many.peakHeap" },
  { id: "sessions.heapPerSession" },
  { id: "sessions.heapAfterDefault" },
  { id: "sessions.heapAfterSmall" },
  { id: "tracing.plain" },
  { id: "tracing.traced" },
  { id: "tracing.ratio" },
  { id: "startup.node" },
  { id: "startup.version" },
  { id: "startup.versionRatio", target: { compare: "≤", value: 2, unit: "×" } },
  { id: "startup.sessions" },
  { id: "startup.sessionsRatio", target: { compare: "≤", value: 4, unit: "×" } },
  { id: "startup.import" },
  { id: "startup.importRatio", target: { compare: "≤", value: 3, unit: "×" } },
];

/**
 * The ratios the CI form compares with the baseline. Each is "lower is better" and independent of
 * how fast this machine is: a time divided by a time measured beside it.
 */
const gatedRatios = [
  "run.sync.floorRatio",
  "run.relaxed.floorRatio",
  "run.sync.growth",
  "run.relaxed.growth",
  "realistic.sync.floorRatio",
  "realistic.sync.growth",
  "realistic.relaxed.growth",
  "realistic.relaxed.aiSdkRatio",
  "fold.overRead",
  "many.floorRatio",
  "longSession.ratio",
  "startup.versionRatio",
  "startup.sessionsRatio",
  "startup.importRatio",
];
/** A ratio regresses when it exceeds its baseline by more than this factor. */
const allowedRegression = 1.5;


interface Baseline {
  written: string;
  machine: string;
  command: string;
  ratios: Record<string, number>;
}

function format(result: BenchResult): string {
  const { value, unit } = result;
  if (!Number.isFinite(value)) return "n/a";
  switch (unit) {
    case "×":
      return `${value.toFixed(2)}×`;
    case "µs":
    case "MB":
      return `${Math.round(value).toLocaleString("en-US")} ${unit}`;
    case "ms":
      return `${value.toFixed(1)} ms`;
    case "s":
      return `${value.toFixed(2)} s`;
    default:
      return `${Math.round(value).toLocaleString("en-US")} ${unit}`;
  }
}

function meets(value: number, target: Target): boolean {
  if (target.compare === "≤") return value <= target.value;
  if (target.compare === "<") return value < target.value;
  return value >= target.value;
}

function printTargets(results: Map<string, BenchResult>): void {
  const rows: string[][] = [["figure", "value", "target", "mark"]];
  const shown = new Set<string>();
  for (const { id, target } of layout) {
    shown.add(id);
    const result = results.get(id);
    const targetText = target === undefined ? "" : `${target.compare} ${format({ id, label: "", value: target.value, unit: target.unit })}`;
    if (result === undefined) {
      if (target !== undefined) rows.push([id, "not measured", targetText, "–"]);
      continue;
    }
    rows.push([result.label, format(result), targetText, target === undefined ? "" : meets(result.value, target) ? "pass" : "FAIL"]);
  }
  for (const result of results.values()) if (!shown.has(result.id)) rows.push([result.label, format(result), "", ""]);
  console.log("\nSummary (issue 15, 32 and 35 targets; a mark informs, it does not fail the run)");
  printRows(rows);
}

/** Compares the gated ratios with the baseline; returns the ids of those that regressed by more than 50%. */
function compareWithBaseline(results: Map<string, BenchResult>): string[] | undefined {
  let baseline: Baseline;
  try {
    baseline = JSON.parse(readFileSync(baselineFile, "utf8")) as Baseline;
  } catch (error) {
    console.log(`\nNo usable baseline at ${baselineFile} (${(error as Error).message}); write one with: npm run bench:ci -- --write-baseline`);
    return undefined;
  }
  console.log(`\nCI bench: ratios against bench/baseline.json (written ${baseline.written} on ${baseline.machine}); fails when a ratio exceeds its baseline × ${allowedRegression}`);
  const rows: string[][] = [["ratio", "now", "baseline", "limit", "result"]];
  const regressed: string[] = [];
  for (const id of gatedRatios) {
    const result = results.get(id);
    const base = baseline.ratios[id];
    if (result === undefined) {
      rows.push([id, "not measured", base === undefined ? "–" : base.toFixed(2), "", base === undefined ? "skipped" : "skipped (not measured now)"]);
      continue;
    }
    if (base === undefined) {
      rows.push([result.label.trim(), result.value.toFixed(2), "–", "", "not compared (no baseline)"]);
      continue;
    }
    const limit = base * allowedRegression;
    const ok = result.value <= limit;
    if (!ok) regressed.push(id);
    rows.push([result.label.trim(), result.value.toFixed(2), base.toFixed(2), limit.toFixed(2), ok ? "ok" : "REGRESSED"]);
  }
  printRows(rows);
  console.log(regressed.length > 0 ? `bench:ci: ${regressed.length} ratio(s) regressed by more than 50% against the baseline` : "bench:ci passed: no ratio regressed by more than 50%");
  return regressed;
}

function writeBaseline(results: Map<string, BenchResult>): void {
  const ratios: Record<string, number> = {};
  for (const id of gatedRatios) {
    const result = results.get(id);
    if (result !== undefined) ratios[id] = Number(result.value.toFixed(3));
  }
  const baseline: Baseline = {
    written: new Date().toISOString().slice(0, 10),
    machine: `${cpus().length} × ${cpus()[0]?.model.trim() ?? "unknown CPU"}, Node ${process.version}`,
    command: "npm run bench:ci -- --write-baseline",
    ratios,
  };
  writeFileSync(baselineFile, `${JSON.stringify(baseline, null, 2)}\n`);
  console.log(`\nWrote ${baselineFile}:`);
  printRows([["ratio", "baseline"], ...Object.entries(ratios).map(([id, value]) => [id, value.toFixed(3)])]);
}

const { values: options, positionals } = parseArgs({ allowPositionals: true, options: { ci: { type: "boolean", default: false }, "write-baseline": { type: "boolean", default: false }, "regressed-out": { type: "string" }, baseline: { type: "string" } } });
/** bench/baseline.json unless `--baseline` names another file (the tests do). */
const baselineFile = options.baseline ?? fileURLToPath(new URL("./baseline.json", import.meta.url));
const file = positionals[0];
if (file === undefined) {
  console.error("usage: node --import tsx bench/summary.ts <results.jsonl> [--ci] [--write-baseline] [--regressed-out <file>] [--baseline <file>]");
  process.exit(2);
}
const results = readResults(file);
deriveResults(results);
if (options.ci) {
  if (options["write-baseline"]) writeBaseline(results);
  else {
    const regressed = compareWithBaseline(results);
    if (regressed === undefined || regressed.length > 0) process.exitCode = 1;
    // bench/suite.ts reruns the scripts behind these once before it calls the run failed.
    if (options["regressed-out"] !== undefined) writeFileSync(options["regressed-out"], JSON.stringify(regressed ?? []));
  }
} else {
  printTargets(results);
}
