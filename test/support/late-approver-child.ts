/**
 * The reviewer's process of the late-approval test: opens the PostgreSQL log (argv: URL, schema,
 * side-effect file, call ID) with a runtime of its own and the system clock, and approves the held
 * call of `approval-host-script.ts`'s session. It prints `deadline <ISO>` (what the log says),
 * then `approved`, or `refused <error class>: <message>`, and exits 0.
 */
import { createRuntime, PostgresEventLog } from "../../src/index.js";
import { approvalPolicy, approvalProvider, approvalSessionId, approvalTools } from "./approval-host-script.js";

const [url, schema, effectsFile, callId] = process.argv.slice(2);
if (url === undefined || schema === undefined || effectsFile === undefined || callId === undefined) {
  throw new TypeError("usage: late-approver-child.ts <url> <schema> <effects file> <call ID>");
}
const print = (line: string) => process.stdout.write(`${line}\n`);

const log = await PostgresEventLog.open(url, { schema, poolSize: 2 });
const runtime = await createRuntime({ log, provider: approvalProvider(log), tools: approvalTools(effectsFile), policy: approvalPolicy(process.cwd()) });
const held = await runtime.openSession(approvalSessionId, { create: false });
print(`deadline ${held.outcome().pendingApprovals.find((call) => call.callId === callId)?.deadline ?? "none"}`);
try {
  await held.approve(callId, { by: "late-reviewer" });
  print("approved");
} catch (error) {
  print(`refused ${(error as Error).constructor.name}: ${(error as Error).message}`);
}
await runtime.close();
await log.close();
