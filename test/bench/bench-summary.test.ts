import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";

// The bench's verdicts, as `npm run bench` and `npm run bench:ci` reach them: bench/summary.ts
// run as a real child process on a results file, as bench/suite.ts runs it. No timing here: the
// figures are written by the test.

const root = join(import.meta.dirname, "..", "..");
let dir: string;

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "turnlog-bench-summary-"));
});
afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
});

function resultsFile(figures: Record<string, [number, string]>): string {
  const file = join(dir, "results.jsonl");
  writeFileSync(file, Object.entries(figures).map(([id, [value, unit]]) => `${JSON.stringify({ id, label: id, value, unit })}\n`).join(""));
  return file;
}

function baselineFile(ratios: Record<string, number>): string {
  const file = join(dir, "baseline.json");
  writeFileSync(file, JSON.stringify({ written: "2026-01-01", machine: "test", command: "test", ratios }));
  return file;
}

function node(args: string[], env: Record<string, string> = {}) {
  const run = spawnSync(process.execPath, ["--import", "tsx", ...args], { cwd: root, encoding: "utf8", env: { ...process.env, ...env } });
  return { status: run.status, output: `${run.stdout}${run.stderr}` };
}

describe("bench:ci against its baseline", () => {
  it("fails when a ratio is worse than its baseline by more than 50%, and names it", () => {
    const results = resultsFile({ "run.sync.floorRatio": [3.3, "×"], "run.sync.growth": [1.1, "×"] });
    const regressedOut = join(dir, "regressed.json");
    const run = node(["bench/summary.ts", results, "--ci", "--baseline", baselineFile({ "run.sync.floorRatio": 2, "run.sync.growth": 1 }), "--regressed-out", regressedOut]);
    expect(run.status).toBe(1);
    expect(run.output).toMatch(/run\.sync\.floorRatio\s+3\.30\s+2\.00\s+3\.00\s+REGRESSED/);
    expect(run.output).toMatch(/run\.sync\.growth\s+1\.10\s+1\.00\s+1\.50\s+ok/);
    expect(JSON.parse(readFileSync(regressedOut, "utf8"))).toEqual(["run.sync.floorRatio"]);
  });

  it("passes when every ratio is within 50% of its baseline or better, and says what it did not compare", () => {
    const results = resultsFile({ "run.sync.floorRatio": [2.9, "×"], "run.relaxed.floorRatio": [0.5, "×"], "fold.readRate": [300_000, "events/s"], "fold.rate": [200_000, "events/s"] });
    const run = node(["bench/summary.ts", results, "--ci", "--baseline", baselineFile({ "run.sync.floorRatio": 2, "run.relaxed.floorRatio": 4, "many.floorRatio": 1 })]);
    expect(run.status).toBe(0);
    expect(run.output).toContain("bench:ci passed");
    // The fold's ratio is derived from its two rates; with no baseline entry it is shown, not compared.
    expect(run.output).toMatch(/streamed fold time ÷ readAll-only time\s+1\.50\s+–\s+not compared \(no baseline\)/);
    expect(run.output).toMatch(/many\.floorRatio\s+not measured\s+1\.00.*skipped/);
  });

  it("writes a baseline of the ratios it measured, and only those", () => {
    const results = resultsFile({ "run.sync.floorRatio": [2.5, "×"], "run.sync.floor": [300, "µs"] });
    const baseline = join(dir, "new-baseline.json");
    const run = node(["bench/summary.ts", results, "--ci", "--write-baseline", "--baseline", baseline]);
    expect(run.status).toBe(0);
    expect(JSON.parse(readFileSync(baseline, "utf8")).ratios).toEqual({ "run.sync.floorRatio": 2.5 });
  });
});

describe("the full bench's summary", () => {
  it("marks each target pass or FAIL without failing the run, and a target nobody measured as not measured", () => {
    const results = resultsFile({ "run.sync.floorRatio": [2.4, "×"], "run.relaxed.floorRatio": [1.6, "×"], "fold.rate": [650_000, "events/s"], "fold.stateAtCold": [1.2, "s"] });
    const run = node(["bench/summary.ts", results]);
    expect(run.status).toBe(0);
    expect(run.output).toMatch(/run\.sync\.floorRatio\s+2\.40×\s+≤ 2\.00×\s+FAIL/);
    expect(run.output).toMatch(/run\.relaxed\.floorRatio\s+1\.60×\s+≤ 2\.00×\s+pass/);
    expect(run.output).toMatch(/fold\.rate\s+650,000 events\/s\s+≥ 500,000 events\/s\s+pass/);
    expect(run.output).toMatch(/fold\.stateAtCold\s+1\.20 s\s+< 2\.00 s\s+pass/);
    expect(run.output).toMatch(/longSession\.ratio\s+not measured\s+≤ 1\.50×\s+–/);
  });
});

describe("the start-up figures", () => {
  it("are marked against issue 32's bounds in the full summary, and compared with their baseline in the CI form", () => {
    const results = resultsFile({ "startup.versionRatio": [1.5, "×"], "startup.sessionsRatio": [4.4, "×"], "startup.importRatio": [2.9, "×"], "startup.node": [60, "ms"] });
    const full = node(["bench/summary.ts", results]);
    expect(full.status).toBe(0);
    expect(full.output).toMatch(/startup\.versionRatio\s+1\.50×\s+≤ 2\.00×\s+pass/);
    expect(full.output).toMatch(/startup\.sessionsRatio\s+4\.40×\s+≤ 4\.00×\s+FAIL/);
    expect(full.output).toMatch(/startup\.importRatio\s+2\.90×\s+≤ 3\.00×\s+pass/);
    const ci = node(["bench/summary.ts", results, "--ci", "--baseline", baselineFile({ "startup.versionRatio": 1.2, "startup.sessionsRatio": 4, "startup.importRatio": 1.5 })]);
    expect(ci.status).toBe(1);
    expect(ci.output).toMatch(/startup\.importRatio\s+2\.90\s+1\.50\s+2\.25\s+REGRESSED/);
    expect(ci.output).toMatch(/startup\.sessionsRatio\s+4\.40\s+4\.00\s+6\.00\s+ok/);
  });
});

describe("the memory probe", () => {
  it("records a script's peak RSS and heap without any code in the script", () => {
    const results = join(dir, "results.jsonl");
    const script = join(dir, "script.mjs");
    writeFileSync(script, "globalThis.kept = Array.from({ length: 200_000 }, (_, index) => ({ index }));\nconsole.log('done');\n");
    const run = node(["--import", "./bench/memory-probe.ts", script], { TURNLOG_BENCH_RESULTS: results, TURNLOG_BENCH_PROBE: "longSession", TURNLOG_BENCH_PROBE_LABEL: "long session" });
    expect(run.status).toBe(0);
    const figures = readFileSync(results, "utf8").trim().split("\n").map((line) => JSON.parse(line) as { id: string; value: number; unit: string });
    expect(figures.map((figure) => figure.id)).toEqual(["longSession.peakRss", "longSession.peakHeap"]);
    for (const figure of figures) {
      expect(figure.unit).toBe("MB");
      expect(figure.value).toBeGreaterThan(1);
    }
  });
});
