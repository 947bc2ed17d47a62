/**
 * Child process of the "what was handed out is true" tests (test/reliability/handed-out.test.ts,
 * issue 31): opens a `sync` LevelEventLog in argv[2] and runs one session (workspace argv[3]) of
 * argv[4] messages, each answered by a read-only tool call round and a final answer — so most of
 * its appends are `durable: false`, written behind. A killed predecessor's session is resumed
 * and its remaining messages sent. It reports on stdout, one line each:
 *
 * - `ready <version>` once the session is open (recovered) with `version` events;
 * - `seen <stream> <streamPosition> <type> <hash>` for each event a log subscriber is handed;
 * - `followed <stream> <streamPosition> <type> <hash>` for each event `session.events()` yields;
 * - `failed <json>` when an operation rejects: `{ code, message }`, and then `refused <json>`
 *   for one more `send` on the same session;
 * - `final <status>` once the session has run (or failed) and the runtime and log are closed.
 *
 * The parent SIGKILLs it after a seeded `seen` line, or runs it under the disk fault shim
 * (test/support/disk-fault-shim.c): a full disk, or a disk so slow that a kill lands mid-write.
 * stdout is a pipe, which Node writes synchronously on Linux, so every line printed before a kill
 * reaches the parent.
 */
import { z } from "zod";
import { createRuntime, defineTool, LevelEventLog, sessionStream } from "../../src/index.js";
import type { Provider, RecordedEvent } from "../../src/index.js";
import { scriptedProvider } from "../../src/testing/index.js";
import type { ScriptStep } from "../../src/testing/index.js";

const [directory, workspace, messagesText = "8"] = process.argv.slice(2);
if (directory === undefined || workspace === undefined) throw new TypeError("usage: handed-out-child.ts <log directory> <workspace> [messages]");
const messages = Array.from({ length: Number(messagesText) }, (_, index) => `read note ${index}`);
/** The parent reads the same session (test/reliability/handed-out.test.ts). */
const handedOutSessionId = "handed-out";
const stream = sessionStream(handedOutSessionId);
const print = (line: string) => process.stdout.write(`${line}\n`);
const describeEvent = (event: RecordedEvent) => `${event.meta.stream} ${event.meta.streamPosition} ${event.type} ${event.meta.hash}`;
const describeError = (error: unknown) => JSON.stringify({ code: (error as { code?: unknown }).code ?? null, message: String((error as { message?: unknown }).message ?? error) });

const readNote = (id: string) => ({ name: "read_note", arguments: JSON.stringify({ id }) });
/** Per message: one round of two read-only calls, then the answer. */
const script: ScriptStep[] = messages.flatMap((_, index) => [
  { content: `Reading ${index}.`, toolCalls: [readNote(`${index}a`), readNote(`${index}b`)] },
  { content: `Note ${index} read.` },
]);

const log = await LevelEventLog.open(directory, { durability: "sync" });
log.subscribe((event) => print(`seen ${describeEvent(event)}`));

/** The scripted model, continued where the log says the session is (a resumed child does not start over). */
const provider: Provider = {
  id: "handed-out-scripted",
  format: "openai-chat",
  async complete(request, options) {
    const events = await log.readStream(stream, { maxCount: Number.MAX_SAFE_INTEGER });
    const answered = events.filter((event) => event.type === "turn.provider.responded").length;
    return scriptedProvider(script.slice(answered)).complete(request, options);
  },
};

const runtime = await createRuntime({
  log,
  provider,
  tools: [
    defineTool({
      name: "read_note",
      description: "Read a note",
      risk: "read-only-local",
      idempotent: true,
      input: z.object({ id: z.string() }),
      // Some bytes per result, so that a batch is several writes' worth.
      run: async ({ id }) => `note ${id}: ${"text ".repeat(80)}`,
    }),
  ],
  policy: { approvalMode: "full-auto", workspace: { root: workspace, trusted: true } },
});
const session = await runtime.openSession(handedOutSessionId);
print(`ready ${session.state().position}`);
const following = new AbortController();
const followed = (async () => {
  for await (const event of session.events({ after: session.state().position, signal: following.signal })) print(`followed ${describeEvent(event)}`);
})().catch((error: unknown) => print(`follow-ended ${describeError(error)}`));

let status = "idle";
try {
  let outcome = session.outcome();
  if (outcome.status === "needs-resume") outcome = await session.resume();
  for (;;) {
    const sent = session.state().messages.filter((message) => message.role === "user").length;
    if ((outcome.status !== "idle" && outcome.status !== "completed") || sent >= messages.length) break;
    outcome = await session.send(messages[sent]!);
  }
  status = outcome.status;
} catch (error) {
  status = "failed";
  print(`failed ${describeError(error)}`);
  try {
    await session.send("one more");
    print(`refused ${JSON.stringify({ code: null })}`);
  } catch (refusal) {
    print(`refused ${describeError(refusal)}`);
  }
}
following.abort();
await followed;
await runtime.close().catch((error: unknown) => print(`runtime-close-failed ${describeError(error)}`));
await log.close().catch((error: unknown) => print(`log-close-failed ${describeError(error)}`));
print(`final ${status}`);
