import { describe, expect, it } from "vitest";
import { z } from "zod";
import { ConfigError, createRuntime, defineTool, SessionStateError } from "../../src/index.js";
import type { EventLog, Runtime, RuntimeOptions, SendOutcome, Session } from "../../src/index.js";
import { otlpJson, sessionSpans } from "../../src/otel/index.js";
import { MemoryEventLog, scriptedProvider } from "../../src/testing/index.js";
import type { ScriptStep } from "../../src/testing/index.js";
import { startNodeChild } from "../support/log-child-process.js";
import { exampleSecrets } from "../support/secret-examples.js";
import { temporary } from "../support/temporary-directories.js";
import { sequentialIds, steppingClock, workspace } from "../support/tools.js";
import { memoryTracer, normalizeOtlp, normalizeReadable } from "../otel/support/otel-spans.js";

const write = (path: string, content: string, id?: string) => ({ ...(id !== undefined ? { id } : {}), name: "write_file", arguments: JSON.stringify({ path, content }) });

function setup(script: ScriptStep[], options: Partial<RuntimeOptions> & { log?: EventLog } = {}) {
  const ws = workspace();
  const provider = scriptedProvider(script);
  const log = options.log ?? new MemoryEventLog({ clock: steppingClock(), ids: sequentialIds("event") });
  const runtime = createRuntime({ clock: steppingClock(), tools: ws.tools, maxOpenSessions: 1, ...options, log, provider });
  return { ws, provider, log, runtime };
}

/** What the session's messages say, in order: what a user would see of its history. */
const messagesOf = (session: Session) => session.state().messages.map((message) => `${message.role}: ${message.content}`);

