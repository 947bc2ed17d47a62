/**
 * Machine-readable bench results: each bench script appends one JSON line per figure to the file
 * named by `TURNLOG_BENCH_RESULTS` (bench/suite.ts sets it), and bench/summary.ts reads them back
 * into one table. Without the variable a script only prints its own table, as before.
 *
 * A line: `{"id":"run.sync.floorRatio","label":"sync ÷ sync floor, 200 turns","value":1.8,"unit":"×"}`.
 */
import { appendFileSync, readFileSync, writeFileSync } from "node:fs";

export interface BenchResult {
  /** Stable key: summary.ts attaches targets to it and the CI baseline compares by it. */
  id: string;
  /** What a reader sees in the summary table, sizes included. */
  label: string;
  value: number;
  /** "µs", "ms", "s", "events/s", "calls/s", "MB", "×" (a ratio) … */
  unit: string;
}

export const resultsFileVariable = "TURNLOG_BENCH_RESULTS";

/** Appends one figure to the results file, if there is one. */
export function recordResult(id: string, label: string, value: number, unit: string): void {
  const file = process.env[resultsFileVariable];
  if (file === undefined || file === "") return;
  const result: BenchResult = { id, label, value, unit };
  appendFileSync(file, `${JSON.stringify(result)}\n`);
}

/** Every figure in a results file; a figure recorded twice keeps its last value. */
export function readResults(file: string): Map<string, BenchResult> {
  const results = new Map<string, BenchResult>();
  let text = "";
  try {
    text = readFileSync(file, "utf8");
  } catch {
    return results;
  }
  for (const line of text.split("\n")) {
    if (line.trim() === "") continue;
    const result = JSON.parse(line) as BenchResult;
    results.set(result.id, result);
  }
  return results;
}

/** Figures computed from two others (kept when already there, e.g. after a merge). */
export function deriveResults(results: Map<string, BenchResult>): void {
  const read = results.get("fold.readRate");
  const fold = results.get("fold.rate");
  if (read !== undefined && fold !== undefined && !results.has("fold.overRead")) {
    results.set("fold.overRead", { id: "fold.overRead", label: "  streamed fold time ÷ readAll-only time", value: read.value / fold.value, unit: "×" });
  }
}

/** Writes results as a results file (one JSON line each). */
export function writeResults(file: string, results: Iterable<BenchResult>): void {
  writeFileSync(file, [...results].map((result) => `${JSON.stringify(result)}\n`).join(""));
}

/**
 * Each durability's rounds, measured in alternating order — `sync` then `relaxed` in even rounds,
 * the reverse in odd ones, which `round` is told (`reversed`) so that it can run its own parts
 * backwards too. A shared machine's load drifts over seconds; every ratio is taken within one
 * round, so a load spike moves one round, not the median (docs/performance.md#the-scenarios).
 */
export async function roundsByDurability<Round>(rounds: number, round: (durability: "sync" | "relaxed", reversed: boolean) => Promise<Round>): Promise<Map<"sync" | "relaxed", Round[]>> {
  const measured = new Map<"sync" | "relaxed", Round[]>([
    ["sync", []],
    ["relaxed", []],
  ]);
  for (let index = 0; index < rounds; index += 1) {
    const order = index % 2 === 0 ? (["sync", "relaxed"] as const) : (["relaxed", "sync"] as const);
    for (const durability of order) measured.get(durability)!.push(await round(durability, index % 2 === 1));
  }
  return measured;
}

export function median(values: readonly number[]): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
}

/** The value below which `fraction` of `values` lie (nearest rank), e.g. 0.99 for p99. */
export function percentile(values: readonly number[], fraction: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(fraction * sorted.length) - 1))]!;
}

/** Prints rows as two or more left-aligned columns. */
export function printRows(rows: readonly (readonly string[])[]): void {
  const widths = rows[0]!.map((_, column) => Math.max(...rows.map((row) => (row[column] ?? "").length)));
  for (const row of rows) console.log(row.map((cell, column) => (column === row.length - 1 ? cell : cell.padEnd(widths[column]!))).join("  "));
}
