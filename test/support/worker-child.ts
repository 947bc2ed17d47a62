/**
 * A host process of the worker tests (test/runtime/resume-all-processes.test.ts). argv: the
 * scenario (`deploy`: the sessions of worker-script.ts; `crash`: the session of
 * crash-session-script.ts), the log (a directory for LevelDB, or a `postgres://` URL), the
 * PostgreSQL schema (`-` for LevelDB), the side-effect file, the workspace, and what to do:
 *
 * - `park <id,…>` (`deploy` only): sends each session "Deploy v2", prints `parked <id> <callId>`
 *   for each once it waits for approval, then `holding`, and keeps the log open until it is killed;
 * - `sweep` / `sweep-auto`: creates a runtime (`sweep-auto`: with `autoResume`), prints `ready`,
 *   waits for a line `go` on stdin (so that racing workers start together), calls
 *   `runtime.resumeAll()` and prints `report <JSON>` (errors as their name, code and message).
 *   `sweep-auto` then waits for its first auto-resumed outcome and prints
 *   `auto <sessionId> <status> <text or reason>`. Either way it closes and prints `final`.
 */
import { setTimeout as sleep } from "node:timers/promises";
import { createInterface } from "node:readline";
import { createRuntime, LevelEventLog, PostgresEventLog } from "../../src/index.js";
import type { EventLog, PolicyInput, Provider, ResumeAllReport, SendOutcome, ToolDefinition } from "../../src/index.js";
import { scriptedProvider } from "../../src/testing/index.js";
import { crashPolicy, crashScript, crashTools } from "./crash-session-script.js";
import { workerProvider } from "./worker-script.js";
import { approvalPolicy, approvalTools } from "./approval-host-script.js";

const [scenario, location, schema, effectsFile, workspace, action, argument] = process.argv.slice(2);
if ((scenario !== "deploy" && scenario !== "crash") || location === undefined || schema === undefined || effectsFile === undefined || workspace === undefined || action === undefined) {
  throw new TypeError("usage: worker-child.ts deploy|crash <log dir|postgres URL> <schema|-> <effects file> <workspace> park <ids>|sweep|sweep-auto");
}
const print = (line: string) => process.stdout.write(`${line}\n`);

/** The crash session's model, answering any session from the history its request carries. */
function crashProvider(): Provider {
  return {
    id: "crash-scripted",
    format: "openai-chat",
    async complete(request, options) {
      const answered = request.messages.filter((message) => (message as { role?: string }).role === "assistant").length;
      return scriptedProvider(crashScript.slice(answered)).complete(request, options);
    },
  };
}

const setup: { provider: Provider; tools: ToolDefinition[]; policy: PolicyInput } =
  scenario === "deploy"
    ? { provider: workerProvider(), tools: approvalTools(effectsFile), policy: approvalPolicy(workspace) }
    : { provider: crashProvider(), tools: crashTools(effectsFile), policy: crashPolicy(workspace) };

const log: EventLog = location.startsWith("postgres://")
  ? await PostgresEventLog.open(location, { schema, poolSize: 4, pollIntervalMs: 200 })
  : await LevelEventLog.open(location, { durability: "sync" });

/** An error as a line of JSON can carry it. */
function described(error: unknown): unknown {
  return error instanceof Error ? { name: error.name, message: error.message, ...("code" in error ? { code: error.code } : {}) } : String(error);
}

if (action === "park") {
  const runtime = await createRuntime({ log, ...setup });
  for (const sessionId of (argument ?? "").split(",")) {
    const outcome = await (await runtime.openSession(sessionId)).send("Deploy v2");
    if (outcome.status !== "awaiting-approval") throw new Error(`expected ${sessionId} to be held, got ${outcome.status}`);
    print(`parked ${sessionId} ${outcome.pendingApprovals.map((call) => call.callId).join(",")}`);
  }
  print("holding");
  // Killed here, with the log open (a timer keeps the process alive).
  await sleep(600_000);
} else if (action === "sweep" || action === "sweep-auto") {
  let heard!: (line: string) => void;
  const autoOutcome = new Promise<string>((resolve) => (heard = resolve));
  const runtime = await createRuntime({
    log,
    ...setup,
    ...(action === "sweep-auto"
      ? {
          autoResume: {
            onOutcome: (outcome: SendOutcome, session: { id: string }) => heard(`auto ${session.id} ${outcome.status} ${outcome.text ?? outcome.reason ?? ""}`),
            onError: (error: unknown, session: { id: string }) => heard(`auto ${session.id} error ${JSON.stringify(described(error))}`),
          },
        }
      : {}),
  });
  print("ready");
  for await (const line of createInterface({ input: process.stdin })) if (line === "go") break;
  const report: ResumeAllReport = await runtime.resumeAll();
  print(
    `report ${JSON.stringify({
      ...report,
      skipped: report.skipped.map((entry) => ({ ...entry, ...(entry.error !== undefined ? { error: described(entry.error) } : {}) })),
      failed: report.failed.map((entry) => ({ ...entry, error: described(entry.error) })),
    })}`,
  );
  if (action === "sweep-auto") print(await autoOutcome);
  await runtime.close();
  await log.close();
  print("final");
} else {
  throw new TypeError(`unknown action ${action}`);
}
