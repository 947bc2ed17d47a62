/**
 * The long session of the fold benches (bench/fold.ts, bench/snapshots.ts): a real recorded user
 * message — tool turns, a history compaction, an answer — repeated with fresh IDs into one session
 * of about N events, as a long real session would grow (docs/performance.md#the-scenarios); and
 * the same script written with every decision the current code's, for a replay verification of
 * the whole session (bench/replay-verify.ts).
 */
import { z } from "zod";
import { createRuntime, defineTool, LevelEventLog, MemoryEventLog } from "../src/index.js";
import type { EventToAppend, RecordedEvent } from "../src/index.js";
import { scriptedProvider } from "../src/testing/index.js";
import { decideAll } from "../src/core/decide.js";
import { nextStep } from "../src/core/next-step.js";
import { readEvent } from "../src/core/read-events.js";
import { SessionFold } from "../src/core/session-fold.js";
import { ToolRegistry } from "../src/tools/tool-registry.js";
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

/**
 * Writes a session of ~`count` events that replays identical (what a replay verification of a
 * long session needs, which `generate`'s hand-shifted copies are not: replay recomputes their
 * history-compaction boundaries differently). It is what the runtime records for the same script
 * — `record`'s user messages, tool turns and answers — made the way replay checks it: every
 * decision is the current code's (`nextStep` and `decideAll` on a fold in place that keeps only
 * what later decisions read, as `verifyReplay` does), and only the inputs (the user message, the
 * provider's answers, the tools' outcomes) are written from the template session's events, with
 * the turn and call IDs the decisions gave. Not through a runtime: a live session keeps its full
 * state, which grows with the session, and recording a million events with `record` slowed as it
 * grew (2026-12-06, load 4–9: 350 000 events in 8 minutes, 1.3 GB resident, when it was stopped);
 * this keeps memory flat. Returns the number of events written.
 */
export async function generateReplayable(log: LevelEventLog, count: number): Promise<number> {
  const template = new MemoryEventLog();
  await record(template, 2);
  const events = await template.readStream("session-bench");
  // The events of a user message once the session compacts (the template's second).
  const perMessage = events.length - events.findLastIndex((event) => event.type === "session.user_message.added");
  const inputOf = <Type extends string>(type: Type, which: (event: RecordedEvent) => boolean = () => true) => {
    const found = events.find((event) => event.type === type && which(event));
    if (found === undefined) throw new Error(`the template session has no ${type}`);
    return found;
  };
  const started = inputOf("session.started");
  const toolResponse = inputOf("turn.provider.responded", (event) => (event.data as { toolCalls: unknown[] }).toolCalls.length > 0).data as Record<string, unknown>;
  const answer = inputOf("turn.provider.responded", (event) => (event.data as { toolCalls: unknown[] }).toolCalls.length === 0).data as Record<string, unknown>;
  const succeeded = inputOf("turn.tool.succeeded").data as Record<string, unknown>;
  const { schemaVersion } = started.meta;

  const stream = "session-bench";
  const registry = new ToolRegistry([noop]);
  const fold = new SessionFold({ mutable: true, retain: "live" });
  let position = 0;
  let batch: EventToAppend[] = [];
  // What the log will hold (its JSON, so `undefined` fields are gone), folded as replay reads it.
  const add = (event: EventToAppend) => {
    const stored = { type: event.type, data: JSON.parse(JSON.stringify(event.data)) as unknown };
    position += 1;
    batch.push(stored);
    const meta = { eventId: `generated-${position}`, stream, streamPosition: position, globalPosition: position, recordedAt: started.meta.recordedAt, schemaVersion, prevHash: "", hash: "" };
    fold.apply(readEvent({ ...stored, meta }));
  };
  const flush = async () => {
    if (batch.length > 0) await log.appendToStream(stream, batch);
    batch = [];
  };

  add(started);
  const messages = Math.max(1, Math.ceil((count - 1) / perMessage));
  let n = 0;
  for (let message = 0; message < messages; message += 1) {
    add({ type: "session.user_message.added", data: { content: `go ${message}` } });
    let responses = 0;
    for (;;) {
      const step = nextStep(fold, registry);
      if (step.kind === "none") break;
      const turnId = fold.turnContext?.turnId;
      if (step.kind === "decision") {
        const { state } = fold;
        if (state.policy === null || state.budgets === null) throw new Error("the generated session has no session.started");
        const turn = fold.turnContext;
        for (const event of decideAll(step.action, { state, ...(turn !== undefined ? { turn } : {}), registry, policy: state.policy, budgets: state.budgets }).events) add(event);
      } else if (step.kind === "effect" && step.action === "callProvider") {
        responses += 1;
        const toolCalls = Array.from({ length: callsPerTurn }, (_, index) => ({ index, name: "noop", argumentsText: JSON.stringify({ n: (n += 1) }) }));
        add({ type: "turn.provider.responded", data: responses <= turnsPerMessage ? { ...toolResponse, turnId, toolCalls } : { ...answer, turnId, content: `done ${message}` } });
      } else if (step.kind === "effect" && step.action === "runToolCalls") {
        const turn = fold.state.turns.at(-1);
        for (const callId of turn?.callIds ?? []) {
          if (fold.state.calls.get(callId)?.status === "running") add({ type: "turn.tool.succeeded", data: { ...succeeded, turnId, callId } });
        }
      } else {
        throw new Error(`the generated session owes ${step.kind} ${"action" in step ? step.action : ""}, which the script does not answer`);
      }
    }
    if (batch.length >= batchSize) await flush();
  }
  await flush();
  return position;
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

