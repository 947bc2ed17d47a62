import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { createRuntime, defineTool, LevelEventLog, parseEvent } from "../../src/index.js";
import type { EventLog } from "../../src/index.js";
import { MemoryEventLog, scriptedProvider } from "../../src/testing/index.js";
import type { ScriptStep } from "../../src/testing/index.js";
import { cancellingTool, sequentialIds, steppingClock, workspace } from "../support/tools.js";

const read = (path: string, id?: string) => ({ ...(id ? { id } : {}), name: "read_file", arguments: JSON.stringify({ path }) });
const write = (path: string, content: string) => ({ name: "write_file", arguments: JSON.stringify({ path, content }) });

async function setup(script: ScriptStep[], options: { log?: EventLog; budgets?: Record<string, number>; extraTools?: ReturnType<typeof defineTool>[] } = {}) {
  const ws = workspace();
  const provider = scriptedProvider(script);
  const log = options.log ?? new MemoryEventLog({ clock: steppingClock(), ids: sequentialIds("event") });
  const runtime = await createRuntime({
    log,
    provider,
    tools: [...ws.tools, ...(options.extraTools ?? [])],
    clock: steppingClock(),
    ids: sequentialIds("session"),
    ...(options.budgets ? { budgets: options.budgets } : {}),
  });
  const session = await runtime.openSession("s1");
  return { ws, provider, runtime, session, log };
}

/** The tool messages the provider was sent in its last request. */
function lastToolMessages(provider: { requests: { messages: unknown[] }[] }) {
  return (provider.requests.at(-1)?.messages ?? []).filter((message) => (message as { role: string }).role === "tool") as {
    tool_call_id: string;
    content: string;
  }[];
}

