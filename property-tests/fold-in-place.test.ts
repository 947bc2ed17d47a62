import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { SnapshotCache } from "../src/index.js";
import type { EventLog, ReadStreamOptions, RecordedTurnlogEvent, SessionState } from "../src/index.js";
import { SessionFold } from "../src/core/session-fold.js";
import { CallMap } from "../src/projections/call-map.js";
import { applyEvent } from "../src/projections/projection.js";
import { sessionStateProjection } from "../src/projections/session-state.js";
import { approvalAnswers, recordScriptedSession, scriptedMessages } from "../test/support/scripted-sessions.js";

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
        scriptedMessages,
        approvalAnswers,
        fc.integer({ min: 1, max: 5 }),
        fc.array(fc.nat(), { minLength: 1, maxLength: 4 }),
        fc.array(fc.integer({ min: 1, max: 40 }), { minLength: 1, maxLength: 8 }),
        async (messages, answers, every, picks, cuts) => {
          const { events } = await recordScriptedSession(messages, answers);
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
