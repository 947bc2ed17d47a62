import { describe, expect, it } from "vitest";
import { z } from "zod";
import { createLogReader, createRuntime, defineTool, sessionStream } from "../../src/index.js";
import type { Clock, SendOutcome, ToolDefinition } from "../../src/index.js";
import { SessionStateError } from "../../src/errors/session-state-error.js";
import { MemoryEventLog, scriptedProvider } from "../../src/testing/index.js";
import { deployTool, sequentialIds } from "../support/tools.js";

/*
 * Deadlines for held calls (decisions version 7, docs/policy.md, "Approval deadlines"): judged by
 * the log's recorded time, driven here by a clock the test moves by hand. Nothing sleeps: a wait
 * on the deadline is a `clock.sleep` the test sees and ends by moving the clock.
 */

/** A clock the test moves; `sleep` resolves when the clock reaches its end, and `sleeping()` tells when someone waits. */
function manualClock(start = Date.UTC(2026, 0, 1)) {
  let now = start;
  const sleepers = new Set<{ until: number; wake: () => void }>();
  const watchers = new Set<() => void>();
  const clock: Clock & { advance(ms: number): void; sleeping(): Promise<void> } = {
    now: () => now,
    sleep(ms, signal) {
      return new Promise<void>((resolve, reject) => {
        const entry = { until: now + ms, wake: resolve };
        sleepers.add(entry);
        signal.addEventListener("abort", () => {
          sleepers.delete(entry);
          reject(signal.reason);
        }, { once: true });
        for (const watcher of [...watchers]) watcher();
      });
    },
    advance(ms) {
      now += ms;
      for (const entry of [...sleepers]) {
        if (entry.until <= now) {
          sleepers.delete(entry);
          entry.wake();
        }
      }
    },
    sleeping() {
      if (sleepers.size > 0) return Promise.resolve();
      return new Promise<void>((resolve) => {
        const watcher = () => {
          watchers.delete(watcher);
          resolve();
        };
        watchers.add(watcher);
      });
    },
  };
  return clock;
}

const timeoutMs = 60_000;
const deploy = { name: "deploy", arguments: '{"version":"v2"}' };

async function setup(options: { autoResume?: (outcome: SendOutcome) => void; tools?: (ran: string[]) => ToolDefinition[]; script?: Parameters<typeof scriptedProvider>[0] } = {}) {
  const clock = manualClock();
  const log = new MemoryEventLog({ clock, ids: sequentialIds("event") });
  const ran: string[] = [];
  const provider = scriptedProvider(options.script ?? [{ content: "Deploying.", toolCalls: [deploy] }, { content: "It was not deployed." }]);
  const runtime = await createRuntime({
    log,
    provider,
    tools: options.tools?.(ran) ?? [deployTool(ran)],
    clock,
    ids: sequentialIds("session"),
    policy: { approvalMode: "ask", workspace: { root: "/workspace", trusted: true }, approvalTimeoutMs: timeoutMs },
    ...(options.autoResume !== undefined ? { autoResume: { onOutcome: options.autoResume } } : {}),
  });
  const session = await runtime.openSession("s1");
  return { clock, log, ran, provider, runtime, session };
}

/** The tool results the provider was sent in its last request. */
function lastToolResults(provider: { requests: { messages: unknown[] }[] }): string[] {
  return (provider.requests.at(-1)?.messages ?? []).filter((message) => (message as { role: string }).role === "tool").map((message) => (message as { content: string }).content);
}

