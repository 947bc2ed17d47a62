/**
 * Runs one scenario of the `kill` family: host children (each SIGKILLed at the scenario's next
 * kill point, or let run), an approver child whenever the host left the `deploy` session parked,
 * and CLI readers beside some host runs, until the host finishes every session. It returns what
 * the children printed; soak/kill/invariants.ts judges it against the log.
 */
import { once } from "node:events";
import { mkdir } from "node:fs/promises";
import path from "node:path";
import { superviseChild } from "../../test/support/killable-child.js";
import type { KillTrigger } from "../../test/support/killable-child.js";
import { startNodeChild } from "../../test/support/log-child-process.js";
import type { ChildBundle } from "./child-bundle.js";
import { describeScenarioKill, killTrigger, maxHostRuns } from "./kill-points.js";
import type { KillScenario, ReaderPlan } from "./kill-points.js";

/**
 * A child that has not finished by then is hung, which is a failure of its own. A host needs a few
 * seconds; the margin is for a machine shared with other work.
 */
export const childDeadlineMs = 60_000;

/** Kill points the whole run may still land: a scenario reserves one before each killing run. */
export interface KillBudget {
  /** Takes one kill point, if any is left. */
  reserve(): boolean;
  /** Gives back a reserved kill point that did not land (the child finished first). */
  release(): void;
}

export interface ChildRun {
  role: "host" | "approver";
  lines: string[];
  code: number | null;
  signal: NodeJS.Signals | null;
  /** The kill that was meant for this run, in words (absent for a run without one). */
  kill?: string;
  /** The kill reached the child before it finished its work. */
  killedMidRun: boolean;
  /** What set the kill off: the kill point, or its fallback time. */
  killedBy?: "point" | "fallback";
}

export interface ReaderRun {
  plan: ReaderPlan;
  argv: string[];
  code: number | null;
  stdout: string;
  stderr: string;
}

export interface ScenarioRun {
  directory: string;
  logDirectory: string;
  effectsFile: string;
  mcpEffectsFile: string;
  runs: ChildRun[];
  readers: ReaderRun[];
}

/** A scenario that broke before its invariants could be checked: a hung, failed or stuck child. */
export class ScenarioError extends Error {
  /** Kill points that had landed by then. */
  landed = 0;
}

/** Runs a child to its end, SIGKILLing it at `trigger` if the trigger's line comes, and reading all it printed. */
async function runChild(role: ChildRun["role"], script: string, args: readonly string[], trigger: KillTrigger | undefined, onReady?: () => void): Promise<ChildRun> {
  const child = startNodeChild([script], args);
  if (onReady !== undefined) child.waitForLine((line) => line === "ready").then(onReady, () => undefined);
  const run = await superviseChild(child, trigger, childDeadlineMs);
  const finished = run.lines.includes("final");
  if (run.hung) throw new ScenarioError(`the ${role} hung for ${childDeadlineMs} ms (deadline); its last lines: ${run.lines.slice(-5).join(" | ")}; stderr: ${run.stderr.slice(-2000)}`);
  if (!finished && run.killedBy === undefined) throw new ScenarioError(`the ${role} failed (exit ${run.code}, signal ${run.signal}); stderr: ${run.stderr.slice(-2000)}`);
  if (finished && run.code !== 0 && run.killedBy === undefined) throw new ScenarioError(`the ${role} printed final but exited ${run.code}; stderr: ${run.stderr.slice(-2000)}`);
  const killedMidRun = run.killedBy !== undefined && !finished;
  return { role, lines: run.lines, code: run.code, signal: run.signal, killedMidRun, ...(killedMidRun ? { killedBy: run.killedBy } : {}) };
}

