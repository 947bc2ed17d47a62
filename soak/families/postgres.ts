/**
 * Soak family `postgres` (docs/reliability.md): the crash test's invariants on a PostgreSQL log,
 * with several host processes on one schema.
 *
 * - **Kill points.** A scenario runs two or three sessions at once, each driven by a host process
 *   of its own (test/support/postgres-crash-host-child.ts: the crash test's session, whose `charge`
 *   tool has a side effect the log cannot undo) on one schema of a shared server. Each host is
 *   SIGKILLed at one to three seeded points — right after an acknowledged append, 0–3 ms into an
 *   append (mid-transaction), during a provider call, before or after a charge's side effect, or
 *   at a random time — and started again until its session finishes. The next host of a session
 *   may find the lease still held by the dead one's connection; it waits for the server to drop it.
 * - **Server restarts.** On a dedicated server of this run (fsync and synchronous commits on; the
 *   shared server is never restarted), two hosts run their sessions and the server is stopped at
 *   a seeded point — `pg_ctl stop -m immediate` (a crash: recovery from the WAL), `-m fast`, or a
 *   SIGKILL of the postmaster — kept down 0–400 ms and started again. A host must retry (it retries
 *   only errors that say the server is unreachable; any other error fails the case) and finish.
 *
 * After each scenario, for every session (the invariants of test/runtime/crash-recovery.test.ts):
 * the log verifies; every event a host saw acknowledged is in the log, unchanged; no charge ran
 * twice, every side effect has its `turn.tool.started`, every started charge has exactly one end
 * (an in-doubt one is `interrupted`) and every started call ends; the session ends (completed, or
 * stopped/failed for a recorded reason), opening and resuming it again runs nothing, and it
 * replays identical. Also, across the schema: the global order reads back every event of every
 * session once, positions strictly increasing, and each stream's positions are 1..n.
 *
 * A case is one kill point or one restart; every case of a scenario fails with it. A failure
 * names the seed, the scenario and its injections, and what broke.
 */