describe("a held call not answered before its deadline", () => {
  it("is denied by approval:timeout on resume(): it never runs, the model is told, the audit shows the rule, replay is identical", async () => {
    const { clock, log, ran, provider, runtime, session } = await setup();
    const parked = await session.send("deploy v2");
    expect(parked.status).toBe("awaiting-approval");
    const [held] = parked.pendingApprovals;
    const gatedAt = (await log.readStream(sessionStream("s1"))).find((event) => event.type === "turn.tool_calls.gated")?.meta.recordedAt ?? "";
    expect(held?.deadline).toBe(new Date(Date.parse(gatedAt) + timeoutMs).toISOString());

    // One millisecond early: still held, nothing recorded.
    clock.advance(timeoutMs - 1 - (clock.now() - Date.parse(gatedAt)));
    expect(await session.resume()).toMatchObject({ status: "awaiting-approval" });
    expect((await log.readStream(sessionStream("s1"))).map((event) => event.type)).not.toContain("turn.approval.denied");

    clock.advance(1);
    const outcome = await session.resume();
    expect(outcome).toEqual({ status: "completed", text: "It was not deployed.", pendingApprovals: [] });
    expect(ran).toEqual([]);
    expect(lastToolResults(provider)).toEqual(["Error: not run: nobody approved this call before its approval deadline passed."]);
    const denial = (await log.readStream(sessionStream("s1"))).find((event) => event.type === "turn.approval.denied");
    expect(denial).toMatchObject({ data: { callId: held?.callId, by: "turnlog", rule: "approval:timeout" }, meta: { recordedAt: held?.deadline } });
    expect(await createLogReader(log).audit("s1")).toMatchObject([{ callId: held?.callId, decision: "ask", rule: "approval:timeout", outcome: "denied", errorCode: "approval-timeout" }]);
    expect(await runtime.replay("s1")).toMatchObject({ identical: true, divergences: [] });
    provider.assertConsumed();
  });

  it("an answer in time runs the call; an answer at the deadline is refused", async () => {
    const inTime = await setup({ script: [{ content: "Deploying.", toolCalls: [deploy] }, { content: "Deployed." }] });
    const parked = await inTime.session.send("deploy v2");
    const callId = parked.pendingApprovals[0]?.callId ?? "";
    inTime.clock.advance(timeoutMs - 10);
    await inTime.session.approve(callId, { by: "ann" });
    expect(await inTime.session.resume()).toMatchObject({ status: "completed", text: "Deployed." });
    expect(inTime.ran).toEqual([callId]);

    const late = await setup();
    const held = await late.session.send("deploy v2");
    late.clock.advance(timeoutMs);
    await expect(late.session.approve(held.pendingApprovals[0]?.callId ?? "", { by: "ann" })).rejects.toBeInstanceOf(SessionStateError);
    expect(await late.session.resume()).toMatchObject({ status: "completed", text: "It was not deployed." });
    expect(late.ran).toEqual([]);
  });

  it("waitForAnswers() ends at the deadline, records the denial and resolves needs-resume", async () => {
    const { clock, log, ran, session } = await setup();
    const parked = await session.send("deploy v2");
    const waiting = session.waitForAnswers();
    await clock.sleeping();
    clock.advance(timeoutMs);
    expect(await waiting).toMatchObject({ status: "needs-resume", reason: "approvals-answered" });
    expect((await log.readStream(sessionStream("s1"))).at(-1)).toMatchObject({ type: "turn.approval.denied", data: { callId: parked.pendingApprovals[0]?.callId, rule: "approval:timeout" } });
    expect(await session.resume()).toMatchObject({ status: "completed", text: "It was not deployed." });
    expect(ran).toEqual([]);
  });

  it("autoResume: the runtime that parked the session records the timeout at the deadline and finishes the turn", async () => {
    let finished!: (outcome: SendOutcome) => void;
    const done = new Promise<SendOutcome>((resolve) => (finished = resolve));
    const { clock, ran, runtime, session } = await setup({ autoResume: (outcome) => finished(outcome) });
    expect(await session.send("deploy v2")).toMatchObject({ status: "awaiting-approval" });
    await clock.sleeping();
    clock.advance(timeoutMs);
    expect(await done).toMatchObject({ status: "completed", text: "It was not deployed." });
    expect(ran).toEqual([]);
    expect(await runtime.replay("s1")).toMatchObject({ identical: true });
    await runtime.close();
  });

  it("an answer recorded without the host's code (the reader's approve) is judged at the time its append carries: in time it is recorded, at the deadline refused", async () => {
    const inTime = await setup({ script: [{ content: "Deploying.", toolCalls: [deploy] }, { content: "Deployed." }] });
    const parked = await inTime.session.send("deploy v2");
    inTime.clock.advance(timeoutMs - 1);
    const recorded = await createLogReader(inTime.log).approve("s1", parked.pendingApprovals[0]?.callId ?? "", { by: "ann" });
    expect(Date.parse(recorded.event.meta.recordedAt)).toBe(Date.UTC(2026, 0, 1) + timeoutMs - 1);
    expect(await inTime.session.resume()).toMatchObject({ status: "completed", text: "Deployed." });
    expect(inTime.ran).toHaveLength(1);

    const late = await setup();
    const held = await late.session.send("deploy v2");
    late.clock.advance(timeoutMs);
    const before = (await late.log.readStream(sessionStream("s1"))).length;
    await expect(createLogReader(late.log).approve("s1", held.pendingApprovals[0]?.callId ?? "", { by: "ann" })).rejects.toThrow(/deadline/);
    expect(await late.log.readStream(sessionStream("s1"))).toHaveLength(before);
  });

  it("a worker's resumeAll() continues a session past its deadline (approval:timeout, the turn finished) and leaves one still in time waiting", async () => {
    const { clock, log, ran, runtime } = await setup({ script: [{ content: "Deploying.", toolCalls: [deploy] }, { content: "Deploying.", toolCalls: [deploy] }] });
    const late = await runtime.openSession("s-late");
    await late.send("deploy v2");
    clock.advance(timeoutMs / 2);
    const early = await runtime.openSession("s-early");
    const earlyOutcome = await early.send("deploy v2");
    clock.advance(timeoutMs / 2);
    await runtime.close();

    // A new host after a restart: its sweep finds the first session past its deadline.
    const worker = await createRuntime({
      log,
      provider: scriptedProvider([{ content: "It was not deployed." }]),
      tools: [deployTool(ran)],
      clock,
      policy: { approvalMode: "ask", workspace: { root: "/workspace", trusted: true }, approvalTimeoutMs: timeoutMs },
    });
    const report = await worker.resumeAll();
    expect(report.continued).toEqual([{ sessionId: "s-late", outcome: expect.objectContaining({ status: "completed", text: "It was not deployed." }) }]);
    expect(report.waiting).toEqual(expect.arrayContaining([{ sessionId: "s-early", callIds: [earlyOutcome.pendingApprovals[0]?.callId] }]));
    const lateEvents = await log.readStream(sessionStream("s-late"));
    expect(lateEvents.find((event) => event.type === "turn.approval.denied")).toMatchObject({ data: { rule: "approval:timeout", by: "turnlog" } });
    expect(ran).toEqual([]);
    expect(await worker.replay("s-late")).toMatchObject({ identical: true });
    await worker.close();
  });
});

