import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { createRuntime, SnapshotCache } from "../src/index.js";
import type { EventLog, ReadStreamOptions, RecordedTurnlogEvent, SessionState } from "../src/index.js";
import { SessionFold } from "../src/core/session-fold.js";
import { CallMap } from "../src/projections/call-map.js";
import { applyEvent } from "../src/projections/projection.js";
import { sessionStateProjection } from "../src/projections/session-state.js";
import { MemoryEventLog, scriptedProvider } from "../src/testing/index.js";
import type { ScriptStep } from "../src/testing/index.js";
import { sequentialIds, steppingClock, workspace } from "../test/support/tools.js";

const toolCall = fc.oneof(
  fc.record({ name: fc.constant("read_file"), arguments: fc.constantFrom('{"path":"a.txt"}', '{"path":"nope.txt"}', "{bad") }),
  fc.record({ name: fc.constant("write_file"), arguments: fc.constantFrom('{"path":"c.txt","content":"x"}', '{"path":1}') }),
  fc.record({ name: fc.constantFrom("unknown_tool", "__proto__"), arguments: fc.constant("{}") }),
  fc.record({ id: fc.constantFrom("call_1", "call_1"), name: fc.constant("read_file"), arguments: fc.constant('{"path":"a.txt"}') }),
);

const step: fc.Arbitrary<ScriptStep> = fc.oneof(
  { weight: 5, arbitrary: fc.record({ content: fc.constantFrom("", "working"), toolCalls: fc.array(toolCall, { minLength: 1, maxLength: 4 }) }) },
  { weight: 1, arbitrary: fc.record({ error: fc.record({ kind: fc.constantFrom("transport" as const, "http-status" as const), retryable: fc.boolean() }) }) },
);

/** Records user messages of scripted steps (approving or denying held calls), with a small history budget so that it compacts. */
async function record(messages: ScriptStep[][], answers: boolean[]): Promise<RecordedTurnlogEvent[]> {
  const ws = workspace({ "a.txt": "alpha ".repeat(40) });
  const log = new MemoryEventLog({ clock: steppingClock(), ids: sequentialIds("event") });
  const steps = messages.flatMap((steps, index) => [...steps, { content: `done ${index}` }]);
  const runtime = await createRuntime({ log, provider: scriptedProvider(steps), tools: ws.tools, clock: steppingClock(), history: { maxTokens: 600 }, providerRetry: { baseDelayMs: 0 } });
  const session = await runtime.openSession("p1");
  for (const [index] of messages.entries()) {
    let outcome = await session.send(`message ${index}`);
    for (let round = 0; outcome.status === "awaiting-approval" && round < 20; round += 1) {
      for (const [position, call] of outcome.pendingApprovals.entries()) {
        if (answers[(round + position) % answers.length]) await session.approve(call.callId, { by: "p" });
        else await session.deny(call.callId, { by: "p" });
      }
      outcome = await session.resume();
    }
    // A failed or stopped message leaves the provider's later steps for the next message: the
    // script may then run out, which ends the session there.
    if (outcome.status !== "completed") break;
  }
  return [...(await runtime.events("p1"))];
}

/** Whether every plain object and array in `value` is frozen (a state's Maps are not: immer leaves them so too). */
function deeplyFrozen(value: unknown): boolean {
  if (typeof value !== "object" || value === null || value instanceof Map || value instanceof Set) return true;
  if (!Object.isFrozen(value)) return false;
  return Object.values(value).every(deeplyFrozen);
}

function logOf(events: RecordedTurnlogEvent[]): EventLog {
  return {
    streamVersion: async () => events.length,
    readStream: async (_stream: string, options: ReadStreamOptions = {}) => {
      const from = options.from ?? 1;
      return events.slice(from - 1, Math.min(options.to ?? events.length, from + (options.maxCount ?? Infinity) - 1));
    },
  } as unknown as EventLog;
}

describe("any recorded session, folded in place", () => {
  it("the live fold (draft-free for a call's and a turn's common events, one by one and in runs) and a fold in place equal an immer draft per event after every event; stateAt cold, from a snapshot and the fold agree at any position", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.array(step, { maxLength: 4 }), { minLength: 1, maxLength: 3 }),
        fc.array(fc.boolean(), { minLength: 4, maxLength: 4 }),
        fc.integer({ min: 1, max: 5 }),
        fc.array(fc.nat(), { minLength: 1, maxLength: 4 }),
        fc.array(fc.integer({ min: 1, max: 40 }), { minLength: 1, maxLength: 8 }),
        async (messages, answers, every, picks, cuts) => {
          const events = await record(messages, answers);
          const reference: SessionState[] = [];
          // The reference is one immer draft per event (`applyEvent`); the live fold takes its
          // draft-free path for a call's starts, ends, plans, gates and packets and for the turn's
          // own start, request, answer, normalized calls, diagnostics and end (evolveWithoutDraft).
          const live = new SessionFold();
          const mutable = new SessionFold({ mutable: true });
          let state = sessionStateProjection.initialState();
          for (const event of events) {
            state = applyEvent(sessionStateProjection, state, event);
            reference.push(state);
            live.apply(event);
            mutable.apply(event);
            expect(live.state).toEqual(state);
            expect(mutable.state).toEqual(state);
            expect(deeplyFrozen(live.state) && [...live.state.calls.values()].every(deeplyFrozen)).toBe(true);
          }
          // As the session store stages them: runs of a few events in one applyAll (draft-free
          // when each can be, one draft otherwise), the states taken between runs left unchanged.
          const batched = new SessionFold();
          const taken: { state: SessionState; copy: string }[] = [];
          const text = (value: unknown) => JSON.stringify(value, (_key, member: unknown) => (member instanceof Map || member instanceof Set ? [...member] : member));
          for (let start = 0, cut = 0; start < events.length; cut += 1) {
            const end = Math.min(events.length, start + (cuts[cut % cuts.length] as number));
            batched.applyAll(events.slice(start, end));
            expect(batched.state).toEqual(reference[end - 1]);
            taken.push({ state: batched.state, copy: text(batched.state) });
            start = end;
          }
          for (const { state: earlier, copy } of taken) expect(text(earlier)).toBe(copy);
          const log = logOf(events);
          const warm = new SnapshotCache({ every, pageSize: every + 2, maxSnapshots: 4 });
          for (const pick of picks) {
            const position = 1 + (pick % events.length);
            const cold = await new SnapshotCache({ every, pageSize: every + 1 }).stateAt(log, "p1", position);
            const fromSnapshot = await warm.stateAt(log, "p1", position);
            expect(cold).toEqual(reference[position - 1]);
            expect(fromSnapshot).toEqual(reference[position - 1]);
            for (const at of [cold, fromSnapshot]) {
              expect(Object.isFrozen(at) && Object.isFrozen(at.messages) && Object.isFrozen(at.turns) && Object.isFrozen(at.current)).toBe(true);
              expect(at.calls instanceof CallMap && !at.calls.thawed && [...at.calls.values()].every((call) => Object.isFrozen(call))).toBe(true);
            }
          }
        },
      ),
      { numRuns: 40 },
    );
  }, 120_000);
});
