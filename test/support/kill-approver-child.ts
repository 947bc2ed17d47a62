/**
 * The approver of the `kill` soak family: another process that answers the `deploy` session's
 * held calls while its host is down (a LevelDB log has one process at a time). It opens the log in
 * argv[2] with the session's own runtime options (workspace argv[3], effects file argv[4]; its
 * tools never run here), approves every held call as `soak-approver`, and prints
 * `ack <stream> <streamPosition> <type> <hash>` for each durable event, `approved <callId>` for
 * each answer and `final` once the log is closed. The host resumes the session when it next runs.
 */
import { createRuntime, LevelEventLog } from "../../src/index.js";
import { pendingApprovals } from "../../src/reader/index.js";
import { acknowledgingLog } from "./acknowledging-log.js";
import { killProvider, killRuntimeOptions } from "./kill-session-script.js";

const [directory, workspace, effectsFile] = process.argv.slice(2);
if (directory === undefined || workspace === undefined || effectsFile === undefined) {
  throw new TypeError("usage: kill-approver-child.ts <log directory> <workspace> <effects file>");
}
const print = (line: string) => process.stdout.write(`${line}\n`);

const log = await LevelEventLog.open(directory, { durability: "sync" });
const runtime = await createRuntime({
  log: acknowledgingLog(log, (event) => print(`ack ${event.meta.stream} ${event.meta.streamPosition} ${event.type} ${event.meta.hash}`)),
  provider: killProvider(log, "deploy"),
  ...killRuntimeOptions("deploy", { workspace, effectsFile }),
});
const session = await runtime.openSession("deploy");
for (const held of pendingApprovals(session.state())) {
  await session.approve(held.callId, { by: "soak-approver", note: "approved from another process" });
  print(`approved ${held.callId}`);
}
await runtime.close();
await log.close();
print("final");