describe("session.send", () => {
  it("completes with the model's answer when it calls no tools", async () => {
    const { session, provider, runtime } = await setup([{ content: "Hello there." }]);
    const outcome = await session.send("hi");
    expect(outcome).toEqual({ status: "completed", text: "Hello there.", pendingApprovals: [] });
    expect(session.state().messages).toEqual([
      { role: "user", content: "hi", position: 2 },
      { role: "agent", content: "Hello there.", position: expect.any(Number) },
    ]);
    provider.assertConsumed();
    expect(await runtime.replay("s1")).toMatchObject({ identical: true });
  });

  it("runs read-only tools without asking and shows the model every result in call order", async () => {
    const { session, provider, ws } = await setup([{ toolCalls: [read("a.txt", "call_1"), read("b.txt")] }, { content: "alpha and beta" }]);
    const outcome = await session.send("read both");
    expect(outcome).toMatchObject({ status: "completed", text: "alpha and beta" });
    expect(ws.ran).toEqual(["read_file a.txt", "read_file b.txt"]);
    const results = lastToolMessages(provider);
    expect(results.map((message) => message.content)).toEqual(["alpha", "beta"]);
    expect(results[0]?.tool_call_id).toBe("call_1");
    // The call without a provider ID got a derived one, valid for both providers.
    expect(results[1]?.tool_call_id).toMatch(/^[a-zA-Z0-9_-]{1,40}$/);
  });

  it("turns an unknown tool, malformed JSON and a schema failure into results the model can read", async () => {
    const { session, provider, ws } = await setup([
      {
        toolCalls: [
          { name: "delete_everything", arguments: "{}" },
          { name: "read_file", arguments: '{"path": "a.txt"' },
          { name: "read_file", arguments: '{"path": 42}' },
          { name: "read_file", arguments: "[1]" },
        ],
      },
      { content: "sorry" },
    ]);
    expect(await session.send("go")).toMatchObject({ status: "completed" });
    expect(ws.ran).toEqual([]);
    // What the model is told, call by call, in call order.
    const [unknown, malformed, invalid, notObject] = [...session.state().calls.values()].map((call) => call.packet?.content);
    expect(unknown).toBe('Error: not run: unknown tool: there is no tool named "delete_everything"; available: read_file, write_file');
    expect(malformed).toMatch(/^Error: not run: the arguments are not valid JSON; send one JSON object: /);
    expect(invalid).toBe("Error: not run: arguments did not match the schema: path: Invalid input: expected string, received number");
    expect(notObject).toBe("Error: not run: the arguments must be a JSON object: received an array");
    // Arguments that are not a JSON object cannot be replayed as a native tool call: the group is
    // described to the model as text, rejections included.
    const next = JSON.stringify(provider.requests.at(-1)?.messages);
    expect(next).toContain("Earlier tool activity (not replayable as tool calls)");
    expect(next).toContain("malformed-arguments");
    expect(next).toContain("unknown-tool");
  });

  it("treats empty argument text as an empty object", async () => {
    const ping = defineTool({ name: "ping", description: "ping", risk: "read-only-local", input: z.object({}), run: () => "pong" });
    const { session, provider } = await setup([{ toolCalls: [{ name: "ping", arguments: "" }] }, { content: "ok" }], { extraTools: [ping] });
    await session.send("ping");
    expect(lastToolMessages(provider).map((message) => message.content)).toEqual(["pong"]);
  });

  it("a tool that throws fails alone; the loop goes on", async () => {
    const { session, provider } = await setup([{ toolCalls: [read("missing.txt"), read("a.txt")] }, { content: "one failed" }]);
    expect(await session.send("go")).toMatchObject({ status: "completed", text: "one failed" });
    const [failed, ok] = lastToolMessages(provider).map((message) => message.content);
    expect(failed).toContain("no such file: missing.txt");
    expect(ok).toBe("alpha");
  });

  it("holds a write for approval, with what a reviewer needs to decide", async () => {
    const { session, ws } = await setup([{ toolCalls: [read("a.txt"), write("c.txt", "new")] }, { content: "written" }]);
    const outcome = await session.send("copy");
    expect(outcome.status).toBe("awaiting-approval");
    expect(outcome.pendingApprovals).toEqual([
      {
        callId: expect.stringMatching(/^call_/),
        tool: "write_file",
        input: { path: "c.txt", content: "new" },
        riskClass: "workspace-write",
        rule: "mode:ask",
        fingerprint: expect.stringMatching(/^[0-9a-f]{64}$/),
      },
    ]);
    // Nothing ran yet: a read after a write must see it, so the turn waits as a whole.
    expect(ws.ran).toEqual([]);

    await session.approve(outcome.pendingApprovals[0]!.callId, { by: "alice", note: "fine" });
    expect(await session.resume()).toMatchObject({ status: "completed", text: "written" });
    expect(ws.files.get("c.txt")).toBe("new");
    expect(ws.ran).toEqual(["read_file a.txt", "write_file c.txt"]);
  });

  it("a denied call never runs and the model is told so", async () => {
    const { session, ws, provider } = await setup([{ toolCalls: [write("c.txt", "new")] }, { content: "ok, not writing" }]);
    const outcome = await session.send("write");
    await session.deny(outcome.pendingApprovals[0]!.callId, { by: "bob", note: "not now" });
    expect(await session.resume()).toMatchObject({ status: "completed" });
    expect(ws.ran).toEqual([]);
    expect(lastToolMessages(provider)[0]?.content).toBe("Error: not run: the user denied this call. Their reason: not now");
  });

  it("an approval for the tool covers its later calls in the session, and is recorded", async () => {
    const { session, ws, runtime } = await setup([
      { toolCalls: [write("c.txt", "1")] },
      { toolCalls: [write("d.txt", "2")] },
      { content: "both written" },
    ]);
    const held = await session.send("write twice");
    await session.approve(held.pendingApprovals[0]!.callId, { by: "alice", scope: "tool", note: "writes are fine today" });
    expect(await session.resume()).toMatchObject({ status: "completed" });
    expect(ws.ran).toEqual(["write_file c.txt", "write_file d.txt"]);
    const second = [...session.state().calls.values()][1];
    expect(second?.decision).toMatchObject({ decision: "allow", rule: "approval:tool=write_file" });
    expect(session.state().toolApprovals).toEqual([
      { tool: "write_file", callId: held.pendingApprovals[0]!.callId, by: "alice", note: "writes are fine today", position: expect.any(Number) },
    ]);
    expect(await runtime.replay("s1")).toMatchObject({ identical: true });
  });

  it("stops at maxIterations with a reason, after exactly that many provider calls", async () => {
    const { session, provider } = await setup([{ toolCalls: [read("a.txt")] }, { toolCalls: [read("a.txt")] }, { toolCalls: [read("a.txt")] }], {
      budgets: { maxIterations: 2 },
    });
    expect(await session.send("loop")).toEqual({ status: "stopped", reason: "budget:max-iterations", pendingApprovals: [] });
    expect(provider.remaining).toBe(1);
  });

  it("retries a retryable provider failure and records both attempts", async () => {
    const { session, runtime } = await setup([{ error: { kind: "transport" } }, { content: "second time lucky" }]);
    expect(await session.send("hi")).toMatchObject({ status: "completed", text: "second time lucky" });
    const requests = (await runtime.events("s1")).filter((event) => event.type === "turn.provider.requested");
    expect(requests.map((event) => (event.data as { attempt: number }).attempt)).toEqual([1, 2]);
  });

  it("never runs tool calls cut off by the length limit: one retry, then a refusal, and no arguments logged", async () => {
    const cut = { toolCalls: [write("c.txt", "SECRET-PARTIAL-ARGS")], finishReason: "length" as const };
    const { session, ws, runtime } = await setup([cut, cut]);
    expect(await session.send("write")).toEqual({ status: "stopped", reason: "refused:truncated-tool-calls", pendingApprovals: [] });
    expect(ws.ran).toEqual([]);
    const events = await runtime.events("s1");
    expect(JSON.stringify(events)).not.toContain("SECRET-PARTIAL-ARGS");
    expect(events.filter((event) => event.type === "turn.provider.failed").map((event) => (event.data as { kind: string }).kind)).toEqual([
      "truncated-tool-calls",
      "truncated-tool-calls",
    ]);
    expect(await runtime.replay("s1")).toMatchObject({ identical: true });
  });

  it("a retry after a cut-off that answers properly goes on as usual", async () => {
    const { session, ws } = await setup([{ toolCalls: [read("a.txt")], finishReason: "length" }, { toolCalls: [read("a.txt")] }, { content: "alpha" }]);
    expect(await session.send("read")).toMatchObject({ status: "completed", text: "alpha" });
    expect(ws.ran).toEqual(["read_file a.txt"]);
  });

  it("keeps malformed JSON in a finalized response a planning rejection", async () => {
    const { session, provider } = await setup([{ toolCalls: [{ name: "read_file", arguments: '{"path":' }], finishReason: "tool_calls" }, { content: "oops" }]);
    expect(await session.send("read")).toMatchObject({ status: "completed" });
    expect(JSON.stringify(provider.requests.at(-1)?.messages)).toMatch(/malformed-arguments\): Error: not run: the arguments are not valid JSON/);
  });

  it("fails the turn when the script runs out", async () => {
    const { session } = await setup([{ toolCalls: [read("a.txt")] }]);
    expect(await session.send("hi")).toMatchObject({ status: "failed", reason: "script-exhausted" });
  });

  it("cancels through the signal and records why", async () => {
    const controller = new AbortController();
    const slow = cancellingTool(controller);
    const { session, runtime } = await setup([{ toolCalls: [{ name: "slow", arguments: "{}" }] }], { extraTools: [slow] });
    expect(await session.send("go", { signal: controller.signal })).toMatchObject({ status: "stopped", reason: "cancelled" });
    expect((await runtime.events("s1")).at(-1)?.type).toBe("turn.stopped");
    // The cancel is the host's input: replay takes it as given.
    expect(await runtime.replay("s1")).toMatchObject({ identical: true });
  });

  it("writes only events that match the catalogue", async () => {
    const { session, runtime } = await setup([{ toolCalls: [read("a.txt"), write("c.txt", "x")] }, { content: "ok" }]);
    const outcome = await session.send("go");
    await session.approve(outcome.pendingApprovals[0]!.callId, { by: "alice" });
    await session.resume();
    for (const event of await runtime.events("s1")) expect(() => parseEvent({ type: event.type, data: event.data })).not.toThrow();
  });
});

