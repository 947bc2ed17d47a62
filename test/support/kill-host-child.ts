/**
 * The host the `kill` soak family SIGKILLs (soak/families/kill.ts): it opens a `sync`
 * LevelEventLog in argv[2] and drives the three sessions of `kill-session-script.ts` at once,
 * each through a runtime of its own on that one log (workspace argv[3], local side effects to
 * argv[4], the MCP server's to argv[5]; argv[6] is the MCP server's script: a bundled `.js`, or a
 * `.ts` run under tsx). Each session is sent its messages in turn, or resumed where a killed
 * predecessor left it. It reports on stdout, one line each:
 *
 * - `ready` once every session is open (recovered);
 * - `ack <stream> <streamPosition> <type> <hash>` for each event once it is durable;
 * - `seen <stream> <streamPosition> <type> <hash>` for each event of a session a log subscriber is
 *   handed (durable or not: what a subscriber is handed must survive a kill, docs/log.md);
 * - `provider <session> <answer>` when the model is asked for its n-th answer (0-based), and
 *   `provider-fail <session> <answer>` when that attempt fails transiently (a retry follows);
 * - `begin <session> <callId> <tool>` when a local tool starts, `effect <session> <callId>` once its
 *   side effect is written;
 * - `mcp-begin <order>` / `mcp-effect <order>` as the MCP server reports a `ship` call;
 * - `parked <session> <callId,…>` when a session waits for approvals (it stays parked: with LevelDB
 *   no other process can answer while this one holds the log, so this host ends, and another
 *   process answers);
 * - `outcome <session> <status> <text or reason>` once a session stops running;
 * - `final` once every session has an outcome and the log is closed.
 */
import path from "node:path";
import { createRuntime, LevelEventLog, sessionStream } from "../../src/index.js";
import type { SendOutcome, Session } from "../../src/index.js";
import { acknowledgingLog } from "./acknowledging-log.js";
import { killMessages, killProvider, killRuntimeOptions, killSessionIds } from "./kill-session-script.js";

const [directory, workspace, effectsFile, mcpEffectsFile, mcpServerScript] = process.argv.slice(2);
if (directory === undefined || workspace === undefined || effectsFile === undefined || mcpEffectsFile === undefined || mcpServerScript === undefined) {
  throw new TypeError("usage: kill-host-child.ts <log directory> <workspace> <effects file> <MCP effects file> <MCP server script>");
}
const print = (line: string) => process.stdout.write(`${line}\n`);

const log = await LevelEventLog.open(directory, { durability: "sync" });
const reportingLog = acknowledgingLog(log, (event) => print(`ack ${event.meta.stream} ${event.meta.streamPosition} ${event.type} ${event.meta.hash}`));
for (const sessionId of killSessionIds) {
  log.subscribe((event) => print(`seen ${event.meta.stream} ${event.meta.streamPosition} ${event.type} ${event.meta.hash}`), { stream: sessionStream(sessionId) });
}

let serverOutput = "";
const mcp = {
  nodeArguments: path.extname(mcpServerScript) === ".ts" ? ["--import", "tsx", mcpServerScript] : [mcpServerScript],
  effectsFile: mcpEffectsFile,
  // The server's stderr arrives in chunks: whole lines are passed on.
  onStderr: (text: string) => {
    const lines = (serverOutput + text).split("\n");
    serverOutput = lines.pop() ?? "";
    for (const line of lines) if (line.startsWith("mcp-")) print(line);
  },
};
const hooks = {
  onBegin: (sessionId: string, callId: string, tool: string) => print(`begin ${sessionId} ${callId} ${tool}`),
  onEffect: (sessionId: string, callId: string) => print(`effect ${sessionId} ${callId}`),
};

const runtimes = await Promise.all(
  killSessionIds.map((sessionId) =>
    createRuntime({
      log: reportingLog,
      provider: killProvider(log, sessionId, {
        onCall: (id, answer) => print(`provider ${id} ${answer}`),
        onTransientFailure: (id, answer) => print(`provider-fail ${id} ${answer}`),
      }),
      ...killRuntimeOptions(sessionId, { workspace, effectsFile, hooks, mcp }),
    }),
  ),
);
const sessions = await Promise.all(killSessionIds.map((sessionId, index) => runtimes[index]!.openSession(sessionId)));
print("ready");

/** Sends the session's messages in turn, resuming owed work first, until it is parked or done. */
async function drive(session: Session, messages: readonly string[]): Promise<SendOutcome> {
  for (;;) {
    let outcome = session.outcome();
    if (outcome.status === "needs-resume") outcome = await session.resume();
    const sent = session.state().messages.filter((message) => message.role === "user").length;
    if ((outcome.status !== "idle" && outcome.status !== "completed") || sent >= messages.length) return outcome;
    await session.send(messages[sent]!);
  }
}

await Promise.all(
  sessions.map(async (session, index) => {
    const outcome = await drive(session, killMessages[killSessionIds[index]!]);
    if (outcome.status === "awaiting-approval") print(`parked ${session.id} ${outcome.pendingApprovals.map((held) => held.callId).join(",")}`);
    print(`outcome ${session.id} ${outcome.status} ${outcome.text ?? outcome.reason ?? ""}`);
  }),
);
for (const runtime of runtimes) await runtime.close();
await log.close();
print("final");
