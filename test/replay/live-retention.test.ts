import { describe, expect, it } from "vitest";
import { createRuntime } from "../../src/index.js";
import { SessionFold } from "../../src/core/session-fold.js";
import { MemoryEventLog, scriptedProvider } from "../../src/testing/index.js";
import type { ScriptStep } from "../../src/testing/index.js";
import { workspace } from "../support/tools.js";

/**
 * A long session — many user messages, each answered after a few tool turns — whose provider
 * reuses the same tool-call ID every turn (as some OpenAI-compatible servers do) and whose
 * history outgrows a small token budget, so it compacts several times.
 */
async function longSession(messages: number, turnsPerMessage = 3) {
  const ws = workspace({ "a.txt": "alpha ".repeat(80) });
  const steps: ScriptStep[] = [];
  for (let message = 0; message < messages; message += 1) {
    for (let turn = 0; turn < turnsPerMessage; turn += 1) {
      steps.push({ content: `step ${turn}`, toolCalls: [{ id: "call_0", name: "read_file", arguments: '{"path":"a.txt"}' }] });
    }
    steps.push({ content: `done ${message}` });
  }
  const runtime = await createRuntime({ log: new MemoryEventLog(), provider: scriptedProvider(steps), tools: ws.tools, history: { maxTokens: 1500 } });
  const session = await runtime.openSession("long");
  for (let message = 0; message < messages; message += 1) {
    const outcome = await session.send(`read a.txt, round ${message}`);
    expect(outcome.status).toBe("completed");
  }
  return { runtime, events: await runtime.events("long") };
}

describe('a replay fold that keeps only what decisions read (retain: "live")', () => {
  it("replays a long compacting session with reused provider IDs identical", async () => {
    const { runtime, events } = await longSession(12);
    expect(events.filter((event) => event.type === "session.history.compacted").length).toBeGreaterThan(1);
    const report = await runtime.replay("long");
    expect(report.divergences).toEqual([]);
    expect(report.identical).toBe(true);
  });

  it("drops finished turns' calls, compacted messages and their turns, but remembers every call ID", async () => {
    const { events } = await longSession(12);
    const full = new SessionFold({ mutable: true });
    const live = new SessionFold({ mutable: true, retain: "live" });
    for (const event of events) {
      full.apply(event);
      live.apply(event);
    }
    expect(live.state.lastOutcome).toEqual(full.state.lastOutcome);
    expect(live.state.totals).toEqual(full.state.totals);
    // Only the turns whose messages are still in the history window are kept.
    const keptTurns = new Set(live.state.messages.flatMap((message) => (message.role === "agent" && message.metadata !== undefined ? [message.metadata.turnId] : [])));
    expect(live.state.turns.length).toBeLessThan(full.state.turns.length / 2);
    for (const turnId of keptTurns) expect(live.state.turns.map((turn) => turn.turnId)).toContain(turnId);
    expect(live.state.calls.size).toBe(0);
    expect([...(live.state.retiredCallIds ?? [])].sort()).toEqual([...full.state.calls.keys()].sort());
    // Only the messages after the last compaction's boundary are kept.
    const boundary = full.state.historySummary?.beforePosition ?? 0;
    expect(boundary).toBeGreaterThan(1);
    expect(live.state.messages).toEqual(full.state.messages.filter((message) => message.position >= boundary));
    expect(live.state.messages.length).toBeLessThan(full.state.messages.length / 2);
  });

  it("is refused on an immutable fold, which hands out states that must not change", () => {
    expect(() => new SessionFold({ retain: "live" })).toThrow(TypeError);
  });
});