describe("budgets", () => {
  it("merges partial overrides with the defaults, and records them", async () => {
    const { runtime } = await setup([], { budgets: { maxIterations: 7 } });
    const started = (await runtime.events("s1"))[0]?.data as { budgets: Record<string, number> };
    expect(started.budgets).toEqual({ maxIterations: 7, maxToolCalls: 100, maxRepeatedFailures: 5, wallClockMs: 300_000 });
  });

  it("stops at maxToolCalls, and calls beyond it get packets saying so", async () => {
    const { session, provider, ws } = await setup([{ toolCalls: [read("a.txt"), read("b.txt"), read("a.txt")] }, { content: "never" }], { budgets: { maxToolCalls: 2 } });
    expect(await session.send("go")).toEqual({ status: "stopped", reason: "budget:max-tool-calls", pendingApprovals: [] });
    expect(ws.ran).toEqual(["read_file a.txt", "read_file b.txt"]);
    expect(provider.remaining).toBe(1);
    const state = session.state();
    const overBudget = [...state.calls.values()].filter((call) => call.rejection?.reason === "over-budget");
    expect(overBudget).toHaveLength(1);
    expect(overBudget[0]?.packet?.content).toContain("budget");
  });

  it("caps the calls of one turn with maxToolCallsPerTurn and goes on", async () => {
    const { session, ws } = await setup([{ toolCalls: [read("a.txt"), read("b.txt")] }, { content: "ok" }], { budgets: { maxToolCallsPerTurn: 1 } });
    expect(await session.send("go")).toMatchObject({ status: "completed" });
    expect(ws.ran).toEqual(["read_file a.txt"]);
  });

  // Rejections count as failures toward maxRepeatedFailures: test/core/continuation-decisions.test.ts.
  it("does not count the time a turn waits for a person against the wall clock", async () => {
    let now = Date.UTC(2026, 0, 1);
    const clock = { now: () => (now += 1) };
    const ws = workspace();
    const runtime = await createRuntime({
      log: new MemoryEventLog({ clock }),
      provider: scriptedProvider([{ toolCalls: [write("c.txt", "x")] }, { content: "written" }]),
      tools: ws.tools,
      budgets: { wallClockMs: 1000 },
    });
    const session = await runtime.openSession("s1");
    const held = await session.send("write");
    now += 60 * 60 * 1000; // the reviewer answers an hour later
    await session.approve(held.pendingApprovals[0]!.callId, { by: "alice" });
    now += 60 * 60 * 1000; // and the host resumes an hour after that
    expect(await session.resume()).toMatchObject({ status: "completed", text: "written" });
    expect(session.state().current.pausedMs).toBeGreaterThanOrEqual(2 * 60 * 60 * 1000);
    expect(await runtime.replay("s1")).toMatchObject({ identical: true });
  });
});

