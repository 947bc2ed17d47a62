import { describe, expect, it } from "vitest";
import { createRuntime, MemoryEventLog, type EventOf, type GateDecisionRecord } from "../../src/index.js";
import { scriptedProvider } from "../../src/testing/index.js";
import { decisionChanges, formatDecisionChange, historyChange, turnChange } from "../../src/replay/what-if.js";
import { sequentialIds, steppingClock, workspace } from "../support/tools.js";

const read = (path: string) => ({ name: "read_file", arguments: JSON.stringify({ path }) });
const write = (path: string, content: string) => ({ name: "write_file", arguments: JSON.stringify({ path, content }) });

/** Two reads, then a read and a write, then an answer, in `auto-edit` mode: four calls, all allowed. */
async function recordedSession() {
  const ws = workspace();
  const runtime = await createRuntime({
    log: new MemoryEventLog(),
    provider: scriptedProvider([{ toolCalls: [read("a.txt"), read("b.txt")] }, { toolCalls: [read("a.txt"), write("c.txt", "ab")] }, { content: "done" }]),
    tools: ws.tools,
    policy: { approvalMode: "auto-edit", workspace: { root: "/workspace", trusted: true } },
    clock: steppingClock(),
    ids: sequentialIds("s"),
  });
  const session = await runtime.openSession("what-if");
  expect(await session.send("combine")).toMatchObject({ status: "completed" });
  const callIds = [...session.state().calls.values()].map((call) => ({ callId: call.callId, name: call.name }));
  return { runtime, callIds };
}

describe("what-if replay", () => {
  it("under the recorded policy: identical, no changes", async () => {
    const { runtime } = await recordedSession();
    const report = await runtime.replay("what-if");
    expect(report).toMatchObject({ identical: true, changes: [] });
    expect(report.compared).toBeGreaterThan(0);
    // Restating the recorded mode changes nothing either.
    expect(await runtime.replay("what-if", { policy: { approvalMode: "auto-edit" } })).toMatchObject({ identical: true, changes: [] });
  });

  it("a deny rule for one tool lists exactly that tool's calls, one entry per call", async () => {
    const { runtime, callIds } = await recordedSession();
    const report = await runtime.replay("what-if", { policy: { deny: [{ tool: "write_file" }] } });
    const writes = callIds.filter((call) => call.name === "write_file");
    expect(writes).toHaveLength(1);
    expect(report.identical).toBe(false);
    expect(report.changes).toEqual([
      { position: expect.any(Number), kind: "call", callId: writes[0]!.callId, tool: "write_file", before: { decision: "allow", rule: expect.stringMatching(/^mode:/) }, after: { decision: "deny", rule: expect.stringMatching(/^deny:/) } },
    ]);
  });

  it("a rule that hits several calls across turns lists each of them, in log order", async () => {
    const { runtime, callIds } = await recordedSession();
    const report = await runtime.replay("what-if", { policy: { deny: [{ tool: "read_file" }] } });
    const reads = callIds.filter((call) => call.name === "read_file").map((call) => call.callId);
    expect(reads).toHaveLength(3);
    expect(report.changes.map((change) => change.callId)).toEqual(reads);
    expect(report.changes.every((change) => change.tool === "read_file" && change.before?.decision === "allow" && change.after?.decision === "deny")).toBe(true);
    const positions = report.changes.map((change) => change.position);
    expect(positions[0]).toBe(positions[1]); // both reads of the first turn are in one gated event
    expect(positions[2]).toBeGreaterThan(positions[0]!);
  });

  it("another approval mode changes the deciding rule of every call it decides, and the write's decision", async () => {
    const { runtime } = await recordedSession();
    const report = await runtime.replay("what-if", { policy: { approvalMode: "ask" } });
    // Every call was decided by the mode, so every rule changes; only the write's decision does.
    expect(report.changes.map((change) => [change.tool, change.before?.decision, change.after?.decision, change.after?.rule])).toEqual([
      ["read_file", "allow", "allow", "mode:ask"],
      ["read_file", "allow", "allow", "mode:ask"],
      ["read_file", "allow", "allow", "mode:ask"],
      ["write_file", "allow", "ask", "mode:ask"],
    ]);
    expect(report.identical).toBe(false);
  });
});

