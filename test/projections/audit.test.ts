import { describe, expect, it } from "vitest";
import { auditRows, createRuntime, type PolicyInput } from "../../src/index.js";
import type { EventLog } from "../../src/index.js";
import { MemoryEventLog, scriptedProvider } from "../../src/testing/index.js";
import type { ScriptStep } from "../../src/testing/index.js";
import { sequentialIds, steppingClock, workspace } from "../support/tools.js";

const read = (path: string, id?: string) => ({ ...(id ? { id } : {}), name: "read_file", arguments: JSON.stringify({ path }) });
const write = (path: string, content: string, id?: string) => ({ ...(id ? { id } : {}), name: "write_file", arguments: JSON.stringify({ path, content }) });

async function setup(script: ScriptStep[], options: { log?: EventLog; policy?: PolicyInput } = {}) {
  const ws = workspace();
  const log = options.log ?? new MemoryEventLog({ clock: steppingClock(), ids: sequentialIds("event") });
  const runtime = await createRuntime({
    log,
    provider: scriptedProvider(script),
    tools: ws.tools,
    clock: steppingClock(),
    ids: sequentialIds("session"),
    ...(options.policy ? { policy: options.policy } : {}),
  });
  const session = await runtime.openSession("s1");
  return { ws, runtime, session, log };
}