describe("replay", () => {
  async function finishedSession() {
    const context = await setup([{ toolCalls: [read("a.txt"), write("c.txt", "x"), { name: "nope", arguments: "{}" }] }, { content: "ok" }]);
    const outcome = await context.session.send("go");
    await context.session.approve(outcome.pendingApprovals[0]!.callId, { by: "alice" });
    await context.session.resume();
    return context;
  }

  it("recomputes every decision and finds the log identical", async () => {
    const { runtime } = await finishedSession();
    const report = await runtime.replay("s1");
    expect(report.divergences).toEqual([]);
    expect(report.identical).toBe(true);
    const decisions = (await runtime.events("s1")).filter((event) =>
      [
        "turn.started",
        "turn.provider.requested",
        "turn.tool_calls.normalized",
        "turn.tool_calls.planned",
        "turn.tool_calls.gated",
        "turn.tool.started",
        "turn.results.packetized",
        "turn.continued",
        "turn.completed",
        "session.diagnostic.recorded",
        "session.history.compacted",
      ].includes(event.type),
    );
    expect(report.compared).toBe(decisions.length);
  });

  it("never calls the provider or a tool", async () => {
    const { runtime, provider, ws } = await finishedSession();
    const requestsBefore = provider.requests.length;
    const ranBefore = ws.ran.length;
    await runtime.replay("s1");
    expect(provider.requests.length).toBe(requestsBefore);
    expect(ws.ran.length).toBe(ranBefore);
  });

  it("names the decisions another policy would change", async () => {
    const { runtime } = await finishedSession();
    const report = await runtime.replay("s1", { policy: { approvalMode: "full-auto" } });
    expect(report.identical).toBe(false);
    expect(report.divergences[0]).toMatchObject({ type: "turn.tool_calls.gated", path: "data.approvalMode", expected: "ask", actual: "full-auto" });
  });

  it("reports a tampered decision with its position and path", async () => {
    const { log } = await finishedSession();
    const events = await log.readStream("session-s1");
    const copy = new MemoryEventLog();
    for (const event of events) {
      const data = event.type === "turn.tool_calls.gated" ? JSON.parse(JSON.stringify(event.data).replace('"rule":"mode:ask"', '"rule":"allow:tool=read_file"')) : event.data;
      await copy.appendToStream("session-s1", [{ type: event.type, data }]);
    }
    const ws = workspace();
    const runtime = await createRuntime({ log: copy, provider: scriptedProvider([]), tools: ws.tools });
    const report = await runtime.replay("s1");
    const gatedPosition = events.find((event) => event.type === "turn.tool_calls.gated")?.meta.streamPosition;
    expect(report.divergences).toEqual([
      { position: gatedPosition, type: "turn.tool_calls.gated", path: "data.decisions[0].rule", expected: "allow:tool=read_file", actual: "mode:ask" },
    ]);
  });
});

