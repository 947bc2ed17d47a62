/**
 * Child process for the crash-recovery test: opens a `sync` LevelEventLog in argv[2], runs the
 * session of `crash-session-script.ts` (workspace argv[3], side effects to argv[4]) — starting it,
 * or resuming whatever a killed predecessor left — and reports on stdout, one line each:
 *
 * - `ready <version>` once the session is open (recovered) with `version` events;
 * - `ack <streamPosition> <type> <hash>` for each event once it is durable: its append resolved and
 *   was synced (an append with `durable: false` counts only once a later synced append resolved);
 * - `provider <answer>` when the provider is asked for its n-th answer (0-based);
 * - `begin <callId> <tool>` when a tool handler starts, `effect <callId>` once `charge` wrote;
 * - `final <status> <text or reason>` once the turn loop has returned and the log is closed.
 *
 * The parent SIGKILLs it at any of those points; stdout is a pipe, which Node writes
 * synchronously on Linux, so every line printed before the kill reaches the parent.
 *
 * With argv[5] `hold=read_order` the first `read_order` never gets past its start, and with
 * `hold=charge` the first `charge` never gets past its side effect, so a kill after the `begin` /
 * `effect` line is sure to find that call in doubt.
 */
import { setTimeout as sleep } from "node:timers/promises";
import { createRuntime, LevelEventLog, sessionStream } from "../../src/index.js";
import type { Provider } from "../../src/index.js";
import { scriptedProvider } from "../../src/testing/index.js";
import { acknowledgingLog } from "./acknowledging-log.js";
import { crashPolicy, crashScript, crashSessionId, crashTools, providerDelayMs } from "./crash-session-script.js";

const [directory, workspaceRoot, effectsFile, holdOption] = process.argv.slice(2);
if (directory === undefined || workspaceRoot === undefined || effectsFile === undefined) {
  throw new TypeError("usage: crash-session-child.ts <log directory> <workspace> <effects file>");
}
const print = (line: string) => process.stdout.write(`${line}\n`);
let toHold = holdOption?.startsWith("hold=") ? holdOption.slice("hold=".length) : undefined;
/** Holds the first call of the tool named by `hold=` for good (a timer keeps the process alive). */
const holdIf = async (tool: string) => {
  if (tool !== toHold) return;
  toHold = undefined;
  await sleep(600_000);
};
const stream = sessionStream(crashSessionId);
const log = await LevelEventLog.open(directory, { durability: "sync" });

/** The log as the runtime sees it, reporting what it acknowledged. */
const reportingLog = acknowledgingLog(log, (event) => print(`ack ${event.meta.streamPosition} ${event.type} ${event.meta.hash}`));

/**
 * A slow scripted model that continues the script where the log says it is: its next answer is the
 * one after the responses the session already holds, so a resumed child does not start over.
 */
const provider: Provider = {
  id: "crash-scripted",
  format: "openai-chat",
  async complete(request, options) {
    const events = await log.readStream(stream, { maxCount: Number.MAX_SAFE_INTEGER });
    const answered = events.filter((event) => event.type === "turn.provider.responded").length;
    print(`provider ${answered}`);
    await sleep(providerDelayMs(answered), undefined, { signal: options.signal });
    return scriptedProvider(crashScript.slice(answered)).complete(request, options);
  },
};

const runtime = await createRuntime({
  log: reportingLog,
  provider,
  tools: crashTools(effectsFile, {
    onBegin: (callId, tool) => {
      print(`begin ${callId} ${tool}`);
      return tool === "read_order" ? holdIf(tool) : undefined;
    },
    onEffect: (callId) => {
      print(`effect ${callId}`);
      return holdIf("charge");
    },
  }),
  policy: crashPolicy(workspaceRoot),
});
const session = await runtime.openSession(crashSessionId);
print(`ready ${session.state().position}`);
const started = session.state().messages.some((message) => message.role === "user");
const outcome = started ? await session.resume() : await session.send("go");
await runtime.close();
await log.close();
print(`final ${outcome.status} ${outcome.text ?? outcome.reason ?? ""}`);
