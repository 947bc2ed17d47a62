import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Level } from "level";
import { afterEach, describe, expect, it, vi } from "vitest";
import { z } from "zod";
import { createRuntime, defineTool, LevelEventLog } from "../../src/index.js";
import { MemoryEventLog, scriptedProvider } from "../../src/testing/index.js";
import type { ScriptStep } from "../../src/testing/index.js";
import { sequentialIds, steppingClock } from "../support/tools.js";

/**
 * docs/performance.md#what-makes-a-tool-call-cheap-issue-15: the decisions that follow one another without an effect between them go into
 * the log in one append, at one settled time, and an fsync is spent only where it protects
 * something — before a side effect, before the host hears an outcome, at the end of a turn.
 */
const lookup = defineTool({ name: "lookup", description: "reads", risk: "read-only-local", input: z.object({ n: z.number() }), run: ({ n }) => `value ${n}` });
const calls = (turn: number, count: number) => ({ toolCalls: Array.from({ length: count }, (_, index) => ({ name: "lookup", arguments: JSON.stringify({ n: turn * 10 + index }) })) });

const directories: string[] = [];
afterEach(async () => {
  vi.restoreAllMocks();
  for (const directory of directories.splice(0)) await rm(directory, { recursive: true, force: true });
});

describe("runs of decisions", () => {
  it("appends a provider answer with the decisions it leads to (normalize, plan, gate) at one recorded time", async () => {
    // The log's clock moves 1 ms per append: events of separate appends never share a time.
    const log = new MemoryEventLog({ clock: steppingClock(), ids: sequentialIds("event") });
    const runtime = await createRuntime({ log, provider: scriptedProvider([calls(0, 2), { content: "done" }]), tools: [lookup] });
    const session = await runtime.openSession("s1");
    expect(await session.send("go")).toMatchObject({ status: "completed", text: "done" });
    const events = await runtime.events("s1");
    const at = (type: string) => events.filter((event) => event.type === type).map((event) => event.meta.recordedAt);
    const answered = at("turn.provider.responded")[0];
    expect(at("turn.tool_calls.normalized")).toEqual([answered]);
    expect(at("turn.tool_calls.planned")).toEqual([answered]);
    expect(at("turn.tool_calls.gated")).toEqual([answered]);
    // The end of one turn, the start of the next and its request: one append too.
    const [, second] = at("turn.started");
    expect(at("turn.results.packetized")).toEqual([second]);
    expect(at("turn.continued")).toEqual([second]);
    expect(at("turn.provider.requested")[1]).toBe(second);
    expect(await runtime.replay("s1")).toMatchObject({ identical: true });
  });

  it("decides the wall-clock budget in the live run exactly as replay does, whatever the time it runs out", async () => {
    const outcomes = new Set<string>();
    for (let wallClockMs = 1; wallClockMs <= 40; wallClockMs += 3) {
      const log = new MemoryEventLog({ clock: steppingClock(), ids: sequentialIds("event") });
      const runtime = await createRuntime({
        log,
        provider: scriptedProvider([calls(0, 1), calls(1, 2), calls(2, 1), calls(3, 1), calls(4, 1), { content: "done" }]),
        tools: [lookup],
        budgets: { wallClockMs },
      });
      const session = await runtime.openSession("s1");
      const outcome = await session.send("go");
      outcomes.add(`${outcome.status}:${outcome.reason ?? ""}`);
      expect(await runtime.replay("s1"), `wallClockMs ${wallClockMs}`).toMatchObject({ identical: true });
    }
    // The budget ran out in some runs and not in others.
    expect([...outcomes].sort()).toEqual(["completed:", "stopped:budget:wall-clock"]);
  });

  it("with read-only tools, spends one fsync per provider turn, however many calls it runs", async () => {
    const directory = await mkdtemp(join(tmpdir(), "turnlog-decision-runs-"));
    directories.push(directory);
    const log = await LevelEventLog.open(directory, { durability: "sync" });
    const runtime = await createRuntime({ log, provider: scriptedProvider([calls(0, 4), calls(1, 4), calls(2, 4), { content: "done" }] as ScriptStep[]), tools: [lookup] });
    const session = await runtime.openSession("s1");
    const batch = vi.spyOn(Level.prototype, "batch");
    expect(await session.send("go")).toMatchObject({ status: "completed", text: "done" });
    const synced = (batch.mock.calls as unknown as Array<[unknown, { sync?: boolean }?]>).filter(([, options]) => options?.sync === true);
    // The message; the first request; the end of each of the three tool turns, with the next
    // turn's request (a request is durable before it is sent); the answer.
    expect(synced).toHaveLength(1 + 1 + 3 + 1);
    await runtime.close();
    await log.close();
    // Everything is in the log, and it replays.
    const reopened = await LevelEventLog.open(directory, { durability: "sync" });
    const again = await createRuntime({ log: reopened, provider: scriptedProvider([]), tools: [lookup] });
    expect((await again.events("s1")).filter((event) => event.type === "turn.tool.succeeded")).toHaveLength(12);
    expect(await again.replay("s1")).toMatchObject({ identical: true });
    await again.close();
    await reopened.close();
  });
});