describe("on disk", () => {
  const dirs: string[] = [];
  afterEach(async () => {
    await Promise.all(dirs.splice(0).map((dir) => rm(dir, { recursive: true, force: true })));
  });

  it("a held call can be approved and resumed by a later runtime on the same directory", async () => {
    const dir = await mkdtemp(join(tmpdir(), "turnlog-session-"));
    dirs.push(dir);
    const first = await setup([{ toolCalls: [write("c.txt", "x")] }], { log: await LevelEventLog.open(dir, { durability: "sync" }) });
    const outcome = await first.session.send("write it");
    expect(outcome.status).toBe("awaiting-approval");
    await first.log.close();

    const ws = workspace();
    const log = await LevelEventLog.open(dir, { durability: "sync" });
    const provider = scriptedProvider([{ content: "written" }]);
    const runtime = await createRuntime({ log, provider, tools: ws.tools });
    const session = await runtime.openSession("s1");
    expect(session.outcome()).toMatchObject({ status: "awaiting-approval", pendingApprovals: [{ callId: outcome.pendingApprovals[0]!.callId }] });
    await session.approve(outcome.pendingApprovals[0]!.callId, { by: "carol" });
    expect(await session.resume()).toMatchObject({ status: "completed", text: "written" });
    expect(ws.files.get("c.txt")).toBe("x");
    expect(await runtime.replay("s1")).toMatchObject({ identical: true });
    expect(await runtime.verify()).toMatchObject({ ok: true });
    await log.close();
  });

  it("a tool that started and never ended is marked interrupted on reopen and not run again", async () => {
    const dir = await mkdtemp(join(tmpdir(), "turnlog-session-"));
    dirs.push(dir);
    // Simulate a crash: the first runtime's log is closed while the tool's end was never written.
    const first = await setup([{ toolCalls: [read("a.txt"), read("b.txt")] }], { log: await LevelEventLog.open(dir, { durability: "sync" }) });
    await first.session.send("read").catch(() => undefined);
    const events = await first.log.readStream("session-s1");
    await first.log.close();
    const crashed = await LevelEventLog.open(join(dir, "crashed"), { durability: "sync" });
    // The log ends right after the first read's start: it is in doubt, the second never started.
    const cut = events.findIndex((event) => event.type === "turn.tool.started") + 1;
    for (const event of events.slice(0, cut)) await crashed.appendToStream("session-s1", [{ type: event.type, data: event.data }]);
    await crashed.close();

    const ws = workspace();
    const log = await LevelEventLog.open(join(dir, "crashed"), { durability: "sync" });
    const provider = scriptedProvider([{ content: "one was interrupted" }]);
    const runtime = await createRuntime({ log, provider, tools: ws.tools });
    const session = await runtime.openSession("s1");
    const types = (await runtime.events("s1")).map((event) => event.type);
    expect(types.at(-1)).toBe("turn.tool.interrupted");
    expect(await session.resume()).toMatchObject({ status: "completed" });
    // The in-doubt read was not run again; the one that never started did run.
    expect(ws.ran).toEqual(["read_file b.txt"]);
    expect(lastToolMessages(provider).map((message) => message.content)).toEqual([
      "Error: the call was interrupted before it finished (the process stopped) and was not run again.",
      "beta",
    ]);
    expect(await runtime.replay("s1")).toMatchObject({ identical: true });
    await log.close();
  });
});

