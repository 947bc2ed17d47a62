import { describe, expect, it } from "vitest";
import { z } from "zod";
import { createRuntime, defineTool } from "../../src/index.js";
import type { RiskClass } from "../../src/index.js";
import { MemoryEventLog, scriptedProvider } from "../../src/testing/index.js";

const sleep = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve, reject) => {
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener("abort", () => {
      clearTimeout(timer);
      reject(new Error("aborted"));
    });
  });

/** Tools that record when they start and end, on one shared timeline. */
function timedTools() {
  const timeline: string[] = [];
  const aborted: string[] = [];
  const make = (name: string, risk: RiskClass, extra: { serial?: boolean; command?: boolean; timeoutMs?: number } = {}) =>
    defineTool({
      name,
      description: name,
      risk,
      input: z.object({ id: z.string(), ms: z.number().default(200), fail: z.enum(["throw", "garbage", "none"]).default("none") }),
      ...(extra.serial ? { serial: true } : {}),
      ...(extra.command ? { command: ({ id }: { id: string }) => `echo ${id}` } : {}),
      ...(extra.timeoutMs ? { timeoutMs: extra.timeoutMs } : {}),
      run: async ({ id, ms, fail }, { signal }) => {
        timeline.push(`start ${id}`);
        try {
          await sleep(ms, signal);
        } catch (error) {
          aborted.push(id);
          throw error;
        }
        timeline.push(`end ${id}`);
        if (fail === "throw") throw new Error(`${id} broke`);
        if (fail === "garbage") return 42 as never;
        return `done ${id}`;
      },
    });
  return {
    timeline,
    aborted,
    tools: [
      make("read", "read-only-local"),
      make("write", "workspace-write"),
      make("slow_read", "read-only-local", { timeoutMs: 100 }),
      make("serial_read", "read-only-local", { serial: true }),
      make("shell_read", "read-only-local", { command: true }),
    ],
  };
}

const call = (tool: string, id: string, extra: Record<string, unknown> = {}) => ({ id: `call_${id}`, name: tool, arguments: JSON.stringify({ id, ...extra }) });

async function run(toolCalls: ReturnType<typeof call>[], options: { concurrency?: number; signal?: AbortSignal } = {}) {
  const timed = timedTools();
  const provider = scriptedProvider([{ toolCalls }, { content: "done" }]);
  const runtime = await createRuntime({
    log: new MemoryEventLog(),
    provider,
    tools: timed.tools,
    policy: { approvalMode: "full-auto", workspace: { root: "/workspace", trusted: true } },
    ...(options.concurrency ? { concurrency: options.concurrency } : {}),
  });
  const session = await runtime.openSession("s1");
  const outcome = await session.send("go", options.signal ? { signal: options.signal } : {});
  const events = await runtime.events("s1");
  const packets = (events.find((event) => event.type === "turn.results.packetized")?.data as { packets: { callId: string; ok: boolean; errorCode?: string }[] } | undefined)?.packets;
  return { ...timed, outcome, events, packets, runtime, provider };
}

