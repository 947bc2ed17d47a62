/**
 * Process A of the two-process approval test: opens the PostgreSQL log (argv: URL, schema,
 * side-effect file, workspace, `auto` | `wait`), sends a message whose tool call is held for
 * approval, prints `parked <callId>`, and waits for an answer some other process appends:
 *
 * - `auto`: `createRuntime({ autoResume: { onOutcome } })` resumes the session by itself;
 * - `wait`: `await session.waitForAnswers()` (prints `answered <status>`), then `session.resume()`.
 *
 * Either way it prints `final <status> <text>` and exits 0, without a restart.
 */
import { createRuntime, PostgresEventLog } from "../../src/index.js";
import type { SendOutcome } from "../../src/index.js";
import { approvalPolicy, approvalProvider, approvalSessionId, approvalTools } from "./approval-host-script.js";

const [url, schema, effectsFile, workspace, mode] = process.argv.slice(2);
if (url === undefined || schema === undefined || effectsFile === undefined || workspace === undefined || (mode !== "auto" && mode !== "wait")) {
  throw new TypeError("usage: approval-host-child.ts <url> <schema> <effects file> <workspace> auto|wait");
}
const print = (line: string) => process.stdout.write(`${line}\n`);

const log = await PostgresEventLog.open(url, { schema, poolSize: 4, pollIntervalMs: 200 });
let resumed!: (outcome: SendOutcome) => void;
let failed!: (error: unknown) => void;
const autoOutcome = new Promise<SendOutcome>((resolve, reject) => {
  resumed = resolve;
  failed = reject;
});
const runtime = await createRuntime({
  log,
  provider: approvalProvider(log),
  tools: approvalTools(effectsFile),
  policy: approvalPolicy(workspace),
  ...(mode === "auto" ? { autoResume: { onOutcome: (outcome: SendOutcome) => resumed(outcome), onError: (error: unknown) => failed(error) } } : {}),
});
const session = await runtime.openSession(approvalSessionId);
const parked = await session.send("Deploy v2");
if (parked.status !== "awaiting-approval") throw new Error(`expected the deploy to be held, got ${parked.status}`);
print(`parked ${parked.pendingApprovals.map((call) => call.callId).join(",")}`);

let outcome: SendOutcome;
if (mode === "auto") {
  outcome = await autoOutcome;
} else {
  const answered = await session.waitForAnswers();
  print(`answered ${answered.status}`);
  outcome = await session.resume();
}
await runtime.close();
await log.close();
print(`final ${outcome.status} ${outcome.text ?? outcome.reason ?? ""}`);