import { mkdir, mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import fc from "fast-check";
import pg from "pg";
import { createRuntime, PostgresEventLog, sessionStream } from "../../src/index.js";
import type { Provider, RecordedEvent } from "../../src/index.js";
import { crashPolicy, crashTools, finalAnswer } from "../../test/support/crash-session-script.js";
import type { SoakFamily, SoakOptions, SoakResult } from "../family.js";
import { bundleHost, restartableServer, sharedServer, startHost } from "./postgres-hosts.js";
import type { HostBundle, HostProcess, RestartMode, RestartableServer } from "./postgres-hosts.js";

/** Where a host is killed (or, in a restart scenario, where the server is stopped), relative to what it printed. */
type Point =
  /** Right after the append that made stream position ≥ `position` durable: between appends. */
  | { kind: "ack"; position: number }
  /** `delayMs` after the host's `nth` append set off: inside its transaction, or just after. */
  | { kind: "append"; nth: number; delayMs: number }
  /** `delayMs` into a provider call (the model takes 30–80 ms). */
  | { kind: "provider"; delayMs: number }
  /** `delayMs` into the n-th `charge` this host starts, before its side effect (40 ms in). */
  | { kind: "before-effect"; nth: number; delayMs: number }
  /** `delayMs` after the n-th side effect of this host, before the charge's outcome is logged. */
  | { kind: "after-effect"; nth: number; delayMs: number }
  /** `afterReadyMs` after the host opened (recovered) its session: anywhere at all. */
  | { kind: "time"; afterReadyMs: number };

const point: fc.Arbitrary<Point> = fc.oneof(
  // A run without a crash appends about 46 events in about 30 appends.
  fc.record({ kind: fc.constant("ack" as const), position: fc.integer({ min: 2, max: 45 }) }),
  fc.record({ kind: fc.constant("append" as const), nth: fc.integer({ min: 1, max: 28 }), delayMs: fc.integer({ min: 0, max: 3 }) }),
  fc.record({ kind: fc.constant("provider" as const), delayMs: fc.integer({ min: 0, max: 25 }) }),
  fc.record({ kind: fc.constant("before-effect" as const), nth: fc.integer({ min: 1, max: 2 }), delayMs: fc.integer({ min: 0, max: 30 }) }),
  fc.record({ kind: fc.constant("after-effect" as const), nth: fc.integer({ min: 1, max: 2 }), delayMs: fc.integer({ min: 0, max: 30 }) }),
  fc.record({ kind: fc.constant("time" as const), afterReadyMs: fc.integer({ min: 0, max: 800 }) }),
);

/** Two or three sessions, each with its own host, killed at one to three points. */
const killScenario = fc.array(fc.array(point, { minLength: 1, maxLength: 3 }), { minLength: 2, maxLength: 3 });
/** A restart comes early enough in session 0 (a run appends about 46 events) that the hosts are still running. */
const restartPoint: fc.Arbitrary<Point> = point.map((at) =>
  at.kind === "ack" ? { ...at, position: Math.min(at.position, 40) } : at.kind === "append" ? { ...at, nth: Math.min(at.nth, 24) } : at,
);
const restartScenario = fc.record({
  at: restartPoint,
  mode: fc.constantFrom<RestartMode>("immediate", "fast", "kill"),
  downMs: fc.integer({ min: 0, max: 400 }),
});

interface KillPlan {
  kind: "kill";
  index: number;
  /** The kill points of each session's hosts, in order. */
  hosts: Point[][];
}
interface RestartPlan {
  kind: "restart";
  index: number;
  at: Point;
  mode: RestartMode;
  downMs: number;
}
type Plan = KillPlan | RestartPlan;

/** Sessions of a restart scenario, each with one host. */
const restartSessions = 2;
/** Kill scenarios run side by side (each starts two or three hosts), and beside them the restarts, one at a time. */
const parallelKillScenarios = 2;
/** A host that has not finished by then is hung, which is a failure of its own. */
const hostDeadlineMs = 90_000;

/** One case in ten is a restart (at least one), the rest kill points. */
function planCases(seed: number, count: number): Plan[] {
  const restarts = count <= 1 ? count : Math.max(1, Math.round(count / 10));
  let killPoints = count - restarts;
  const plans: Plan[] = [];
  const killSamples = fc.sample(killScenario, { seed, numRuns: Math.max(1, killPoints) });
  for (const hosts of killSamples) {
    if (killPoints <= 0) break;
    // The last scenario is cut to the count left (each session keeps at least one kill; one host
    // of a session is enough when a single point is left).
    const trimmed: Point[][] = [];
    for (const kills of hosts) {
      if (killPoints <= 0) break;
      const taken = kills.slice(0, killPoints);
      killPoints -= taken.length;
      trimmed.push(taken);
    }
    plans.push({ kind: "kill", index: plans.length, hosts: trimmed });
  }
  for (const restart of fc.sample(restartScenario, { seed: seed + 1, numRuns: Math.max(1, restarts) }).slice(0, restarts)) {
    plans.push({ kind: "restart", index: plans.length, ...restart });
  }
  return plans;
}

const casesOf = (plan: Plan) => (plan.kind === "kill" ? plan.hosts.reduce((sum, kills) => sum + kills.length, 0) : 1);

function describePoint(at: Point): string {
  switch (at.kind) {
    case "ack":
      return `after ack ≥ ${at.position}`;
    case "append":
      return `${at.delayMs} ms into append #${at.nth}`;
    case "provider":
      return `${at.delayMs} ms into a provider call`;
    case "before-effect":
      return `${at.delayMs} ms into charge #${at.nth}`;
    case "after-effect":
      return `${at.delayMs} ms after side effect #${at.nth}`;
    case "time":
      return `${at.afterReadyMs} ms after ready`;
  }
}

function describePlan(plan: Plan): string {
  if (plan.kind === "kill") return `kill ${plan.hosts.map((kills, host) => `session ${host}: ${kills.map(describePoint).join(", then ")}`).join("; ")}`;
  return `restart (${plan.mode}, down ${plan.downMs} ms) ${describePoint(plan.at)} of session 0`;
}

/** The line a point waits for, and how long after it the injection lands. */
function trigger(at: Point): { when: (line: string, index: number, lines: readonly string[]) => boolean; delayMs: number } {
  const nthOf = (matches: (line: string) => boolean, nth: number) => (line: string, index: number, lines: readonly string[]) =>
    matches(line) && lines.slice(0, index + 1).filter(matches).length >= nth;
  switch (at.kind) {
    case "ack":
      return { when: (line) => line.startsWith("ack ") && Number(line.split(" ")[1]) >= at.position, delayMs: 0 };
    case "append":
      return { when: (line) => line.startsWith("appending ") && Number(line.split(" ")[1]) >= at.nth, delayMs: at.delayMs };
    case "provider":
      return { when: (line) => line.startsWith("provider "), delayMs: at.delayMs };
    case "before-effect":
      return { when: nthOf((line) => line.startsWith("begin ") && line.endsWith(" charge"), at.nth), delayMs: at.delayMs };
    case "after-effect":
      return { when: nthOf((line) => line.startsWith("effect "), at.nth), delayMs: at.delayMs };
    case "time":
      return { when: (line) => line.startsWith("ready "), delayMs: at.afterReadyMs };
  }
}

/** Resolves once `host` printed the point's line and the delay passed (false: it ended first). */
async function reached(host: HostProcess, at: Point): Promise<boolean> {
  const { when, delayMs } = trigger(at);
  const seen = await host.waitForLine((line, index) => when(line, index, host.lines)).then(
    () => true,
    () => false,
  );
  if (!seen) return false;
  if (delayMs > 0) await new Promise((resolve) => setTimeout(resolve, delayMs));
  return true;
}

interface HostRun {
  lines: string[];
  code: number | null;
  signal: NodeJS.Signals | null;
  stderr: string;
  /** The kill reached the host before it finished its work. */
  killedMidRun: boolean;
}

/** Waits for a host to end, SIGKILLing it at its deadline; says what went wrong, if anything. */
async function finish(host: HostProcess, killSent: () => boolean): Promise<HostRun> {
  const deadline = setTimeout(() => host.child.kill("SIGKILL"), hostDeadlineMs);
  const { code, signal } = await host.closed;
  clearTimeout(deadline);
  const finished = host.lines.some((line) => line.startsWith("final "));
  if (signal === "SIGKILL" && !killSent()) throw new Error(`a host hung for ${hostDeadlineMs} ms; stderr:\n${host.stderr()}`);
  if (!finished && signal !== "SIGKILL") throw new Error(`a host failed (exit ${code}); stderr:\n${host.stderr()}`);
  return { lines: [...host.lines], code, signal, stderr: host.stderr(), killedMidRun: killSent() && !finished };
}

/** What a scenario's session left behind, gathered so each invariant can be checked on its own. */
interface SessionAftermath {
  sessionId: string;
  runs: HostRun[];
  effectsFile: string;
}

interface Context {
  bundle: HostBundle;
  seed: number;
  root: string;
}

function hostArguments(url: string, schema: string, sessionId: string, workspace: string, effectsFile: string): string[] {
  return [url, schema, sessionId, workspace, effectsFile];
}

/** Runs a session's hosts, each killed at its point, until one is not killed mid-run, then one to the end. */
async function driveWithKills(context: Context, url: string, schema: string, sessionId: string, workspace: string, effectsFile: string, kills: readonly Point[]): Promise<SessionAftermath> {
  const runs: HostRun[] = [];
  for (const kill of kills) {
    const host = startHost(context.bundle, hostArguments(url, schema, sessionId, workspace, effectsFile));
    let killSent = false;
    void reached(host, kill).then((hit) => {
      if (!hit) return;
      killSent = true;
      host.child.kill("SIGKILL");
    });
    const run = await finish(host, () => killSent);
    runs.push(run);
    if (!run.killedMidRun) break;
  }
  if (runs.length === 0 || runs.at(-1)?.killedMidRun) {
    runs.push(await finish(startHost(context.bundle, hostArguments(url, schema, sessionId, workspace, effectsFile)), () => false));
  }
  return { sessionId, runs, effectsFile };
}

const refusingProvider: Provider = {
  id: "crash-scripted",
  format: "openai-chat",
  complete() {
    throw new Error("the soak replays the session; it never calls the provider");
  },
};

const terminalToolEvents = new Set(["turn.tool.succeeded", "turn.tool.failed", "turn.tool.interrupted"]);
const callIdOf = (event: RecordedEvent) => (event.data as { callId?: string }).callId ?? "";
const packetsOf = (events: readonly RecordedEvent[]) =>
  events
    .filter((event) => event.type === "turn.results.packetized")
    .flatMap((event) => (event.data as { packets: { callId: string; ok: boolean; content: string }[] }).packets);

/** Checks every invariant of a scenario's sessions on its schema; returns what broke. */
async function checkInvariants(url: string, schema: string, workspace: string, sessions: readonly SessionAftermath[]): Promise<string[]> {
  const broken: string[] = [];
  const log = await PostgresEventLog.open(url, { schema, poolSize: 2, migrate: false });
  try {
    const runtime = await createRuntime({ log, provider: refusingProvider, tools: crashTools(path.join(workspace, "never-written.txt")), policy: crashPolicy(workspace) });
    const verify = await runtime.verify();
    if (!verify.ok) broken.push(`the log does not verify: ${JSON.stringify(verify)}`);

    // The global order, across every host's appends.
    const seen = new Map<string, number>();
    let lastGlobal = 0;
    for await (const event of log.readAll()) {
      if (event.meta.globalPosition <= lastGlobal) broken.push(`global position ${event.meta.globalPosition} after ${lastGlobal}`);
      lastGlobal = event.meta.globalPosition;
      const expected = (seen.get(event.meta.stream) ?? 0) + 1;
      if (event.meta.streamPosition !== expected) broken.push(`${event.meta.stream}: position ${event.meta.streamPosition} where ${expected} was next in the global order`);
      seen.set(event.meta.stream, event.meta.streamPosition);
    }

    for (const { sessionId, runs, effectsFile } of sessions) {
      const where = `session ${sessionId}`;
      const events = await runtime.events(sessionId);
      if ((seen.get(sessionStream(sessionId)) ?? 0) !== events.length) broken.push(`${where}: the global order holds ${seen.get(sessionStream(sessionId)) ?? 0} of its ${events.length} events`);

      // Every acknowledged event is there, unchanged.
      for (const run of runs) {
        for (const line of run.lines.filter((candidate) => candidate.startsWith("ack "))) {
          const [, position, type, hash] = line.split(" ");
          const event = events[Number(position) - 1];
          if (event?.type !== type || event?.meta.hash !== hash) broken.push(`${where}: acknowledged ${position} ${type} ${hash}, the log holds ${event?.type ?? "nothing"} ${event?.meta.hash ?? ""}`);
        }
      }

      // No charge twice; every effect started; every started charge has exactly one end.
      const effects = (await readFile(effectsFile, "utf8").catch(() => "")).split("\n").filter((line) => line !== "");
      const twice = effects.filter((callId, at) => effects.indexOf(callId) !== at);
      if (twice.length > 0) broken.push(`${where}: charged twice: ${twice.join(", ")}`);
      const started = events.filter((event) => event.type === "turn.tool.started");
      const charges = new Set(started.filter((event) => (event.data as { tool?: string }).tool === "charge").map(callIdOf));
      for (const callId of effects) if (!charges.has(callId)) broken.push(`${where}: the side effect of ${callId} has no turn.tool.started`);
      for (const callId of charges) {
        const story = events.filter((event) => callIdOf(event) === callId && (event.type === "turn.tool.started" || terminalToolEvents.has(event.type))).map((event) => event.type);
        if (story.length !== 2 || story[0] !== "turn.tool.started" || !terminalToolEvents.has(story[1] ?? "")) broken.push(`${where}: the tool events of ${callId} are ${story.join(", ")}`);
        if (story[1] === "turn.tool.succeeded" && !effects.includes(callId)) broken.push(`${where}: ${callId} succeeded without its side effect`);
      }
      const packets = packetsOf(events);
      for (const callId of new Set(started.map(callIdOf))) {
        const last = events.findLast((event) => callIdOf(event) === callId && (event.type === "turn.tool.started" || terminalToolEvents.has(event.type)));
        if (!terminalToolEvents.has(last?.type ?? "")) broken.push(`${where}: ${callId} never ended (last ${last?.type})`);
        if (last?.type === "turn.tool.interrupted" && packets.find((packet) => packet.callId === callId)?.ok !== false) broken.push(`${where}: the model was not told ${callId} was interrupted`);
      }

      // The session ends, opening it again runs nothing, and it replays identical.
      const lastEvent = events.at(-1);
      const finalLine = runs.at(-1)?.lines.find((line) => line.startsWith("final ")) ?? "";
      if (lastEvent?.type === "turn.completed") {
        if (finalLine !== `final completed ${finalAnswer}`) broken.push(`${where}: completed, but its host said ${JSON.stringify(finalLine)}`);
      } else if (lastEvent?.type === "turn.stopped" || lastEvent?.type === "turn.failed") {
        if (!/\S/.test((lastEvent.data as { reason?: string }).reason ?? "")) broken.push(`${where}: ${lastEvent.type} without a reason`);
        if (!/^final (stopped|failed) \S/.test(finalLine)) broken.push(`${where}: ${lastEvent.type}, but its host said ${JSON.stringify(finalLine)}`);
      } else {
        broken.push(`${where}: ends on ${lastEvent?.type ?? "nothing"}, not a final state`);
      }
      const session = await runtime.openSession(sessionId);
      const outcome = await session.resume();
      const eventsAfter = (await runtime.events(sessionId)).length;
      if (eventsAfter !== events.length) broken.push(`${where}: opening and resuming it again appended ${eventsAfter - events.length} events`);
      const reopened = `final ${outcome.status} ${outcome.text ?? outcome.reason ?? ""}`;
      if (reopened !== finalLine) broken.push(`${where}: reopened it says ${JSON.stringify(reopened)}, its host said ${JSON.stringify(finalLine)}`);
      const replay = await runtime.replay(sessionId);
      if (!replay.identical || replay.divergences.length > 0) broken.push(`${where}: replay diverges: ${JSON.stringify(replay.divergences)}`);
    }
    await runtime.close();
  } finally {
    await log.close();
  }
  return broken;
}

async function dropSchema(url: string, schema: string): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(`DROP SCHEMA IF EXISTS ${pg.escapeIdentifier(schema)} CASCADE`);
  } finally {
    await client.end();
  }
}

