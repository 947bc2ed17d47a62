import { spawn } from "node:child_process";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, expect, it } from "vitest";
import { createLogReader, PostgresEventLog, sessionStream } from "../../src/index.js";
import { bundledScript } from "../support/bundled-child.js";
import { describeWithPostgres, dropSchema, freshSchemaName, requirePostgresUrl } from "../support/postgres.js";
import { raceFinalAnswer, raceTools } from "../support/race-session-script.js";

/**
 * docs/design.md#7-recovery-and-many-hosts with real processes on a real PostgreSQL: four hosts race through the same
 * sessions of one schema — each opens every session and sends or resumes it, in its own seeded
 * order — once with the session lease off (pure races: append-before-act alone decides) and once
 * with it on (a host either drives a session or gets `SessionBusyError`). The tools append
 * `<sessionId> <callId>` to one side-effect file. Then, counting only (no timing):
 *
 * 1. no call ran twice (no line twice in the file), and every line belongs to a started call;
 * 2. no event was lost: every stream verifies, its positions are 1..n with no gap, every started
 *    call has exactly one outcome, and every call that succeeded left exactly one line;
 * 3. every session reached a final state, and replays identical.
 *
 * Reproduce with TURNLOG_RACE_SEED=<seed>. Each host orders the sessions by a seed of its own. The
 * children run from a bundle (test/support/bundled-child.ts; under tsx each start cost a few
 * seconds of CPU), and a loaded machine stretches every race, so each mode has a generous deadline
 * of its own.
 */

const baseSeed = Number(process.env.TURNLOG_RACE_SEED ?? 20_260_514);
const hosts = 4;
const rounds = 5;
const sessionsPerRound = 2;
const repositoryRoot = fileURLToPath(new URL("../..", import.meta.url));
const directories: string[] = [];
afterAll(async () => {
  await Promise.all(directories.map((directory) => rm(directory, { recursive: true, force: true })));
});

interface Host {
  lines: string[];
  stderr: () => string;
  ready: Promise<void>;
  exited: Promise<number | null>;
  go(): void;
}

/** A race child: test/support/race-session-child.ts, bundled, with a stdin to start it. */
function startHost(script: string, args: readonly string[]): Host {
  const child = spawn(process.execPath, [script, ...args], {
    cwd: repositoryRoot,
    stdio: ["pipe", "pipe", "pipe"],
  });
  const lines: string[] = [];
  let partial = "";
  let errors = "";
  let markReady!: () => void;
  const ready = new Promise<void>((resolve) => (markReady = resolve));
  child.stdout.setEncoding("utf8");
  child.stdout.on("data", (chunk: string) => {
    const parts = (partial + chunk).split("\n");
    partial = parts.pop() ?? "";
    lines.push(...parts);
    if (parts.includes("ready")) markReady();
  });
  child.stderr.setEncoding("utf8");
  child.stderr.on("data", (chunk: string) => (errors += chunk));
  const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)));
  // A child that dies before it is ready must not leave the race waiting.
  void exited.then(markReady);
  return { lines, stderr: () => errors, ready, exited, go: () => child.stdin.end("go\n") };
}

