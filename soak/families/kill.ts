/**
 * The `kill` family (docs/reliability.md): kill -9 at seeded points of a host that runs three
 * sessions at once on one LevelDB log — local tools with side effects, a model whose attempts fail
 * transiently (retries), a history budget small enough to compact, the tools of a real MCP server
 * process, and an approval answered by another process while the host is down — with the turnlog
 * CLI reading the log beside some host runs. Each host is killed at the scenario's next kill point
 * (after an ack, inside a provider call or its retry, before or after a side effect, inside an MCP
 * call, while parked for approval, at a random time) and restarted until every session is done;
 * then soak/kill/invariants.ts checks the log.
 *
 * `count` is the number of kill points that land (a SIGKILL that reaches a child mid-run); a case
 * is one landed kill point, passed when its scenario's invariants all held. Scenarios run two at a
 * time from children bundled once with esbuild. A failure names the seed and scenario index, which
 * reproduce it: `npm run soak -- --family kill --seed <seed> --count kill=<count>` runs the same
 * scenarios, and `TURNLOG_KILL_SCENARIO=<index>` with the same seed runs that one alone (its kill
 * points are seeded; where a kill lands inside a few milliseconds is the machine's).
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import fc from "fast-check";
import type { SoakFamily, SoakOptions, SoakResult } from "../family.js";
import { bundleChildren } from "../kill/child-bundle.js";
import { checkScenario, type ScenarioFigures } from "../kill/invariants.js";
import { describeScenarioKill, killScenario } from "../kill/kill-points.js";
import type { KillScenario } from "../kill/kill-points.js";
import { runScenario, ScenarioError } from "../kill/scenario-run.js";
import type { KillBudget } from "../kill/scenario-run.js";

/** Scenarios at once: a host mostly waits on its model and tools, but starting one is CPU-bound. */
const parallelScenarios = 2;

/** Kill points still to land, shared by the scenarios running at once. */
class SharedKillBudget implements KillBudget {
  #left: number;
  #reserved = 0;
  #waiters: (() => void)[] = [];
  constructor(count: number) {
    this.#left = count;
  }
  reserve(): boolean {
    if (this.#left === 0) return false;
    this.#left -= 1;
    this.#reserved += 1;
    return true;
  }
  release(): void {
    this.#left += 1;
    this.#settle();
  }
  /** A reserved kill point landed. */
  landed(): void {
    this.#settle();
  }
  #settle(): void {
    this.#reserved -= 1;
    for (const wake of this.#waiters.splice(0)) wake();
  }
  /** Whether a new scenario has kill points to take; waits while reserved ones may still come back. */
  async worthAnother(): Promise<boolean> {
    while (this.#left === 0 && this.#reserved > 0) await new Promise<void>((resolve) => this.#waiters.push(resolve));
    return this.#left > 0;
  }
}

async function run({ seed, count, log }: SoakOptions): Promise<SoakResult> {
  const started = performance.now();
  // Enough scenarios for any count: each lands at least one kill point or leaves the budget alone.
  const sampled: KillScenario[] = fc.sample(killScenario, { seed, numRuns: count + 10 });
  const only = process.env.TURNLOG_KILL_SCENARIO;
  const indexes = only === undefined || only === "" ? sampled.map((_, index) => index) : [Number(only)];
  if (indexes.some((index) => !Number.isSafeInteger(index) || sampled[index] === undefined)) throw new TypeError(`TURNLOG_KILL_SCENARIO must be a scenario index below ${sampled.length}, not ${only}`);
  const bundle = await bundleChildren();
  const root = await mkdtemp(path.join(tmpdir(), "turnlog-kill-"));
  const budget = new SharedKillBudget(count);
  const failures: string[] = [];
  const totals: ScenarioFigures & { scenarios: number; hostRuns: number; approverRuns: number; byFallback: number } = {
    scenarios: 0, hostRuns: 0, approverRuns: 0, byFallback: 0, providerFailures: 0, compactions: 0, mcpShips: 0, approvals: 0, interrupted: 0, rerunReads: 0, readers: 0,
  };
  let passed = 0;
  let failed = 0;
  let next = 0;
  const worker = async () => {
    while ((await budget.worthAnother()) && next < indexes.length) {
      const index = indexes[next]!;
      next += 1;
      const scenario = sampled[index]!;
      const directory = path.join(root, `scenario-${index}`);
      const reproduce = `seed ${seed}, scenario #${index} (kills: ${scenario.kills.map(describeScenarioKill).join("; ")})`;
      let landed = 0;
      try {
        const outcome = await runScenario(bundle, directory, scenario, {
          reserve: () => budget.reserve(),
          release: () => budget.release(),
        });
        landed = outcome.runs.filter((child) => child.killedMidRun).length;
        for (let kill = 0; kill < landed; kill += 1) budget.landed();
        const verdict = await checkScenario(outcome);
        totals.scenarios += 1;
        totals.hostRuns += outcome.runs.filter((child) => child.role === "host").length;
        totals.approverRuns += outcome.runs.filter((child) => child.role === "approver").length;
        totals.byFallback += outcome.runs.filter((child) => child.killedBy === "fallback").length;
        for (const key of Object.keys(verdict.figures) as (keyof ScenarioFigures)[]) totals[key] += verdict.figures[key];
        if (verdict.problems.length === 0) {
          passed += landed;
        } else {
          failed += Math.max(1, landed);
          failures.push(`${reproduce}: ${verdict.problems.join("; ")}`);
        }
      } catch (error) {
        landed = error instanceof ScenarioError ? error.landed : 0;
        for (let kill = 0; kill < landed; kill += 1) budget.landed();
        totals.scenarios += 1;
        failed += Math.max(1, landed);
        failures.push(`${reproduce}: ${error instanceof Error ? error.message : String(error)}`);
      } finally {
        await rm(directory, { recursive: true, force: true });
      }
      log(`scenario #${index}: ${landed} kill points landed (${passed + failed} of ${count} so far, ${failed} failed)`);
    }
  };
  try {
    await Promise.all(Array.from({ length: parallelScenarios }, worker));
  } finally {
    await rm(root, { recursive: true, force: true });
    await bundle.remove();
  }
  const minutes = (performance.now() - started) / 60_000;
  const summary =
    `${passed + failed} kill points (${totals.byFallback} at their fallback time) in ${totals.scenarios} scenarios (${totals.hostRuns} host runs, ${totals.approverRuns} approver runs, ${totals.readers} CLI reads beside a host), ` +
    `${((passed + failed) / minutes).toFixed(0)} kill points/min; exercised: ${totals.providerFailures} failed provider attempts retried, ${totals.compactions} compactions, ` +
    `${totals.mcpShips} MCP side effects, ${totals.approvals} approvals from another process, ${totals.interrupted} calls interrupted, ${totals.rerunReads} reads run again`;
  return { passed, failed, summary, failures };
}

export const killFamily: SoakFamily = {
  name: "kill",
  soakCount: 1_000,
  ciCount: 6,
  run,
};
