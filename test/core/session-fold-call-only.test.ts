import { describe, expect, it } from "vitest";
import { createRuntime } from "../../src/index.js";
import type { RecordedTurnlogEvent } from "../../src/log/event-log.js";
import { SessionFold } from "../../src/core/session-fold.js";
import { applyEvent } from "../../src/projections/projection.js";
import { isCallOnlyEvent, sessionStateProjection } from "../../src/projections/session-state.js";
import { MemoryEventLog, scriptedProvider } from "../../src/testing/index.js";
import { sequentialIds, steppingClock, workspace } from "../support/tools.js";

/**
 * A real session with every kind of tool-call end: reads that succeed, one that fails, a write
 * held for a person (so a pause is open when its call starts), and a final answer.
 */
async function recordedSession(): Promise<RecordedTurnlogEvent[]> {
  const ws = workspace();
  const provider = scriptedProvider([
    { toolCalls: [{ name: "read_file", arguments: '{"path":"a.txt"}' }, { name: "read_file", arguments: '{"path":"missing.txt"}' }] },
    { toolCalls: [{ name: "write_file", arguments: '{"path":"c.txt","content":"x"}' }, { name: "read_file", arguments: '{"path":"b.txt"}' }] },
    { content: "done" },
  ]);
  const log = new MemoryEventLog({ clock: steppingClock(), ids: sequentialIds("event") });
  const runtime = await createRuntime({ log, provider, tools: ws.tools, clock: steppingClock() });
  const session = await runtime.openSession("p1");
  const outcome = await session.send("go");
  if (outcome.status !== "awaiting-approval") throw new Error(`expected a pause, got ${outcome.status}`);
  for (const call of outcome.pendingApprovals) await session.approve(call.callId, { by: "p" });
  expect((await session.resume()).status).toBe("completed");
  return [...(await runtime.events("p1"))];
}

describe("events that only change calls (starts, ends, plans, allows, packets) fold without an immer draft", () => {
  it("give, after every event, the state the projection's own evolve gives, frozen as it is", async () => {
    const events = await recordedSession();
    const callOnly = events.filter((event) => isCallOnlyEvent(event.type));
    expect(callOnly.map((event) => event.type)).toEqual(expect.arrayContaining(["turn.tool.started", "turn.tool.succeeded"]));
    const fold = new SessionFold();
    let reference = sessionStateProjection.initialState();
    for (const event of events) {
      fold.apply(event);
      void fold.pending;
      reference = applyEvent(sessionStateProjection, reference, event);
      expect(fold.state).toEqual(reference);
      expect(Object.isFrozen(fold.state)).toBe(true);
      expect(Object.isFrozen(fold.state.current)).toBe(true);
      for (const call of fold.state.calls.values()) expect(Object.isFrozen(call)).toBe(true);
    }
    // The write started while a pause was open: its start ended the pause, as evolve says.
    expect(fold.state.current.pausedSince).toBeNull();
    expect(fold.state.current.pausedMs).toBe(reference.current.pausedMs);
  });

  it("leave every state taken before them unchanged", async () => {
    const events = await recordedSession();
    const fold = new SessionFold();
    // A deep copy as text (a Map's entries as pairs), taken when the state was.
    const text = (state: unknown) => JSON.stringify(state, (_key, value: unknown) => (value instanceof Map || value instanceof Set ? [...value] : value));
    const taken: { state: unknown; copy: string }[] = [];
    for (const event of events) {
      fold.apply(event);
      taken.push({ state: fold.state, copy: text(fold.state) });
    }
    for (const { state, copy } of taken) expect(text(state)).toBe(copy);
  });
});
