/**
 * Child process of the multi-host race test: one host on a shared PostgreSQL log. It opens the
 * log (argv: URL, schema, side-effect file, workspace, `fail` | `off` for `sessionLease`, the
 * session IDs comma-separated, a seed), prints `ready`, waits for `go` on stdin (so that every
 * child starts racing at once), then drives each session in a seeded order — `send("go")` when
 * the session has no message yet, `resume()` otherwise — and prints one line per session:
 *
 * - `result <sessionId> <status>[:<reason>]` for an outcome;
 * - `result <sessionId> busy` for a `SessionBusyError`;
 * - `done` at the end. Any other error ends the child with its stack on stderr (exit 1).
 */
import { createInterface } from "node:readline";
import { setTimeout as sleep } from "node:timers/promises";
import fc from "fast-check";
import { createRuntime, ExpectedVersionConflictError, PostgresEventLog, SessionBusyError, sessionStream } from "../../src/index.js";
import type { SendOutcome, Session } from "../../src/index.js";
import { racePolicy, raceProvider, raceTools } from "./race-session-script.js";

const [url, schema, effectsFile, workspace, leaseMode, sessionList, seedText] = process.argv.slice(2);
if (url === undefined || schema === undefined || effectsFile === undefined || workspace === undefined || sessionList === undefined || seedText === undefined || (leaseMode !== "fail" && leaseMode !== "off")) {
  throw new TypeError("usage: race-session-child.ts <url> <schema> <effects file> <workspace> fail|off <id,id,…> <seed>");
}
const print = (line: string) => process.stdout.write(`${line}\n`);

// Seeded pauses (0–12 ms) in tools and the model, and a seeded order of the sessions: each seed
// interleaves the hosts differently, and a failing run is reproduced by its seed.
const seed = Number(seedText);
const pauses = fc.sample(fc.integer({ min: 0, max: 12 }), { seed, numRuns: 4_000 });
let next = 0;
const pause = () => pauses[next++ % pauses.length] ?? 0;
const order = fc.sample(fc.shuffledSubarray(sessionList.split(","), { minLength: sessionList.split(",").length }), { seed, numRuns: 1 })[0] ?? [];

const log = await PostgresEventLog.open(url, { schema, poolSize: 4, pollIntervalMs: 100 });
let current = "";
const runtime = await createRuntime({
  log,
  provider: raceProvider(async () => (await log.readStream(sessionStream(current))).filter((event) => event.type === "turn.provider.responded").length, pause),
  tools: raceTools(effectsFile, pause),
  policy: racePolicy(workspace),
  sessionLease: leaseMode,
  // A host whose provider attempt another host's recovery cut off retries at once, and may retry often.
  providerAttempts: 10,
  providerRetry: { baseDelayMs: 0, maxDelayMs: 0 },
});

async function drive(session: Session): Promise<SendOutcome> {
  if (session.outcome().status !== "idle") return session.resume();
  try {
    return await session.send("go");
  } catch (error) {
    // Another host's message went first: this one is not sent; the turn is carried on instead.
    if (ExpectedVersionConflictError.isInstance(error)) return session.resume();
    throw error;
  }
}

print("ready");
const lines = createInterface({ input: process.stdin });
for await (const line of lines) if (line === "go") break;
lines.close();

for (const sessionId of order) {
  await sleep(pause());
  current = sessionId;
  try {
    const outcome = await drive(await runtime.openSession(sessionId));
    print(`result ${sessionId} ${outcome.status}${outcome.reason !== undefined ? `:${outcome.reason}` : ""}`);
  } catch (error) {
    if (!SessionBusyError.isInstance(error)) throw error;
    print(`result ${sessionId} busy`);
  }
}
await runtime.close();
await log.close();
print("done");
