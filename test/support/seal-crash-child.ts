/**
 * A sealing runtime on a real LevelDB log (argv[2], durability `sync`), with its seal key, witness
 * and the key's record in argv[3], that stops at one point of sealing for the parent to SIGKILL it
 * there (seal-forgeries.test.ts). argv[4] is the phase:
 * - `held`: session s1 asks to write a.txt and is held for approval; the runtime closes; prints `held`.
 * - `after-answer`: approves s1's held call and stops right after the answer's append, before its seal.
 * - `after-announcement`: stops right after the seal that announces the answer, before the answer.
 * - `after-turn-end`: s2 answers "hi" and stops right after the turn end's append, before its seal.
 * - `after-birth-announcement`: stops right after the seal that announces s3's first events, before them.
 * Each stop prints `stopped <stream> <position>` (the position the append reached) and waits to be killed.
 */
import { createRuntime, LevelEventLog, loadOrCreateSealKey, SealWitness, type EventLog } from "../../src/index.js";
import { SealedLogRecord } from "../../src/log/seal/sealed-log-record.js";
import { pendingApprovals } from "../../src/reader/index.js";
import { scriptedProvider } from "../../src/testing/index.js";
import { withAppend } from "./with-append.js";
import { workspace } from "./tools.js";

const [directory, keyDirectory, phase] = process.argv.slice(2);
if (directory === undefined || keyDirectory === undefined || phase === undefined) throw new TypeError("usage: seal-crash-child.ts <log directory> <key directory> <phase>");
const print = (line: string) => process.stdout.write(`${line}\n`);

/** Never resolves, and keeps the process alive until the parent's SIGKILL: the crash lands here. */
function stop(stream: string, position: number): Promise<never> {
  print(`stopped ${stream} ${position}`);
  // Only keeps the event loop alive; the parent kills on the line above, never on time.
  setInterval(() => undefined, 2 ** 30);
  return new Promise<never>(() => undefined);
}

const log = await LevelEventLog.open(directory, { durability: "sync" });
const watched: EventLog = withAppend(log, async (stream, events, options) => {
  const isSeal = stream.startsWith("turnlog.seals/");
  const announces = isSeal && events.some((event) => Array.isArray((event.data as { next?: unknown }).next));
  if (phase === "after-announcement" && announces && stream === "turnlog.seals/session-s1") {
    const result = await log.appendToStream(stream, events, options);
    // An announcement is appended durable: false (it resolves before its batch is written, and the
    // events' durable append makes it durable): the crash this phase stands for comes once it is
    // written, so wait for that (streamVersion waits for the batch in flight, docs/log.md).
    await log.streamVersion(stream);
    return stop(stream, result.nextExpectedStreamVersion);
  }
  if (phase === "after-birth-announcement" && announces && stream === "turnlog.seals/session-s3") {
    const result = await log.appendToStream(stream, events, options);
    // An announcement is appended durable: false (it resolves before its batch is written, and the
    // events' durable append makes it durable): the crash this phase stands for comes once it is
    // written, so wait for that (streamVersion waits for the batch in flight, docs/log.md).
    await log.streamVersion(stream);
    return stop(stream, result.nextExpectedStreamVersion);
  }
  const result = await log.appendToStream(stream, events, options);
  if (phase === "after-answer" && events.some((event) => event.type === "turn.approval.granted")) return stop(stream, result.nextExpectedStreamVersion);
  if (phase === "after-turn-end" && stream === "session-s2" && events.some((event) => event.type === "turn.completed")) return stop(stream, result.nextExpectedStreamVersion);
  return result;
});

const key = await loadOrCreateSealKey(keyDirectory);
const runtime = await createRuntime({
  log: watched,
  // Each phase's process asks the model only what it needs: a scripted model fails on anything else.
  provider: scriptedProvider(
    phase === "held"
      ? [{ toolCalls: [{ id: "call_write", name: "write_file", arguments: JSON.stringify({ path: "a.txt", content: "changed" }) }] }]
      : phase === "after-turn-end"
        ? [{ content: "hello" }]
        : [],
  ),
  tools: workspace().tools,
  seals: { key, witness: SealWitness.forLogDirectory(directory, { directory: keyDirectory }), record: SealedLogRecord.forLogLocation({ dir: directory }, { directory: keyDirectory }) },
});

if (phase === "held") {
  const session = await runtime.openSession("s1");
  const outcome = await session.send("change a.txt");
  if (outcome.status !== "awaiting-approval") throw new Error(`s1 ended ${outcome.status}, not held`);
  await runtime.close();
  await log.close();
  print("held");
} else if (phase === "after-answer" || phase === "after-announcement") {
  const session = await runtime.openSession("s1");
  const [held] = pendingApprovals(session.state());
  if (held === undefined) throw new Error("s1 holds no call");
  await session.approve(held.callId, { by: "alice" });
  throw new Error("the answer was appended and sealed: the stop never came");
} else if (phase === "after-turn-end") {
  const session = await runtime.openSession("s2");
  await session.send("hi");
  throw new Error("the turn ended and was sealed: the stop never came");
} else if (phase === "after-birth-announcement") {
  await runtime.openSession("s3");
  throw new Error("s3 began and was sealed: the stop never came");
} else {
  throw new TypeError(`unknown phase ${phase}`);
}