/** Runs the turnlog CLI (bundled) on the log: a read while a host holds it, or just after. */
async function runReader(bundle: ChildBundle, logDirectory: string, plan: ReaderPlan): Promise<ReaderRun> {
  const argv =
    plan.command === "events" ? ["events", plan.sessionId, "--json"]
    : plan.command === "audit" ? ["audit", plan.sessionId, "--json"]
    : plan.command === "show" ? ["show", plan.sessionId]
    : plan.command === "verify" ? ["verify", "--json"]
    : ["sessions", "--json"];
  const run = startNodeChild([bundle.cli], [...argv, "--dir", logDirectory]);
  const closed = once(run.child, "close");
  let out = "";
  run.child.stdout.on("data", (chunk: string) => {
    out += chunk;
  });
  const deadline = setTimeout(() => run.child.kill("SIGKILL"), childDeadlineMs);
  const [code] = (await closed) as [number | null];
  clearTimeout(deadline);
  if (code === null) throw new ScenarioError(`the reader "turnlog ${argv.join(" ")}" hung for ${childDeadlineMs} ms (deadline)`);
  return { plan, argv, code, stdout: out, stderr: run.stderr() };
}

/** Runs `scenario` in `directory`, taking each kill point from `budget` before the run it is for. */
export async function runScenario(bundle: ChildBundle, directory: string, scenario: KillScenario, budget: KillBudget): Promise<ScenarioRun> {
  const runs: ChildRun[] = [];
  try {
    return await runScenarioChildren(bundle, directory, scenario, budget, runs);
  } catch (error) {
    const failure = error instanceof ScenarioError ? error : new ScenarioError(error instanceof Error ? (error.stack ?? error.message) : String(error));
    failure.landed = runs.filter((run) => run.killedMidRun).length;
    throw failure;
  }
}

async function runScenarioChildren(bundle: ChildBundle, directory: string, scenario: KillScenario, budget: KillBudget, runs: ChildRun[]): Promise<ScenarioRun> {
  const workspace = path.join(directory, "workspace");
  await mkdir(workspace, { recursive: true });
  const logDirectory = path.join(directory, "log");
  const effectsFile = path.join(directory, "effects.txt");
  const mcpEffectsFile = path.join(directory, "mcp-effects.txt");
  const result: ScenarioRun = { directory, logDirectory, effectsFile, mcpEffectsFile, runs, readers: [] };
  const pending = [...scenario.kills];
  for (let hostRun = 0; hostRun < maxHostRuns; hostRun += 1) {
    const kill = pending.length > 0 && budget.reserve() ? pending[0] : undefined;
    const readerPlan = scenario.readers[hostRun] ?? null;
    let reader: Promise<ReaderRun> | undefined;
    const startReader = readerPlan === null ? undefined : () => {
      const timer = new Promise((resolve) => setTimeout(resolve, readerPlan.afterReadyMs));
      reader = timer.then(() => runReader(bundle, logDirectory, readerPlan));
      // Caught here so that an early failure is not unhandled; awaited below.
      reader.catch(() => undefined);
    };
    let host: ChildRun;
    try {
      const trigger = kill === undefined ? undefined : { ...killTrigger(kill.point), fallbackMs: kill.fallbackMs };
      host = await runChild("host", bundle.host, [logDirectory, workspace, effectsFile, mcpEffectsFile, bundle.mcpServer], trigger, startReader);
    } catch (error) {
      if (kill !== undefined) budget.release();
      throw error;
    } finally {
      // The next child must not find the log held by a reader that opened it after the host ended.
      if (reader !== undefined) result.readers.push(await reader);
    }
    if (kill !== undefined) {
      host.kill = describeScenarioKill(kill);
      if (host.killedMidRun) pending.shift();
      else budget.release();
    }
    result.runs.push(host);
    if (host.killedMidRun) continue;
    if (host.lines.some((line) => line.startsWith("parked "))) {
      result.runs.push(await runChild("approver", bundle.approver, [logDirectory, workspace, effectsFile], undefined));
      continue;
    }
    return result;
  }
  throw new ScenarioError(`the sessions did not finish within ${maxHostRuns} host runs`);
}
