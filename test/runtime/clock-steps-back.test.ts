import { describe, expect, it } from "vitest";
import { z } from "zod";
import { ConfigError, createRuntime, defineTool } from "../../src/index.js";
import type { Clock } from "../../src/index.js";
import { MemoryEventLog, scriptedProvider } from "../../src/testing/index.js";
import { sequentialIds } from "../support/tools.js";

const hour = 60 * 60 * 1000;

/** True time moved by the tools; the wall clock reads it plus `offset`, which the test sets. */
function controlledClock() {
  let elapsed = 0;
  const state = { offset: 0 };
  const clock: Clock & { advance(ms: number): void; state: typeof state } = {
    now: () => Date.UTC(2026, 0, 1) + elapsed + state.offset,
    monotonic: () => elapsed,
    advance: (ms) => {
      elapsed += ms;
    },
    state,
  };
  return clock;
}

/** A session whose every turn runs `work` (one second of time), until the wall-clock budget of 2.5 s. */
async function workUntilBudget(stepBackAfterCall: number | undefined) {
  const clock = controlledClock();
  let calls = 0;
  const work = defineTool({
    name: "work",
    description: "Works for a second",
    risk: "read-only-local",
    input: z.object({}),
    run: () => {
      clock.advance(1_000);
      calls += 1;
      // The system clock is set back an hour while the agent works.
      if (calls === stepBackAfterCall) clock.state.offset = -hour;
      return "worked";
    },
  });
  const script = Array.from({ length: 20 }, (_, index) => ({ toolCalls: [{ id: `call_${index}`, name: "work", arguments: "{}" }] }));
  const log = new MemoryEventLog({ clock, ids: sequentialIds("event") });
  const runtime = await createRuntime({ log, provider: scriptedProvider([...script, { content: "never" }]), tools: [work], clock, ids: sequentialIds("id"), budgets: { wallClockMs: 2_500 } });
  const session = await runtime.openSession("s1");
  const outcome = await session.send("work");
  const events = await runtime.events("s1");
  return { outcome, calls, events, replay: await runtime.replay("s1") };
}

describe("a wall clock that steps back", () => {
  it("stops the session at the wall-clock budget after as many tools as it would without the step (issue 17: 20 tools, not 3)", async () => {
    const steady = await workUntilBudget(undefined);
    const stepped = await workUntilBudget(1);
    expect(steady.outcome).toMatchObject({ status: "stopped", reason: "budget:wall-clock" });
    expect(steady.calls).toBe(3);
    expect(stepped.outcome).toEqual(steady.outcome);
    expect(stepped.calls).toBe(3);
    // Recorded times go on as if the clock had never moved: the same log, event for event.
    expect(stepped.events.map((event) => [event.type, event.meta.recordedAt, event.meta.hash])).toEqual(steady.events.map((event) => [event.type, event.meta.recordedAt, event.meta.hash]));
    expect(stepped.replay).toMatchObject({ identical: true });
  });

  it("measures a tool's durationMs on the monotonic clock, however the wall clock moves during the call", async () => {
    const clock = controlledClock();
    const slow = defineTool({
      name: "slow",
      description: "Takes 700 ms while the wall clock is set back",
      risk: "read-only-local",
      input: z.object({}),
      run: () => {
        clock.advance(700);
        clock.state.offset = -hour;
        return "done";
      },
    });
    const runtime = await createRuntime({
      log: new MemoryEventLog({ clock }),
      provider: scriptedProvider([{ toolCalls: [{ name: "slow", arguments: "{}" }] }, { content: "ok" }]),
      tools: [slow],
      clock,
    });
    const session = await runtime.openSession("s1");
    expect(await session.send("go")).toMatchObject({ status: "completed" });
    const succeeded = (await runtime.events("s1")).find((event) => event.type === "turn.tool.succeeded");
    expect((succeeded?.data as { durationMs: number }).durationMs).toBe(700);
    const times = (await runtime.events("s1")).map((event) => Date.parse(event.meta.recordedAt));
    expect(times).toEqual([...times].sort((a, b) => a - b));
  });

  it("takes a clock with or without a monotonic reading, and refuses a monotonic that is not a function", async () => {
    for (const clock of [{ now: () => 0 }, { now: () => 0, monotonic: () => 0 }]) {
      await (await createRuntime({ log: new MemoryEventLog(), provider: scriptedProvider([]), clock })).close();
    }
    const bad = { now: () => 0, monotonic: 5 } as unknown as Clock;
    await expect(createRuntime({ log: new MemoryEventLog(), provider: scriptedProvider([]), clock: bad })).rejects.toThrow(ConfigError);
    await expect(createRuntime({ log: new MemoryEventLog(), provider: scriptedProvider([]), clock: bad })).rejects.toThrow(/monotonic/);
  });
});