describe("auditRows", () => {
  it("records an allowed call that succeeded, with turn, position and timings; runtime.audit agrees", async () => {
    const { session, runtime } = await setup([{ toolCalls: [read("a.txt", "call_a")] }, { content: "alpha" }]);
    await session.send("read");
    const rows = auditRows(session.state());
    expect(rows).toEqual([
      {
        callId: "call_a",
        tool: "read_file",
        riskClass: "read-only-local",
        decision: "allow",
        rule: "mode:ask",
        outcome: "succeeded",
        turn: 1,
        turnId: expect.any(String),
        position: expect.any(Number),
        startedAt: expect.any(String),
        endedAt: expect.any(String),
        durationMs: expect.any(Number),
        source: "model",
      },
    ]);
    const events = await runtime.events("s1");
    expect(events[rows[0]!.position - 1]?.type).toBe("turn.tool.succeeded");
    expect(await runtime.audit("s1")).toEqual(rows);
  });

  it("keeps the gate's ask and the person's approval apart: ask, approved, succeeded", async () => {
    const { session } = await setup([{ toolCalls: [write("c.txt", "x", "call_w")] }, { content: "written" }]);
    const held = await session.send("write");
    expect(auditRows(session.state())).toMatchObject([{ callId: "call_w", decision: "ask", outcome: "pending", rule: "mode:ask" }]);
    await session.approve(held.pendingApprovals[0]!.callId, { by: "alice", note: "fine" });
    await session.resume();
    const [row] = auditRows(session.state());
    expect(row).toMatchObject({
      decision: "ask",
      outcome: "succeeded",
      riskClass: "workspace-write",
      approval: { granted: true, by: "alice", note: "fine", scope: "call" },
      approvedBy: "alice",
    });
  });

  it("a call the gate asked about and a person denied: decision ask, outcome denied", async () => {
    const { session } = await setup([{ toolCalls: [write("c.txt", "x")] }, { content: "ok" }]);
    const held = await session.send("write");
    await session.deny(held.pendingApprovals[0]!.callId, { by: "bob", note: "not now" });
    await session.resume();
    const [row] = auditRows(session.state());
    expect(row).toMatchObject({ decision: "ask", outcome: "denied", approval: { granted: false, by: "bob", note: "not now", scope: "call" } });
    expect(row?.approvedBy).toBeUndefined();
    expect(row?.errorCode).toBeDefined();
    expect(row?.startedAt).toBeUndefined();
  });

  it("a call a deny rule refused: decision deny, outcome denied, the rule named", async () => {
    const { session } = await setup([{ toolCalls: [write("c.txt", "x")] }, { content: "ok" }], { policy: { deny: [{ tool: "write_file" }] } });
    await session.send("write");
    expect(auditRows(session.state())).toMatchObject([{ tool: "write_file", decision: "deny", rule: "deny:tool=write_file", outcome: "denied" }]);
  });

  it("a hard block (a write outside the workspace): decision block, outcome blocked", async () => {
    const { session, ws } = await setup([{ toolCalls: [write("../x", "x")] }, { content: "ok" }]);
    await session.send("write");
    expect(ws.ran).toEqual([]);
    expect(auditRows(session.state())).toMatchObject([{ decision: "block", rule: "hard-block:path-outside-workspace", outcome: "blocked" }]);
  });

  it("a rejected plan (unknown tool, malformed arguments): no decision, rule rejected:<reason>", async () => {
    const { session } = await setup([
      { toolCalls: [{ name: "delete_everything", arguments: "{}" }, { name: "read_file", arguments: '{"path":' }] },
      { content: "sorry" },
    ]);
    await session.send("go");
    expect(auditRows(session.state())).toMatchObject([
      { tool: "delete_everything", decision: null, rule: "rejected:unknown-tool", outcome: "rejected", riskClass: null, errorCode: expect.any(String) },
      { tool: "read_file", decision: null, rule: "rejected:malformed-arguments", outcome: "rejected", riskClass: "read-only-local" },
    ]);
  });

  it("a tool that threw: outcome failed, with its error code", async () => {
    const { session } = await setup([{ toolCalls: [read("missing.txt"), read("a.txt")] }, { content: "one failed" }]);
    await session.send("go");
    const rows = auditRows(session.state());
    expect(rows.map((row) => [row.decision, row.outcome])).toEqual([
      ["allow", "failed"],
      ["allow", "succeeded"],
    ]);
    expect(rows[0]?.errorCode).toEqual(expect.any(String));
    expect(rows[0]?.durationMs).toEqual(expect.any(Number));
  });

  it("a call held for a person is pending until answered", async () => {
    const { session, runtime } = await setup([{ toolCalls: [read("a.txt"), write("c.txt", "x")] }]);
    await session.send("go");
    expect((await runtime.audit("s1")).map((row) => [row.tool, row.decision, row.outcome])).toEqual([
      ["read_file", "allow", "pending"],
      ["write_file", "ask", "pending"],
    ]);
  });

  it("a call in doubt after a crash is interrupted", async () => {
    const first = await setup([{ toolCalls: [read("a.txt"), read("b.txt")] }]);
    await first.session.send("read").catch(() => undefined);
    const events = await first.log.readStream("session-s1");
    const crashed = new MemoryEventLog();
    const cut = events.findIndex((event) => event.type === "turn.tool.started") + 1;
    for (const event of events.slice(0, cut)) await crashed.appendToStream("session-s1", [{ type: event.type, data: event.data }]);
    const { session } = await setup([{ content: "one was interrupted" }], { log: crashed });
    expect(auditRows(session.state()).map((row) => row.outcome)).toEqual(["interrupted", "pending"]);
    await session.resume();
    expect(auditRows(session.state()).map((row) => row.outcome)).toEqual(["interrupted", "succeeded"]);
  });

  it("a later call allowed by an approval of the whole tool names who approved it", async () => {
    const { session } = await setup([{ toolCalls: [write("c.txt", "1")] }, { toolCalls: [write("d.txt", "2")] }, { content: "both written" }]);
    const held = await session.send("write twice");
    await session.approve(held.pendingApprovals[0]!.callId, { by: "alice", scope: "tool" });
    await session.resume();
    const [first, second] = auditRows(session.state());
    expect(first).toMatchObject({ turn: 1, decision: "ask", outcome: "succeeded", approval: { granted: true, by: "alice", scope: "tool" }, approvedBy: "alice" });
    expect(second).toMatchObject({ turn: 2, decision: "allow", rule: "approval:tool=write_file", outcome: "succeeded", approvedBy: "alice" });
    expect(second?.approval).toBeUndefined();
  });

  it("host-routed calls come after the model's, with no turn and source host", async () => {
    const { session, runtime } = await setup([{ toolCalls: [read("a.txt")] }, { content: "alpha" }]);
    await session.send("read");
    await session.runTool("read_file", { path: "b.txt" }, { by: "ui" });
    await session.runTool("write_file", { path: "c.txt", content: "x" }, { by: "ui" });
    await session.runTool("write_file", { path: "c.txt", content: "x" }, { by: "ui", approvedBy: "carol" });
    await session.runTool("write_file", { path: "../x", content: "x" }, { by: "ui", approvedBy: "carol" });
    await session.runTool("nope", {}, { by: "ui" });
    const rows = await runtime.audit("s1");
    expect(rows.map((row) => [row.source, row.turn, row.tool, row.decision, row.outcome, row.approvedBy])).toEqual([
      ["model", 1, "read_file", "allow", "succeeded", undefined],
      ["host", null, "read_file", "allow", "succeeded", undefined],
      ["host", null, "write_file", "ask", "denied", undefined],
      ["host", null, "write_file", "ask", "succeeded", "carol"],
      ["host", null, "write_file", "block", "blocked", undefined],
      ["host", null, "nope", null, "rejected", undefined],
    ]);
    expect(rows[2]?.errorCode).toBe("needs-approval");
    expect(rows[5]?.rule).toBe("rejected:unknown-tool");
    expect(rows[1]).toMatchObject({ callId: "native-1", turnId: null, durationMs: expect.any(Number) });
  });
});
