/**
 * Process A of the two-process approval tests (argv: log, side-effect file, workspace, `auto` |
 * `wait`; the log is `postgres://…#<schema>` or a LevelDB directory, which it holds all the while):
 * sends a message whose tool call is held for approval, prints `parked <callId>`, and waits for an
 * answer another process appends (PostgreSQL) or hands it through the log's owner channel
 * (LevelDB: `turnlog approve`, `answerHeldCall`):
 *
 * - `auto`: `createRuntime({ autoResume: { onOutcome } })` resumes the session by itself;
 * - `wait`: `await session.waitForAnswers()` (prints `answered <status>`), then `session.resume()`.
 *
 * Either way it prints `final <status> <text>`, closes the log and exits 0, without a restart.
 */
import { createRuntime } from "../../src/index.js";
import type { SendOutcome } from "../../src/index.js";
import { openEventLogAt } from "./event-log-location.js";
import { approvalPolicy, approvalProvider, approvalSessionId, approvalTools } from "./approval-host-script.js";

const [location, effectsFile, workspace, mode] = process.argv.slice(2);
if (location === undefined || effectsFile === undefined || workspace === undefined || (mode !== "auto" && mode !== "wait")) {
  throw new TypeError("usage: approval-host-child.ts <postgres://…#schema | log dir> <effects file> <workspace> auto|wait");
}
const print = (line: string) => process.stdout.write(`${line}\n`);


// A host is kept alive by its own work (a server, a queue); the owner channel never keeps a process
// alive by itself (docs/log.md, "The owner channel"), so this one holds a handle until it is done.
const keepAlive = setInterval(() => undefined, 2 ** 30);
const log = await openEventLogAt(location, { durability: "relaxed" });
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
clearInterval(keepAlive);
print(`final ${outcome.status} ${outcome.text ?? outcome.reason ?? ""}`);