describe("a tool's needsApproval", () => {
  const transfer = (ran: string[], needsApproval: (input: { amount: number }) => boolean | Promise<boolean>) =>
    defineTool({
      name: "transfer",
      description: "Move money between the user's own accounts",
      risk: "workspace-write",
      input: z.object({ amount: z.number() }),
      needsApproval,
      run: ({ amount }, context) => {
        ran.push(`${context.callId} ${amount}`);
        return `moved ${amount}`;
      },
    });
  const call = (amount: number, id: string) => ({ id, name: "transfer", arguments: JSON.stringify({ amount }) });

  async function host(needsApproval: (input: { amount: number }) => boolean | Promise<boolean>) {
    const ran: string[] = [];
    const log = new MemoryEventLog({ clock: manualClock(), ids: sequentialIds("event") });
    const provider = scriptedProvider([{ content: "", toolCalls: [call(5, "call_small"), call(500, "call_large")] }, { content: "Done." }]);
    const runtime = await createRuntime({
      log,
      provider,
      tools: [transfer(ran, needsApproval)],
      ids: sequentialIds("session"),
      policy: { approvalMode: "auto-edit", workspace: { root: "/workspace", trusted: true } },
    });
    return { ran, log, provider, runtime, session: await runtime.openSession("s1") };
  }

  it("holds the calls it says need a person, runs them only once approved, and replay takes its answers as logged", async () => {
    const asked: string[] = [];
    const { ran, log, provider, runtime, session } = await host(async ({ amount }) => {
      asked.push(String(amount));
      return amount > 100;
    });
    const parked = await session.send("move 5 and 500");
    // auto-edit would run both writes; the host's rule holds the large one.
    expect(parked).toMatchObject({ status: "awaiting-approval", pendingApprovals: [{ callId: "call_large", rule: "host:needs-approval" }] });
    expect(ran).toEqual([]);
    expect(asked).toEqual(["5", "500"]);
    const events = await log.readStream(sessionStream("s1"));
    const observed = events.findIndex((event) => event.type === "session.environment.observed");
    expect(events[observed]?.data).toEqual({
      realPaths: [],
      hostRules: [
        { callId: "call_small", tool: "transfer", needsApproval: false },
        { callId: "call_large", tool: "transfer", needsApproval: true },
      ],
    });
    expect(observed).toBeLessThan(events.findIndex((event) => event.type === "turn.tool_calls.gated"));

    await session.approve("call_large", { by: "ann" });
    expect(await session.resume()).toMatchObject({ status: "completed", text: "Done." });
    expect(ran).toEqual(["call_small 5", "call_large 500"]);
    // Asked once per call: the resume read the answers from the log.
    expect(asked).toEqual(["5", "500"]);
    provider.assertConsumed();

    // Replay runs no host code: a registry whose predicate would answer otherwise changes nothing.
    const report = await createLogReader(log, { tools: [transfer([], () => false)] }).replay("s1");
    expect(report).toMatchObject({ identical: true, divergences: [] });
    expect(report.hostRules).toEqual([
      { position: observed + 1, callId: "call_small", tool: "transfer", needsApproval: false },
      { position: observed + 1, callId: "call_large", tool: "transfer", needsApproval: true },
    ]);
    await runtime.close();
  });

  it("a predicate that throws asks (fail closed) and its error is recorded", async () => {
    const { ran, log, session, runtime } = await host(({ amount }) => {
      if (amount > 100) throw new Error(`limit service unreachable for ${amount}`);
      return false;
    });
    expect(await session.send("move 5 and 500")).toMatchObject({ status: "awaiting-approval", pendingApprovals: [{ callId: "call_large", rule: "host:needs-approval-failed" }] });
    const observed = (await log.readStream(sessionStream("s1"))).find((event) => event.type === "session.environment.observed");
    expect(observed?.data).toMatchObject({ hostRules: [{ callId: "call_small", needsApproval: false }, { callId: "call_large", needsApproval: true, error: "limit service unreachable for 500" }] });
    await session.deny("call_large", { by: "ann" });
    expect(await session.resume()).toMatchObject({ status: "completed" });
    expect(ran).toEqual(["call_small 5"]);
    expect(await runtime.replay("s1")).toMatchObject({ identical: true });
    await runtime.close();
  });

  it("a host-routed call goes through it too: held without approvedBy, run with it", async () => {
    const { ran, log, session, runtime } = await host(({ amount }) => amount > 100);
    expect(await session.runTool("transfer", { amount: 500 }, { by: "ui" })).toMatchObject({ status: "needs-approval", rule: "host:needs-approval" });
    expect(await session.runTool("transfer", { amount: 500 }, { by: "ui", approvedBy: "ann" })).toMatchObject({ status: "succeeded", content: "moved 500" });
    expect(await session.runTool("transfer", { amount: 5 }, { by: "ui" })).toMatchObject({ status: "succeeded", rule: "mode:auto-edit" });
    expect(ran).toEqual(["native-2 500", "native-3 5"]);
    const rules = (await log.readStream(sessionStream("s1"))).flatMap((event) => (event.type === "session.environment.observed" ? ((event.data as { hostRules?: unknown[] }).hostRules ?? []) : []));
    expect(rules).toEqual([
      { callId: "native-1", tool: "transfer", needsApproval: true },
      { callId: "native-2", tool: "transfer", needsApproval: true },
      { callId: "native-3", tool: "transfer", needsApproval: false },
    ]);
    expect(await runtime.replay("s1")).toMatchObject({ identical: true });
    await runtime.close();
  });
});
