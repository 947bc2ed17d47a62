import { describe, expect, it } from "vitest";
import { z } from "zod";
import type { TurnlogEvent } from "../../src/contracts/events.js";
import { approvalDeadlines, expiredApprovals } from "../../src/core/approval-deadlines.js";
import { SessionStateError } from "../../src/errors/session-state-error.js";
import { resolvePolicy } from "../../src/policy/default-policy.js";
import { callFingerprint } from "../../src/policy/fingerprint.js";
import { given } from "../../src/testing/given-when-then.js";
import { defineTool } from "../../src/tools/define-tool.js";
import { ToolRegistry } from "../../src/tools/tool-registry.js";
import { gated, normalized, planned, providerRequested, providerResponded, sessionStarted, turnStarted, userMessage } from "../support/events.js";

/*
 * Decisions version 7 (docs/policy.md, "Approval deadlines" and "Per-call rules from the host"):
 * a held call's deadline is its gate event's recorded time plus policy.approvalTimeoutMs; an answer
 * is judged at the time its append carries; the continuer denies what is past it. A tool's
 * needsApproval answer, logged before the gate, makes the gate ask. `given` records events one
 * second apart from 2026-01-01T00:00:00Z, so the gate below (the 8th event) is at 00:00:07.
 */

const start = Date.UTC(2026, 0, 1);
const heldAt = start + 7_000;
const timeoutMs = 5_000;
const deadline = heldAt + timeoutMs;

const policy = resolvePolicy({ workspace: { root: "/workspace", trusted: true }, approvalTimeoutMs: timeoutMs });
const started = (decisionsVersion = 7) => sessionStarted({ policy, decisionsVersion, environment: { tempDir: "/tmp", homeDir: "/home/ann" } });
const turn = [userMessage(), turnStarted(), providerRequested(), providerResponded([{ id: "c1", argumentsText: "{}" }, { id: "c2", argumentsText: "{}" }]), normalized(["c1", "c2"]), planned(["c1", "c2"])];
/** Two calls held for a person at 00:00:07, under decisions version `version`. */
const held = (version = 7): TurnlogEvent[] => [started(version), ...turn, gated({ c1: "ask", c2: "ask" })];

const timedOut = (callId: string): TurnlogEvent => ({
  type: "turn.approval.denied",
  data: { turnId: "turn-1", callId, fingerprint: "f", by: "turnlog", scope: "call", rule: "approval:timeout" },
});

describe("an answer is judged at the recorded time its append carries", () => {
  it("an approval recorded before the deadline is recorded", () => {
    given(held())
      .when({ type: "approveCall", callId: "c1", by: "ann", recordedAt: deadline - 1 })
      .then([{ type: "turn.approval.granted", data: { turnId: "turn-1", callId: "c1", fingerprint: "f", by: "ann", scope: "call" } }]);
  });

  it("an approval or a denial at or after the deadline is refused: the call is denied by approval:timeout", () => {
    given(held()).when({ type: "approveCall", callId: "c1", by: "ann", recordedAt: deadline }).thenThrows(SessionStateError);
    given(held()).when({ type: "denyCall", callId: "c2", by: "ann", recordedAt: deadline + 60_000 }).thenThrows(SessionStateError);
  });

  it("an answer to a call with a deadline must say when it is recorded", () => {
    given(held()).when({ type: "approveCall", callId: "c1", by: "ann" }).thenThrows(TypeError);
  });

  it("under decisions version 6 the same policy sets no deadline: a late answer is recorded", () => {
    given(held(6))
      .when({ type: "approveCall", callId: "c1", by: "ann", recordedAt: deadline + 3_600_000 })
      .then([{ type: "turn.approval.granted", data: { turnId: "turn-1", callId: "c1", fingerprint: "f", by: "ann", scope: "call" } }]);
    given(held(6)).when({ type: "expireApprovals", recordedAt: deadline + 3_600_000 }).then([]);
  });
});

