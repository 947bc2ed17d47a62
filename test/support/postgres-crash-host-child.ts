/**
 * A host process of the PostgreSQL soak (soak/families/postgres.ts): opens the PostgreSQL log at
 * argv[2], schema argv[3], and drives session argv[4] — the crash test's session (tools, policy and
 * provider script of `crash-session-script.ts`; workspace argv[5], side effects to argv[6]) —
 * starting it, or resuming whatever a killed predecessor left, under the session lease (the
 * default on PostgreSQL). It reports on stdout, one line each, as `crash-session-child.ts` does
 * for LevelDB:
 *
 * - `ready <version>` once the session is open (recovered) with `version` events;
 * - `appending <n>` right before the runtime's n-th append of this process reaches the log;
 * - `ack <streamPosition> <type> <hash>` for each event once it is durable: its append resolved
 *   with a synchronous commit (an append with `durable: false` counts only once a later durable
 *   append resolved with no failed append between them, since a server crash may lose an
 *   asynchronous commit);
 * - `provider <answer>` when the provider is asked for its n-th answer (0-based);
 * - `begin <callId> <tool>` when a tool handler starts, `effect <callId>` once `charge` wrote;
 * - `retry <what>: <error>` when the log was unreachable (a server restart) or the session's lease
 *   was still held (a killed predecessor's connection the server had not dropped yet): it waits a
 *   little and resumes the session;
 * - `final <status> <text or reason>` once the turn loop has returned and the log is closed.
 *
 * Any other error ends it with exit code 1 and the error on stderr.
 *
 * With argv[7] `hold=read_order` the first `read_order` never gets past its start, and with
 * `hold=charge` the first `charge` never gets past its side effect, so a kill after the `begin` /
 * `effect` line is sure to find that call in doubt.
 */
import { setTimeout as sleep } from "node:timers/promises";
import { createRuntime, PostgresEventLog, SessionBusyError, sessionStream } from "../../src/index.js";
import type { EventLog, Provider, SendOutcome, Session, SessionLeases } from "../../src/index.js";
import { acknowledgingLog } from "./acknowledging-log.js";
import { scriptedProvider } from "../../src/testing/index.js";
import { crashPolicy, crashScript, crashTools, providerDelayMs } from "./crash-session-script.js";
import { postgresOutageOf } from "./postgres-outage.js";

const [url, schema, sessionId, workspaceRoot, effectsFile, holdOption] = process.argv.slice(2);
if (url === undefined || schema === undefined || sessionId === undefined || workspaceRoot === undefined || effectsFile === undefined) {
  throw new TypeError("usage: postgres-crash-host-child.ts <url> <schema> <session> <workspace> <effects file> [hold=charge|read_order]");
}
const print = (line: string) => process.stdout.write(`${line}\n`);
let toHold = holdOption?.startsWith("hold=") ? holdOption.slice("hold=".length) : undefined;
/** Holds the first call of the tool named by `hold=` for good (a timer keeps the process alive). */
const holdIf = async (tool: string) => {
  if (tool !== toHold) return;
  toHold = undefined;
  await sleep(600_000);
};
const stream = sessionStream(sessionId);

/** How long a host keeps retrying an unreachable server or a held lease before it gives up. */
const retryForMs = 60_000;

/** Retries `work` while the server is unreachable (or the lease held), reporting each retry. */
async function retrying<T>(what: string, work: () => Promise<T>): Promise<T> {
  const started = Date.now();
  for (let attempt = 0; ; attempt += 1) {
    try {
      return await work();
    } catch (error) {
      const reason = SessionBusyError.isInstance(error) ? "lease held" : postgresOutageOf(error);
      if (reason === undefined || Date.now() - started > retryForMs) throw error;
      print(`retry ${what}: ${reason}`);
      await sleep(Math.min(20 * 2 ** attempt, 400));
    }
  }
}

const log = await retrying("open", () => PostgresEventLog.open(url, { schema, poolSize: 3, pollIntervalMs: 200 }));

let appends = 0;
/**
 * The log as the runtime sees it (leases included), reporting what it appends and what it
 * acknowledged (test/support/acknowledging-log.ts: an asynchronous commit only once a later durable
 * append resolved with no failed append between them).
 */
const reportingLog = acknowledgingLog(log, (event) => print(`ack ${event.meta.streamPosition} ${event.type} ${event.meta.hash}`), {
  onAppend: () => {
    appends += 1;
    print(`appending ${appends}`);
  },
}) as EventLog & SessionLeases;

/**
 * A slow scripted model that continues the script where the log says it is: its next answer is the
 * one after the responses the session already holds, so a resumed host does not start over. Its
 * own look at the log is retried through a server restart (it is the script's bookkeeping, not the
 * model's answer).
 */
const provider: Provider = {
  id: "crash-scripted",
  format: "openai-chat",
  async complete(request, options) {
    const events = await retrying("provider read", () => log.readStream(stream, { maxCount: Number.MAX_SAFE_INTEGER }));
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

// Each try opens the session again: an append that failed with the connection may still have
// committed, and only the log knows.
const outcome: SendOutcome = await retrying("session", async () => {
  const session: Session = await runtime.openSession(sessionId);
  print(`ready ${session.state().position}`);
  const started = session.state().messages.some((message) => message.role === "user");
  return started ? session.resume() : session.send("go");
});
await runtime.close();
await log.close();
print(`final ${outcome.status} ${outcome.text ?? outcome.reason ?? ""}`);