/** What a scenario measured, for the summary. */
interface ScenarioFigures {
  hostsStarted: number;
  killsLanded: number;
  acks: number;
  effects: number;
  /** Retries hosts reported (a server away, or a dead predecessor's lease not yet dropped). */
  retries: number;
  /** A restart scenario's restart came while a host was still running. */
  restartLanded: boolean;
}

function figuresOf(sessions: readonly SessionAftermath[], effects: number, restartLanded = false): ScenarioFigures {
  const runs = sessions.flatMap((session) => session.runs);
  return {
    hostsStarted: runs.length,
    killsLanded: runs.filter((run) => run.killedMidRun).length,
    acks: runs.reduce((sum, run) => sum + run.lines.filter((line) => line.startsWith("ack ")).length, 0),
    effects,
    retries: runs.reduce((sum, run) => sum + run.lines.filter((line) => line.startsWith("retry ")).length, 0),
    restartLanded,
  };
}

async function scenarioDirectory(context: Context, plan: Plan): Promise<{ directory: string; workspace: string; schema: string }> {
  const directory = path.join(context.root, `scenario-${plan.index}`);
  const workspace = path.join(directory, "workspace");
  await mkdir(workspace, { recursive: true });
  const schema = `soak_pg_${context.seed}_${plan.index}_${Math.random().toString(36).slice(2, 8)}`.replace(/-/g, "m");
  return { directory, workspace, schema };
}