describe("decisionChanges", () => {
  const entry = (callId: string, decision: "allow" | "ask" | "deny", rule: string): GateDecisionRecord => ({ callId, decision, rule, riskClass: null, fingerprint: "f" });
  const gated = (...decisions: GateDecisionRecord[]): EventOf<"turn.tool_calls.gated"> => ({ type: "turn.tool_calls.gated", data: { turnId: "t", approvalMode: "ask", decisions } });
  const tools: Record<string, string> = { c1: "read_file", c2: "write_file", c3: "list_dir" };
  const toolOf = (callId: string) => tools[callId];

  it("compares by callId, not by index, and reports a call missing on one side with null", () => {
    const logged = gated(entry("c1", "allow", "mode:ask"), entry("c2", "ask", "mode:ask"));
    const recomputed = gated(entry("c2", "allow", "allow:tool=write_file"), entry("c1", "allow", "mode:ask"), entry("c3", "allow", "mode:ask"));
    const changes = decisionChanges(7, logged, recomputed, toolOf);
    expect(changes).toEqual([
      { position: 7, kind: "call", callId: "c2", tool: "write_file", before: { decision: "ask", rule: "mode:ask" }, after: { decision: "allow", rule: "allow:tool=write_file" } },
      { position: 7, kind: "call", callId: "c3", tool: "list_dir", before: null, after: { decision: "allow", rule: "mode:ask" } },
    ]);
    expect(changes.map(formatDecisionChange)).toEqual(["#7 c2 write_file: ask (mode:ask) → allow (allow:tool=write_file)", "#7 c3 list_dir: none → allow (mode:ask)"]);
  });

  it("a gate decision the code no longer owes changes every logged call to null", () => {
    expect(decisionChanges(3, gated(entry("c1", "allow", "mode:ask")), undefined, toolOf)).toEqual([
      { position: 3, kind: "call", callId: "c1", tool: "read_file", before: { decision: "allow", rule: "mode:ask" }, after: null },
    ]);
  });

  it("native calls compare their one decision; other events have none", () => {
    const native = (decision: GateDecisionRecord | null): EventOf<"session.native_tool.decided"> => ({ type: "session.native_tool.decided", data: { callId: "c1", plan: { callId: "c1", status: "planned", tool: "read_file" }, decision, runs: true } });
    expect(decisionChanges(4, native(entry("c1", "allow", "mode:ask")), native(entry("c1", "deny", "deny:tool=read_file")), toolOf)).toHaveLength(1);
    expect(decisionChanges(4, native(entry("c1", "allow", "mode:ask")), native(entry("c1", "allow", "mode:ask")), toolOf)).toEqual([]);
    expect(decisionChanges(4, { type: "turn.tool.started", data: { turnId: "t", callId: "c1", tool: "read_file", group: 0 } }, undefined, toolOf)).toEqual([]);
  });

  it("as docs/replay.md shows it: under the default policy (untrusted workspace) full-auto alone still asks for a write; with trust it allows it", async () => {
    const runtime = await createRuntime({
      log: new MemoryEventLog(),
      provider: scriptedProvider([{ toolCalls: [read("a.txt"), write("c.txt", "ab")] }]),
      tools: workspace().tools,
      clock: steppingClock(),
      ids: sequentialIds("s"),
    });
    const session = await runtime.openSession("s1");
    expect(await session.send("combine")).toMatchObject({ status: "awaiting-approval" });
    const writeChange = async (policy: Parameters<typeof runtime.replay>[1]) =>
      (await runtime.replay("s1", policy)).changes.find((change) => change.tool === "write_file");

    expect(await writeChange({ policy: { approvalMode: "full-auto" } })).toMatchObject({
      before: { decision: "ask", rule: "mode:ask" },
      after: { decision: "ask", rule: "workspace:untrusted" },
    });
    expect(await writeChange({ policy: { approvalMode: "full-auto", workspace: { trusted: true } } })).toMatchObject({
      before: { decision: "ask", rule: "mode:ask" },
      after: { decision: "allow", rule: "mode:full-auto" },
    });
  });
});

describe("historyChange: what a provider request does with the history", () => {
  const compacted = (unitsSummarized: number, beforePosition: number): EventOf<"session.history.compacted"> => ({ type: "session.history.compacted", data: { beforePosition, summary: "…", unitsSummarized, compressor: "deterministic" } });
  const diagnostic: EventOf<"session.diagnostic.recorded"> = { type: "session.diagnostic.recorded", data: { name: "structured-tool-history-selected", counts: {}, reasons: [] } };
  const requested: EventOf<"turn.provider.requested"> = { type: "turn.provider.requested", data: { turnId: "turn-5", attempt: 1, providerId: "p", format: "openai-chat", messageCount: 1, toolNames: [] } };

  it("lists a request that compacts where the other kept every unit, or compacts other units, and nothing when both agree", () => {
    const change = historyChange(44, compacted(2, 21), [diagnostic, diagnostic, requested]);
    expect(change).toEqual({ position: 44, kind: "history", callId: "", turnId: "turn-5", tool: "", before: { decision: "compact", rule: "2 units before #21" }, after: { decision: "keep", rule: "every unit" } });
    expect(formatDecisionChange(change!)).toBe("#44 turn-5 history: compact (2 units before #21) → keep (every unit)");
    expect(formatDecisionChange(historyChange(44, diagnostic, [compacted(1, 9), diagnostic, requested])!)).toBe("#44 turn-5 history: keep (every unit) → compact (1 unit before #9)");
    expect(historyChange(44, compacted(2, 21), [compacted(3, 30), diagnostic, requested])?.after).toEqual({ decision: "compact", rule: "3 units before #30" });
    expect(historyChange(44, compacted(2, 21), [compacted(2, 21), diagnostic, requested])).toBeUndefined();
    expect(historyChange(44, diagnostic, [diagnostic, requested])).toBeUndefined();
  });

  it("is not a request's batch on either side: no history change (a turn that fails instead is a turn change)", () => {
    const failed: EventOf<"turn.failed"> = { type: "turn.failed", data: { turnId: "turn-1", reason: "provider:transport:retries-exhausted" } };
    expect(historyChange(12, failed, [diagnostic, requested])).toBeUndefined();
    expect(historyChange(12, diagnostic, [failed])).toBeUndefined();
    // A batch that compacts where the other does not still requests the provider: no turn change.
    expect(turnChange(44, compacted(2, 21), [diagnostic, diagnostic, requested])).toBeUndefined();
    expect(turnChange(12, failed, [diagnostic, requested])).toMatchObject({ kind: "turn", before: { decision: "fail" }, after: { decision: "request" } });
  });
});