describe("maxOpenSessions: idle sessions are released and loaded again from the log", () => {
  it("opening a second session releases the first; the Session the host kept loads itself again at its next operation and carries on", async () => {
    const { runtime: starting, provider } = setup([{ content: "First answer." }, { content: "Other answer." }, { content: "Second answer." }]);
    const runtime = await starting;
    const first = await runtime.openSession("first");
    expect((await first.send("one")).status).toBe("completed");
    const other = await runtime.openSession("other");
    expect((await other.send("hi")).status).toBe("completed");

    // Released: what it held in memory is gone, so reading it without loading it is refused, plainly.
    expect(first.loaded).toBe(false);
    expect(() => first.state()).toThrow(SessionStateError);
    expect(() => first.outcome()).toThrow(/released from memory \(maxOpenSessions\)/);

    // Its next operation reads the log and goes on from the turn it recorded.
    expect(await first.send("two")).toMatchObject({ status: "completed", text: "Second answer." });
    expect(messagesOf(first)).toEqual(["user: one", "agent: First answer.", "user: two", "agent: Second answer."]);
    // Using it released the other one: one session in memory.
    expect(other.loaded).toBe(false);
    // One Session per ID: opening a released session the host still holds gives that same object, loaded.
    expect(await runtime.openSession("other")).toBe(other);
    expect(other.loaded).toBe(true);
    expect(messagesOf(other)).toEqual(["user: hi", "agent: Other answer."]);
    provider.assertConsumed();
    expect(await runtime.replay("first")).toMatchObject({ identical: true });
    await runtime.close();
  });

  it("a released session that was parked for approval is answered and resumed through the Session the host kept: the tool runs once", async () => {
    const { runtime: starting, ws } = setup([{ toolCalls: [write("b.txt", "new", "call_w")] }, { content: "Other answer." }, { content: "Written." }]);
    const runtime = await starting;
    const parked = await runtime.openSession("parked");
    expect((await parked.send("write b.txt")).status).toBe("awaiting-approval");
    await (await runtime.openSession("other")).send("hi");
    expect(parked.loaded).toBe(false);

    await parked.approve("call_w", { by: "alice" });
    expect(await parked.resume()).toMatchObject({ status: "completed", text: "Written." });
    expect(ws.ran).toEqual(["write_file b.txt"]);
    expect(ws.files.get("b.txt")).toBe("new");
    expect(await runtime.replay("parked")).toMatchObject({ identical: true });
    await runtime.close();
  });

  it("openSession(id) of a released session the host let go of reopens it from the log", async () => {
    const { runtime: starting } = setup([{ content: "First answer." }, { content: "Other answer." }, { content: "Again." }]);
    const runtime = await starting;
    await (await runtime.openSession("first")).send("one");
    await (await runtime.openSession("other")).send("hi");
    const reopened = await runtime.openSession("first", { create: false });
    expect(reopened.outcome()).toMatchObject({ status: "completed", text: "First answer." });
    expect(await reopened.send("two")).toMatchObject({ status: "completed", text: "Again." });
    expect(messagesOf(reopened)).toEqual(["user: one", "agent: First answer.", "user: two", "agent: Again."]);
    await runtime.close();
  });

  it("a released session loads what another writer appended meanwhile", async () => {
    const log = new MemoryEventLog({ clock: steppingClock(), ids: sequentialIds("event") });
    const { runtime: starting } = setup([{ content: "Here." }, { content: "Other answer." }, { content: "Seen both." }], { log });
    const runtime = await starting;
    const shared = await runtime.openSession("shared");
    await shared.send("one");
    await (await runtime.openSession("other")).send("hi");
    expect(shared.loaded).toBe(false);

    const elsewhere = await createRuntime({ log, provider: scriptedProvider([{ content: "From elsewhere." }]), tools: workspace().tools });
    await (await elsewhere.openSession("shared", { create: false })).send("from another host");
    await elsewhere.close();

    expect(await shared.send("three")).toMatchObject({ status: "completed", text: "Seen both." });
    expect(messagesOf(shared)).toEqual(["user: one", "agent: Here.", "user: from another host", "agent: From elsewhere.", "user: three", "agent: Seen both."]);
    await runtime.close();
  });

  it("a session parked on a call whose arguments hold a secret stays in memory: the approved call runs with the real values", async () => {
    const received: unknown[] = [];
    const deploy = defineTool({
      name: "deploy",
      description: "deploy",
      risk: "external-side-effect",
      input: z.object({ apiKey: z.string(), target: z.string() }),
      run: (input) => {
        received.push(input);
        return "deployed";
      },
    });
    const secret = exampleSecrets["openai-key"];
    const runtime = await createRuntime({
      log: new MemoryEventLog(),
      provider: scriptedProvider([{ toolCalls: [{ id: "call_d", name: "deploy", arguments: JSON.stringify({ apiKey: secret, target: "prod" }) }] }, { content: "Other answer." }, { content: "Deployed." }]),
      tools: [deploy],
      maxOpenSessions: 1,
    });
    const parked = await runtime.openSession("parked");
    const held = await parked.send("deploy");
    expect(held.pendingApprovals[0]?.input).toEqual({ apiKey: "[REDACTED]", target: "prod" });
    await (await runtime.openSession("other")).send("hi");
    // Its real arguments live only in this process's memory (the log holds them redacted).
    expect(parked.loaded).toBe(true);
    await parked.approve("call_d", { by: "alice" });
    expect(await parked.resume()).toMatchObject({ status: "completed", text: "Deployed." });
    expect(received).toEqual([{ apiKey: secret, target: "prod" }]);
    await runtime.close();
  });

  it("a session with an operation running, or with a wait for its answers, is never released", async () => {
    let finish!: (text: string) => void;
    let toolStarted!: () => void;
    const started = new Promise<void>((resolve) => (toolStarted = resolve));
    const slowTool = defineTool({
      name: "slow_read",
      description: "Reads slowly",
      risk: "read-only-local",
      input: z.object({}),
      run: () =>
        new Promise<string>((done) => {
          finish = done;
          toolStarted();
        }),
    });
    const ws = workspace();
    let autoResumed!: (outcome: SendOutcome) => void;
    const resumed = new Promise<SendOutcome>((resolve) => (autoResumed = resolve));
    const runtime: Runtime = await createRuntime({
      log: new MemoryEventLog(),
      provider: scriptedProvider([
        { toolCalls: [{ id: "call_s", name: "slow_read", arguments: "{}" }] },
        { content: "Other answer." },
        { content: "Slow done." },
        { toolCalls: [write("c.txt", "x", "call_w")] },
        { content: "Third answer." },
        { content: "Wrote c." },
      ]),
      tools: [...ws.tools, slowTool],
      maxOpenSessions: 1,
      autoResume: { onOutcome: (outcome) => autoResumed(outcome) },
    });
    // Running: a send whose tool has not returned.
    const busy = await runtime.openSession("busy");
    const sending = busy.send("read slowly");
    await started;
    await (await runtime.openSession("other")).send("hi");
    expect(busy.loaded).toBe(true);
    finish("read");
    expect(await sending).toMatchObject({ status: "completed", text: "Slow done." });

    // Waited on: an auto-resume waits for the parked session's answers.
    const parked = await runtime.openSession("parked");
    expect((await parked.send("write c.txt")).status).toBe("awaiting-approval");
    await (await runtime.openSession("third")).send("hi");
    expect(parked.loaded).toBe(true);
    await parked.approve("call_w", { by: "alice" });
    expect(await resumed).toMatchObject({ status: "completed", text: "Wrote c." });
    expect(ws.ran).toEqual(["write_file c.txt"]);
    await runtime.close();
  });

  it("a session released and loaded again exports each of its spans once: what the live tracer exported equals what the log derives", async () => {
    const traced = memoryTracer();
    const { runtime: starting } = setup([{ toolCalls: [write("b.txt", "new", "call_w")] }, { content: "Other answer." }, { content: "Written." }], {
      tracer: traced.tracer,
      clock: steppingClock(),
    });
    const runtime = await starting;
    const parked = await runtime.openSession("parked");
    await parked.send("write b.txt");
    await (await runtime.openSession("other")).send("hi");
    expect(parked.loaded).toBe(false);
    await parked.approve("call_w", { by: "alice" });
    await parked.resume();
    const derived = [];
    for (const sessionId of ["parked", "other"]) derived.push(...normalizeOtlp(otlpJson(sessionSpans(await runtime.events(sessionId), { sessionId }), { sessionId })));
    await runtime.close();
    await traced.provider.forceFlush();
    const live = normalizeReadable(traced.exporter.getFinishedSpans(), traced.started);
    // Both sessions' spans, in one comparable order (trace IDs are the tracer's own).
    const comparable = (spans: typeof live) => spans.map(({ traceRoot: _traceRoot, ...span }) => JSON.stringify(span)).sort();
    expect(live.map((span) => span.name)).toContain("invoke_agent");
    expect(comparable(live)).toEqual(comparable(derived));
  });

  it("is a positive whole number", async () => {
    for (const maxOpenSessions of [0, -1, 1.5]) {
      await expect(createRuntime({ provider: scriptedProvider([]), log: new MemoryEventLog(), maxOpenSessions })).rejects.toThrow(ConfigError);
    }
  });
});

describe("10 000 sessions opened in turn by one runtime", () => {
  it("keep its heap under the documented bound: baseline + maxOpenSessions (default 1 000) × 13 KB × 2 (docs/performance.md)", async () => {
    const directory = await temporary("turnlog-heap-");
    // Without the suite's schema check of every built event (TURNLOG_CHECK_EVENTS): it changes no
    // memory, only the time 10 000 sessions take.
    const { TURNLOG_CHECK_EVENTS: _checked, ...env } = process.env;
    const child = startNodeChild(["--expose-gc", "--import", "tsx", "test/support/many-sessions-heap-child.ts"], [directory, "10050"], env);
    const { code } = await child.exited;
    expect(code, child.stderr()).toBe(0);
    const figure = (name: string) => Number(child.lines.find((line) => line.startsWith(`${name} `))?.split(" ")[1]);
    const baseline = figure("baseline");
    const after = figure("after");
    expect(baseline).toBeGreaterThan(0);
    // Without the bound the same run ends about 129 MB above its baseline (12.9 KB a session).
    expect(after - baseline).toBeLessThan(1000 * 13 * 1024 * 2);
  });
});