describe("ToolPlanRunner", () => {
  it("runs four 200 ms reads at once with concurrency 4", async () => {
    const { timeline, outcome } = await run([call("read", "a"), call("read", "b"), call("read", "c"), call("read", "d")], { concurrency: 4 });
    expect(outcome.status).toBe("completed");
    // All four are running before any ends (a timed bound would fail on a loaded machine).
    expect(timeline.slice(0, 4)).toEqual(["start a", "start b", "start c", "start d"]);
  });

  it("keeps a sliding pool: at most `concurrency` run, and a slow call does not hold back the next", async () => {
    const { timeline } = await run([call("read", "slow", { ms: 300 }), call("read", "a", { ms: 20 }), call("read", "b", { ms: 20 })], { concurrency: 2 });
    // b starts as soon as a ends, while slow still runs.
    expect(timeline.indexOf("start b")).toBeGreaterThan(timeline.indexOf("end a"));
    expect(timeline.indexOf("start b")).toBeLessThan(timeline.indexOf("end slow"));
  });

  it("runs a write between two reads after the first and before the second", async () => {
    const { timeline } = await run([call("read", "r1", { ms: 50 }), call("write", "w", { ms: 50 }), call("read", "r2", { ms: 50 })]);
    expect(timeline).toEqual(["start r1", "end r1", "start w", "end w", "start r2", "end r2"]);
  });

  it("never overlaps a serial tool or a command tool with anything", async () => {
    const { timeline } = await run([call("read", "a", { ms: 30 }), call("serial_read", "s", { ms: 30 }), call("shell_read", "c", { ms: 30 }), call("read", "b", { ms: 30 })]);
    expect(timeline).toEqual(["start a", "end a", "start s", "end s", "start c", "end c", "start b", "end b"]);
  });

  it("logs ends in completion order and packets in call order, with the group each call ran in", async () => {
    const { events, packets } = await run([call("read", "slow", { ms: 150 }), call("read", "fast", { ms: 10 }), call("write", "w", { ms: 10 })]);
    const ends = events.filter((event) => event.type === "turn.tool.succeeded").map((event) => (event.data as { callId: string }).callId);
    expect(ends).toEqual(["call_fast", "call_slow", "call_w"]);
    expect(packets?.map((packet) => packet.callId)).toEqual(["call_slow", "call_fast", "call_w"]);
    const groups = events.filter((event) => event.type === "turn.tool.started").map((event) => (event.data as { group: number }).group);
    expect(groups).toEqual([0, 0, 1]);
  });

  it("a tool that throws, times out or returns garbage fails alone", async () => {
    const { packets, outcome } = await run([
      call("read", "boom", { ms: 10, fail: "throw" }),
      call("slow_read", "hang", { ms: 5000 }),
      call("read", "junk", { ms: 10, fail: "garbage" }),
      call("read", "fine", { ms: 10 }),
    ]);
    expect(outcome.status).toBe("completed");
    expect(packets?.map((packet) => [packet.callId, packet.ok, packet.errorCode])).toEqual([
      ["call_boom", false, "tool-exception"],
      ["call_hang", false, "timeout"],
      ["call_junk", false, "invalid-result"],
      ["call_fine", true, undefined],
    ]);
  });

  it("a tool's signal says why it was stopped: a TimeoutError after its timeout, the host's reason after a cancel", async () => {
    const reasons: Record<string, unknown> = {};
    const waiter = (name: string, timeoutMs: number) =>
      defineTool({
        name,
        description: name,
        risk: "read-only-local",
        timeoutMs,
        input: z.object({}),
        run: (_input, { signal }) =>
          new Promise<string>((_resolve, reject) => {
            signal.addEventListener("abort", () => {
              reasons[name] = signal.reason;
              reject(new Error("stopped"));
            });
          }),
      });
    const provider = scriptedProvider([{ toolCalls: [{ id: "call_t", name: "times_out", arguments: "{}" }] }, { content: "done" }]);
    const runtime = await createRuntime({ log: new MemoryEventLog(), provider, tools: [waiter("times_out", 50), waiter("waits", 60_000)] });
    expect((await (await runtime.openSession("t1")).send("go")).status).toBe("completed");
    expect(reasons.times_out).toMatchObject({ name: "TimeoutError" });

    const cancelled = await createRuntime({ log: new MemoryEventLog(), provider: scriptedProvider([{ toolCalls: [{ id: "call_w", name: "waits", arguments: "{}" }] }]), tools: [waiter("waits", 60_000)] });
    const controller = new AbortController();
    const why = new Error("the user closed the tab");
    setTimeout(() => controller.abort(why), 50);
    expect(await (await cancelled.openSession("t2")).send("go", { signal: controller.signal })).toMatchObject({ status: "stopped", reason: "cancelled" });
    expect(reasons.waits).toBe(why);
  });

  it("a cancel reaches every running tool, starts nothing more, and stops the turn", async () => {
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 60);
    const { outcome, aborted, timeline, runtime } = await run(
      [call("read", "a", { ms: 1000 }), call("read", "b", { ms: 1000 }), call("write", "w", { ms: 10 })],
      { signal: controller.signal },
    );
    expect(outcome).toMatchObject({ status: "stopped", reason: "cancelled" });
    expect(aborted.sort()).toEqual(["a", "b"]);
    expect(timeline).not.toContain("start w");
    expect(await runtime.replay("s1")).toMatchObject({ identical: true });
  });

  it("replays identical, and a start out of call order is a divergence", async () => {
    const { runtime } = await run([call("read", "a", { ms: 10 }), call("write", "w", { ms: 10 }), call("read", "b", { ms: 10 })]);
    expect(await runtime.replay("s1")).toMatchObject({ identical: true });
    // The same session, but the write started before the first read ended.
    const events = await runtime.events("s1");
    const startA = events.findIndex((event) => event.type === "turn.tool.started");
    const reordered = [...events];
    const [startW] = reordered.splice(startA + 2, 1);
    reordered.splice(startA + 1, 0, startW!);
    const log = new MemoryEventLog();
    for (const event of reordered) await log.appendToStream("session-s1", [{ type: event.type, data: event.data }]);
    const forged = await createRuntime({ log, provider: scriptedProvider([]), tools: timedTools().tools });
    const report = await forged.replay("s1");
    expect(report.identical).toBe(false);
    expect(report.divergences[0]).toMatchObject({ type: "turn.tool.started", path: "type" });
  });
});
