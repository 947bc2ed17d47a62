import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { RecordedTurnlogEvent, SessionState } from "../src/index.js";
import { SessionFold } from "../src/core/session-fold.js";
import { CallMap } from "../src/projections/call-map.js";
import { SessionSnapshotReader, SessionSnapshotWriter } from "../src/projections/session-snapshot.js";
import { MemorySnapshotStore } from "../src/log/snapshot-store.js";
import { approvalAnswers, recordScriptedSession, scriptedMessages } from "../test/support/scripted-sessions.js";

describe("any recorded session, snapshotted", () => {
  it("a state saved and loaded equals the folded one at any position, with what the fold owed there; chunks are shared between snapshots", async () => {
    await fc.assert(
      fc.asyncProperty(
        scriptedMessages,
        approvalAnswers,
        fc.integer({ min: 1, max: 6 }),
        fc.array(fc.nat(), { minLength: 1, maxLength: 5 }),
        async (messages, answers, chunkSize, picks) => {
          const { log, events } = await recordScriptedSession(messages, answers);
          // The reference: the live fold, event by event; where it rests between turns, what it owes.
          const fold = new SessionFold();
          const states: { state: SessionState; pending: readonly string[] | null }[] = [];
          for (const event of events) {
            fold.apply(event);
            void fold.pending;
            const resting = fold.resting();
            states.push({ state: fold.state, pending: resting === undefined ? null : [...resting.pending] });
          }
          const store = new MemorySnapshotStore();
          const writer = new SessionSnapshotWriter(store, "session-p1", { chunkSize });
          const warm = new SessionSnapshotReader();
          const positions = [...new Set(picks.map((pick) => 1 + (pick % events.length)))].sort((a, b) => a - b);
          for (const position of positions) {
            const { state, pending } = states[position - 1] as (typeof states)[number];
            await writer.write(state, { hash: (events[position - 1] as RecordedTurnlogEvent).meta.hash, pending });
          }
          for (const position of positions) {
            const { state, pending } = states[position - 1] as (typeof states)[number];
            for (const reader of [warm, new SessionSnapshotReader()]) {
              const loaded = await reader.newest(log, store, "session-p1", position);
              expect(loaded?.position).toBe(position);
              expect(loaded?.state).toEqual(state);
              expect(loaded?.pending).toEqual(pending ?? []);
              const at = loaded?.state as SessionState;
              expect(Object.isFrozen(at) && Object.isFrozen(at.messages) && Object.isFrozen(at.turns) && Object.isFrozen(at.current)).toBe(true);
              expect(at.calls instanceof CallMap && !at.calls.thawed && [...at.calls.values()].every((call) => Object.isFrozen(call))).toBe(true);
            }
          }
          // A chunk holds the same elements in every snapshot that names it: written once, and a
          // state written again writes no chunk.
          const last = states[(positions.at(-1) as number) - 1] as (typeof states)[number];
          const elements = [last.state.messages, last.state.turns, last.state.hostCalls, last.state.toolApprovals].reduce((sum, list) => sum + list.length, 0);
          const entries = [last.state.calls, last.state.hostRules, last.state.realPaths, last.state.gitLinks].reduce((sum, map) => sum + map.size, 0);
          expect(store.chunkDigests().length).toBeLessThanOrEqual(Math.floor((elements + entries) / chunkSize) * positions.length);
          const before = store.chunkDigests().length;
          await writer.write(last.state, { hash: (events[last.state.position - 1] as RecordedTurnlogEvent).meta.hash, pending: last.pending });
          expect(store.chunkDigests().length).toBe(before);
        },
      ),
      { numRuns: 40 },
    );
  }, 120_000);
});
