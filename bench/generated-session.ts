/**
 * The long session of the fold benches (bench/fold.ts, bench/snapshots.ts): a real recorded user
 * message — tool turns, a history compaction, an answer — repeated with fresh IDs into one session
 * of about N events, as a long real session would grow (docs/performance.md#the-scenarios).
 */
import { z } from "zod";
import { createRuntime, defineTool, LevelEventLog, MemoryEventLog } from "../src/index.js";
import type { EventToAppend, RecordedEvent } from "../src/index.js";
import { scriptedProvider } from "../src/testing/index.js";
import type { ScriptStep } from "../src/testing/index.js";

export const callsPerTurn = 4;
const batchSize = 4096;

export const noop = defineTool({ name: "noop", description: "does nothing", risk: "read-only-local", input: z.object({ n: z.number() }), run: () => "ok" });
const unlimited = { maxIterations: 1e9, maxToolCalls: 1e9, wallClockMs: 1e12 };
/** Tool turns per user message: a session is many user messages, each a few tool turns long. */
export const turnsPerMessage = 3;
/** The history budget: small, so that the session compacts as a real long session would. */
const historyMaxTokens = 600;

function script(messages: number): ScriptStep[] {
  const steps: ScriptStep[] = [];
  let n = 0;
  for (let message = 0; message < messages; message += 1) {
    for (let turn = 0; turn < turnsPerMessage; turn += 1) {
      steps.push({ toolCalls: Array.from({ length: callsPerTurn }, () => ({ name: "noop", arguments: JSON.stringify({ n: (n += 1) }) })) });
    }
    steps.push({ content: `done ${message}` });
  }
  return steps;
}

/** A real scripted session of `messages` user messages, recorded into `log` as session "bench". */
export async function record(log: MemoryEventLog | LevelEventLog, messages: number): Promise<void> {
  const runtime = await createRuntime({ log, provider: scriptedProvider(script(messages)), tools: [noop], budgets: unlimited, history: { maxTokens: historyMaxTokens } });
  const session = await runtime.openSession("bench");
  for (let message = 0; message < messages; message += 1) {
    const outcome = await session.send(`go ${message}`);
    if (outcome.status !== "completed") throw new Error(`template session ended ${outcome.status}`);
  }
}

const asAppend = (event: RecordedEvent): EventToAppend => ({ type: event.type, data: event.data });

/**
 * Writes ~`count` events: the start of a real recorded session, then the events of one of its
 * user messages (its tool turns, the history compaction it caused, its answer) repeated with
 * fresh turn IDs, sequence numbers, call IDs and compaction boundaries — a valid machine
 * sequence that compacts as it goes, like a real long session. Returns the number written.
 */
export async function generate(log: LevelEventLog, count: number): Promise<number> {
  const template = new MemoryEventLog();
  await record(template, 4);
  const events = await template.readStream("session-bench");
  const messageStarts = events.flatMap((event, index) => (event.type === "session.user_message.added" ? [index] : []));
  const header = events.slice(0, messageStarts[0]).map(asAppend);
  const block = events.slice(messageStarts.at(-1));
  if (!block.some((event) => event.type === "session.history.compacted")) throw new Error("the template's last user message did not compact; lower historyMaxTokens");
  const blockStart = block[0]!.meta.streamPosition;
  const turnIds = block.flatMap((event) => (event.type === "turn.started" ? [(event.data as { turnId: string }).turnId] : []));
  const turnSeqs = block.flatMap((event) => (event.type === "turn.started" ? [(event.data as { turnSeq: number }).turnSeq] : []));
  const callIds = [...new Set(block.flatMap((event) => (event.type === "turn.tool_calls.normalized" ? (event.data as { calls: { id: string }[] }).calls.map((call) => call.id) : [])))];
  const blockText = JSON.stringify(block.map(asAppend));
  const blocksNeeded = Math.max(1, Math.floor((count - header.length) / block.length));

  const stream = "session-bench";
  let written = 0;
  let batch: EventToAppend[] = [...header];
  const flush = async () => {
    await log.appendToStream(stream, batch);
    written += batch.length;
    batch = [];
  };
  for (let copy = 0; copy < blocksNeeded; copy += 1) {
    const firstSeq = copy * turnIds.length + 1;
    let text = blockText;
    turnIds.forEach((turnId, index) => {
      text = text.replaceAll(`"${turnId}"`, `"turn-${firstSeq + index}"`).replaceAll(`"turnSeq":${turnSeqs[index]},`, `"turnSeq":${firstSeq + index},`);
    });
    callIds.forEach((callId, index) => (text = text.replaceAll(callId, `call_${copy}_${index}`)));
    const copied = JSON.parse(text) as EventToAppend[];
    // A compaction's boundary is a stream position: move it with the block (the first copy's
    // boundary, behind the header, stays at position 1, as the schema wants a position ≥ 1).
    const shift = written + batch.length + 1 - blockStart;
    for (const event of copied) {
      if (event.type === "session.history.compacted") {
        const data = event.data as { beforePosition: number };
        data.beforePosition = Math.max(1, data.beforePosition + shift);
      }
    }
    batch.push(...copied);
    if (batch.length >= batchSize) await flush();
  }
  await flush();
  return written;
}