async function countEffects(sessions: readonly SessionAftermath[]): Promise<number> {
  let count = 0;
  for (const session of sessions) count += (await readFile(session.effectsFile, "utf8").catch(() => "")).split("\n").filter((line) => line !== "").length;
  return count;
}

async function runKillScenario(context: Context, url: string, plan: KillPlan): Promise<{ broken: string[]; figures: ScenarioFigures }> {
  const { directory, workspace, schema } = await scenarioDirectory(context, plan);
  try {
    // The schema is made before the hosts start, so that they race through sessions, not migrations.
    await (await PostgresEventLog.open(url, { schema, poolSize: 1 })).close();
    const sessions = await Promise.all(
      plan.hosts.map((kills, host) =>
        driveWithKills(context, url, schema, `soak-${plan.index}-${host}`, workspace, path.join(directory, `effects-${host}.txt`), kills),
      ),
    );
    const broken = await checkInvariants(url, schema, workspace, sessions);
    return { broken, figures: figuresOf(sessions, await countEffects(sessions)) };
  } finally {
    await dropSchema(url, schema).catch(() => undefined);
    await rm(directory, { recursive: true, force: true });
  }
}

async function runRestartScenario(context: Context, server: RestartableServer, plan: RestartPlan): Promise<{ broken: string[]; figures: ScenarioFigures }> {
  const { directory, workspace, schema } = await scenarioDirectory(context, plan);
  try {
    await (await PostgresEventLog.open(server.url, { schema, poolSize: 1 })).close();
    const hosts = Array.from({ length: restartSessions }, (_, host) => {
      const effectsFile = path.join(directory, `effects-${host}.txt`);
      const sessionId = `soak-${plan.index}-${host}`;
      return { sessionId, effectsFile, process: startHost(context.bundle, hostArguments(server.url, schema, sessionId, workspace, effectsFile)) };
    });
    const running = () => hosts.some((host) => host.process.child.exitCode === null && host.process.child.signalCode === null);
    // The restart comes at its point of session 0's host, or at once if that host ended first.
    await reached(hosts[0]!.process, plan.at);
    const restartLanded = running();
    await server.restart(plan.mode, plan.downMs);
    const sessions: SessionAftermath[] = [];
    for (const host of hosts) sessions.push({ sessionId: host.sessionId, effectsFile: host.effectsFile, runs: [await finish(host.process, () => false)] });
    const broken = await checkInvariants(server.url, schema, workspace, sessions);
    return { broken, figures: figuresOf(sessions, await countEffects(sessions), restartLanded) };
  } finally {
    await dropSchema(server.url, schema).catch(() => undefined);
    await rm(directory, { recursive: true, force: true });
  }
}