describe("recovery of an idempotent read", () => {
  it("runs a read-only idempotent call that was in doubt again on resume, once, without a second start", async () => {
    let runs = 0;
    const lookup = defineTool({
      name: "lookup",
      description: "an idempotent read",
      risk: "read-only-local",
      idempotent: true,
      input: z.object({ key: z.string() }),
      run: ({ key }) => {
        runs += 1;
        return `value of ${key}`;
      },
    });
    const log = new MemoryEventLog();
    const first = await createRuntime({ log, provider: scriptedProvider([{ toolCalls: [{ name: "lookup", arguments: '{"key":"k"}' }] }, { content: "x" }]), tools: [lookup] });
    await (await first.openSession("s1")).send("go");
    const events = await log.readStream("session-s1");
    const cut = events.findIndex((event) => event.type === "turn.tool.started") + 1;
    const crashed = new MemoryEventLog();
    for (const event of events.slice(0, cut)) await crashed.appendToStream("session-s1", [{ type: event.type, data: event.data }]);

    runs = 0;
    const provider = scriptedProvider([{ content: "the value" }]);
    const runtime = await createRuntime({ log: crashed, provider, tools: [lookup] });
    const session = await runtime.openSession("s1");
    expect((await runtime.events("s1")).some((event) => event.type === "turn.tool.interrupted")).toBe(false);
    expect(await session.resume()).toMatchObject({ status: "completed", text: "the value" });
    expect(runs).toBe(1);
    const after = await runtime.events("s1");
    expect(after.filter((event) => event.type === "turn.tool.started")).toHaveLength(1);
    expect(lastToolMessages(provider).map((message) => message.content)).toEqual(["value of k"]);
    expect(await runtime.replay("s1")).toMatchObject({ identical: true });
  });
});

describe("a provider that misbehaves", () => {
  it("a response that does not fit the catalogue is a failed attempt, not a crash", async () => {
    const provider = {
      id: "broken",
      format: "openai-chat" as const,
      calls: 0,
      async complete() {
        this.calls += 1;
        return this.calls === 1 ? ({ content: 42, toolCalls: [] } as never) : { content: "fine now", toolCalls: [] };
      },
    };
    const runtime = await createRuntime({ log: new MemoryEventLog(), provider, tools: workspace().tools });
    const session = await runtime.openSession("s1");
    expect(await session.send("hi")).toMatchObject({ status: "completed", text: "fine now" });
    const failed = (await runtime.events("s1")).find((event) => event.type === "turn.provider.failed");
    expect(failed?.data).toMatchObject({ kind: "transport", retryable: true });
  });
});