async function race(lease: "fail" | "off"): Promise<void> {
  const url = requirePostgresUrl();
  const schema = freshSchemaName(`race_${lease}`);
  const directory = await mkdtemp(join(tmpdir(), "turnlog-race-"));
  directories.push(directory);
  const effectsFile = join(directory, "effects.txt");
  await writeFile(effectsFile, "");
  // The schema is made before the hosts start, so that they race through sessions, not migrations.
  const log = await PostgresEventLog.open(url, { schema, poolSize: 4 });
  try {
    const sessionIds: string[] = [];
    const children: Host[] = [];
    for (let round = 0; round < rounds; round += 1) {
      const ids = Array.from({ length: sessionsPerRound }, (_, index) => `r${round}-s${index}`);
      sessionIds.push(...ids);
    }
    const script = await bundledScript("race-session-child.ts");
    for (let host = 0; host < hosts; host += 1) {
      // Each host takes the rounds in order, and each round's sessions in an order of its own seed.
      children.push(startHost(script, [url, schema, effectsFile, directory, lease, sessionIds.join(","), String(baseSeed + host * 7_919)]));
    }
    await Promise.all(children.map((child) => child.ready));
    for (const child of children) child.go();
    const codes = await Promise.all(children.map((child) => child.exited));
    codes.forEach((code, index) => expect(code, `host ${index} failed:\n${children[index]?.stderr()}`).toBe(0));

    // What each host was told: the lease makes a host either drive a session or hear it is busy;
    // without it, a host finishes the turn, or leaves it to the host performing its next effect.
    const results = children.flatMap((child) => child.lines.filter((line) => line.startsWith("result ")).map((line) => line.split(" ")[2] ?? ""));
    expect(results).toHaveLength(hosts * sessionIds.length);
    const allowed = lease === "fail" ? ["completed", "busy"] : ["completed", "failed", "stopped", "needs-resume:in-progress-elsewhere"];
    for (const result of results) expect(allowed).toContain(result);

    // 1. No double runs.
    const effects = (await readFile(effectsFile, "utf8")).split("\n").filter((line) => line !== "");
    expect(new Set(effects).size, "a call ran twice").toBe(effects.length);

    const reader = createLogReader(log, { tools: raceTools(effectsFile, () => 0) });
    for (const sessionId of sessionIds) {
      // 2. No lost events.
      const events = await log.readStream(sessionStream(sessionId));
      expect(events.map((event) => event.meta.streamPosition)).toEqual(events.map((_, index) => index + 1));
      expect(await log.verify({ stream: sessionStream(sessionId) })).toMatchObject({ ok: true });
      const started = events.filter((event) => event.type === "turn.tool.started").map((event) => (event.data as { callId: string }).callId);
      const ends = events.filter((event) => ["turn.tool.succeeded", "turn.tool.failed", "turn.tool.interrupted"].includes(event.type));
      expect(new Set(started).size).toBe(started.length);
      for (const callId of started) expect(ends.filter((event) => (event.data as { callId: string }).callId === callId), `${sessionId} ${callId}`).toHaveLength(1);
      const ran = effects.filter((line) => line.startsWith(`${sessionId} `)).map((line) => line.slice(sessionId.length + 1));
      for (const callId of ran) expect(started).toContain(callId);
      for (const end of ends.filter((event) => event.type === "turn.tool.succeeded")) expect(ran).toContain((end.data as { callId: string }).callId);

      // 3. A final state, and replay.
      const state = await reader.state(sessionId);
      expect(state.turns.filter((turn) => turn.status === "active"), sessionId).toEqual([]);
      expect(state.messages.filter((message) => message.role === "user"), sessionId).toHaveLength(1);
      if (lease === "fail") {
        // No host can cut another's effect short: every call ran once, and the session completed.
        expect(state.lastOutcome).toMatchObject({ status: "completed", text: raceFinalAnswer });
        expect(ends.every((event) => event.type === "turn.tool.succeeded")).toBe(true);
        expect(ran).toHaveLength(5);
      } else {
        expect(["completed", "failed", "stopped"]).toContain(state.lastOutcome?.status);
      }
      expect(await reader.replay(sessionId), sessionId).toMatchObject({ identical: true });
    }
  } finally {
    await log.close();
    await dropSchema(schema);
  }
}

describeWithPostgres("many hosts on one PostgreSQL log, racing through the same sessions", () => {
  it("with the session lease off: no call runs twice, no event is lost, every session ends and replays identical", async () => {
    await race("off");
  }, 180_000);

  it("with the session lease on: each host drives a session or hears SessionBusyError; every call runs once", async () => {
    await race("fail");
  }, 180_000);
});