async function run({ seed, count, log }: SoakOptions): Promise<SoakResult> {
  const plans = planCases(seed, count);
  const killPlans = plans.filter((plan): plan is KillPlan => plan.kind === "kill");
  const restartPlans = plans.filter((plan): plan is RestartPlan => plan.kind === "restart");
  const started = performance.now();
  const root = await mkdtemp(path.join(tmpdir(), "turnlog-soak-pg-"));
  const bundle = await bundleHost();
  const context: Context = { bundle, seed, root };
  let passed = 0;
  let failed = 0;
  const failures: string[] = [];
  const totals: ScenarioFigures & { restartsLanded: number } = { hostsStarted: 0, killsLanded: 0, acks: 0, effects: 0, retries: 0, restartLanded: false, restartsLanded: 0 };
  const record = (plan: Plan, outcome: { broken: string[]; figures?: ScenarioFigures }) => {
    const cases = casesOf(plan);
    if (outcome.figures !== undefined) {
      const figures = outcome.figures;
      totals.hostsStarted += figures.hostsStarted;
      totals.killsLanded += figures.killsLanded;
      totals.acks += figures.acks;
      totals.effects += figures.effects;
      totals.retries += figures.retries;
      if (figures.restartLanded) totals.restartsLanded += 1;
    }
    if (outcome.broken.length === 0) {
      passed += cases;
      return;
    }
    failed += cases;
    const what = `seed ${seed}, scenario #${plan.index} (${describePlan(plan)}): ${outcome.broken.join("; ")}`;
    failures.push(`${cases} case${cases === 1 ? "" : "s"} of ${what}`);
    log(`FAILED ${what}`);
  };
  const attempt = async (plan: Plan, work: () => Promise<{ broken: string[]; figures: ScenarioFigures }>) => {
    try {
      record(plan, await work());
    } catch (error) {
      record(plan, { broken: [`the scenario threw: ${String((error as Error)?.stack ?? error)}`] });
    }
  };
  // The kill scenarios (on the shared server) and the restarts (on a server of their own) run side by side.
  const killing = async () => {
    if (killPlans.length === 0) return;
    const shared = await sharedServer();
    try {
      let next = 0;
      const worker = async () => {
        while (next < killPlans.length) {
          const plan = killPlans[next] as KillPlan;
          next += 1;
          await attempt(plan, () => runKillScenario(context, shared.url, plan));
          log(`scenario #${plan.index} (kill) done: ${passed} passed, ${failed} failed`);
        }
      };
      await Promise.all(Array.from({ length: parallelKillScenarios }, worker));
    } finally {
      shared.stop();
    }
  };
  const restarting = async () => {
    if (restartPlans.length === 0) return;
    const server = await restartableServer();
    try {
      for (const plan of restartPlans) {
        await attempt(plan, () => runRestartScenario(context, server, plan));
        log(`scenario #${plan.index} (restart ${plan.mode}) done: ${passed} passed, ${failed} failed`);
      }
    } finally {
      server.stop();
    }
  };
  try {
    const settled = await Promise.allSettled([killing(), restarting()]);
    for (const outcome of settled) if (outcome.status === "rejected") throw outcome.reason;
  } finally {
    await bundle.remove();
    await rm(root, { recursive: true, force: true });
  }
  const seconds = (performance.now() - started) / 1000;
  const killPoints = killPlans.reduce((sum, plan) => sum + casesOf(plan), 0);
  const modes = (["immediate", "fast", "kill"] as const).map((mode) => `${restartPlans.filter((plan) => plan.mode === mode).length} ${mode}`).join(", ");
  return {
    passed,
    failed,
    failures,
    summary:
      `${killPoints} kill points (${totals.killsLanded} landed mid-run) in ${killPlans.length} scenarios of 2–3 hosts on one schema, ` +
      `${restartPlans.length} server restarts (${modes}; ${totals.restartsLanded} with a host running), ${totals.hostsStarted} hosts, ` +
      `${totals.acks} acknowledged events checked, ${totals.effects} side effects, ${totals.retries} host retries, ${(count / seconds).toFixed(2)} cases/s`,
  };
}

export const postgresFamily: SoakFamily = {
  name: "postgres",
  soakCount: 300,
  ciCount: 4,
  run,
};