describe("expireApprovals: the continuer denies what is past its deadline", () => {
  it("before the deadline nothing is denied", () => {
    given(held()).when({ type: "expireApprovals", recordedAt: deadline - 1 }).then([]);
  });

  it("at the deadline every held call is denied, rule approval:timeout, by turnlog", () => {
    given(held()).when({ type: "expireApprovals", recordedAt: deadline }).then([timedOut("c1"), timedOut("c2")]);
  });

  it("a call a person answered in time is not denied again", () => {
    const answered: TurnlogEvent = { type: "turn.approval.granted", data: { turnId: "turn-1", callId: "c1", fingerprint: "f", by: "ann", scope: "call" } };
    given([...held(), answered]).when({ type: "expireApprovals", recordedAt: deadline + 1 }).then([timedOut("c2")]);
  });

  it("a policy without approvalTimeoutMs holds calls for ever", () => {
    const noTimeout = sessionStarted({ decisionsVersion: 7, environment: { tempDir: "/tmp", homeDir: "/home/ann" } });
    given([noTimeout, ...turn, gated({ c1: "ask", c2: "ask" })]).when({ type: "expireApprovals", recordedAt: deadline + 3_600_000 }).then([]);
  });

  it("the denials end the wait: the turn goes on to its packets", () => {
    given([...held(), timedOut("c1")]).when(timedOut("c2")).then({ state: "packetizing", actions: ["packetizeResults"] });
  });

  it("approvalDeadlines and expiredApprovals read the deadline from the log alone", () => {
    const fold = given(held()).when(timedOut("c1")).then({ state: "awaitingApproval" });
    expect(approvalDeadlines(fold.state)).toEqual([{ callId: "c2", deadline }]);
    expect(expiredApprovals(fold.state, deadline - 1)).toEqual([]);
    expect(expiredApprovals(fold.state, deadline)).toEqual(["c2"]);
  });
});

describe("the model is told a timed-out call did not run", () => {
  const registry = new ToolRegistry([defineTool({ name: "read_file", description: "Read", risk: "read-only-local", input: z.object({}), run: () => "" })]);

  it("its packet says nobody approved it in time (error code approval-timeout)", () => {
    const content = "Error: not run: nobody approved this call before its approval deadline passed.";
    const packet = (callId: string) => ({ callId, tool: "read_file", ok: false, errorCode: "approval-timeout", content, truncated: false, originalChars: content.length });
    given([...held(), timedOut("c1"), timedOut("c2")])
      .whenDeciding("packetizeResults", { registry })
      .then({ type: "turn.results.packetized", data: { turnId: "turn-1", packets: [packet("c1"), packet("c2")] } });
  });
});

describe("a tool's needsApproval answer, logged before the gate, makes it ask", () => {
  const registry = new ToolRegistry([defineTool({ name: "read_file", description: "Read", risk: "read-only-local", input: z.object({}), run: () => "" })]);
  const answered = (rules: { callId: string; needsApproval: boolean; error?: string }[]): TurnlogEvent => ({
    type: "session.environment.observed",
    data: { realPaths: [], hostRules: rules.map((rule) => ({ tool: "read_file", ...rule })) },
  });
  const gateOf = (decisions: [callId: string, decision: "allow" | "ask" | "deny", rule: string][], approvalMode: "ask" | "read-only" = "ask"): TurnlogEvent => ({
    type: "turn.tool_calls.gated",
    data: { turnId: "turn-1", approvalMode, decisions: decisions.map(([callId, decision, rule]) => ({ callId, decision, rule, riskClass: "read-only-local", fingerprint: callFingerprint("read_file", {}) })) },
  });
  const deciding = (events: TurnlogEvent[]) => given(events).whenDeciding("gateToolCalls", { registry });
  const readOnly = (version = 7) => sessionStarted({ policy: resolvePolicy({ workspace: { root: "/workspace", trusted: true }, approvalMode: "read-only" }), decisionsVersion: version, environment: { tempDir: "/tmp", homeDir: "/home/ann" } });
  const denyReads = sessionStarted({ policy: resolvePolicy({ workspace: { root: "/workspace", trusted: true }, deny: [{ tool: "read_file" }] }), decisionsVersion: 7, environment: { tempDir: "/tmp", homeDir: "/home/ann" } });

  it("true asks where the policy allows (host:needs-approval), false leaves the policy's allow, a failure asks (host:needs-approval-failed)", () => {
    deciding([started(), ...turn, answered([{ callId: "c1", needsApproval: true }, { callId: "c2", needsApproval: false }])]).then(gateOf([["c1", "ask", "host:needs-approval"], ["c2", "allow", "mode:ask"]]));
    deciding([started(), ...turn, answered([{ callId: "c1", needsApproval: true, error: "boom" }])]).then(gateOf([["c1", "ask", "host:needs-approval-failed"], ["c2", "allow", "mode:ask"]]));
  });

  it("in read-only mode a read the mode allows asks too", () => {
    deciding([readOnly(), ...turn, answered([{ callId: "c1", needsApproval: true }])]).then(gateOf([["c1", "ask", "host:needs-approval"], ["c2", "allow", "mode:read-only"]], "read-only"));
  });

  it("it never loosens a deny", () => {
    deciding([denyReads, ...turn, answered([{ callId: "c1", needsApproval: true }, { callId: "c2", needsApproval: false }])]).then(gateOf([["c1", "deny", "deny:tool=read_file"], ["c2", "deny", "deny:tool=read_file"]]));
  });

  it("under decisions version 6 the gate does not read it", () => {
    deciding([readOnly(6), ...turn, answered([{ callId: "c1", needsApproval: true }])]).then(gateOf([["c1", "allow", "mode:read-only"], ["c2", "allow", "mode:read-only"]], "read-only"));
  });
});
