import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { ApprovalMode, RiskClass, TurnlogEvent } from "../src/index.js";
import { riskClasses } from "../src/index.js";
import { answerOutOfTime } from "../src/core/approval-deadlines.js";
import { decideCommand } from "../src/core/session-decider.js";
import { SessionFold } from "../src/core/session-fold.js";
import { SessionStateError } from "../src/errors/session-state-error.js";
import { gateToolCall, type GatedTool } from "../src/policy/gate.js";
import { resolvePolicy } from "../src/policy/default-policy.js";
import { recordForTest } from "../src/testing/given-when-then.js";
import { gated, normalized, planned, providerRequested, providerResponded, sessionStarted, turnStarted, userMessage } from "../test/support/events.js";

/* Decisions version 7's invariants: a host's needsApproval never loosens the gate; an answer is in time exactly when the decider and replay say so. */

const modes: ApprovalMode[] = ["read-only", "ask", "auto-edit", "full-auto"];
const rule = fc.record({ tool: fc.option(fc.constantFrom("read_file", "write_file"), { nil: undefined }), risk: fc.option(fc.constantFrom(...riskClasses), { nil: undefined }) }, { requiredKeys: [] });

describe("a host's needsApproval answer", () => {
  it("only ever turns an allow into an ask: an ask, a deny or a block stays exactly as the policy decided", () => {
    fc.assert(
      fc.property(
        fc.record({
          name: fc.constantFrom("read_file", "write_file"),
          risk: fc.constantFrom(...riskClasses),
          mode: fc.constantFrom(...modes),
          trusted: fc.boolean(),
          deny: fc.array(rule, { maxLength: 2 }),
          allow: fc.array(rule, { maxLength: 2 }),
          approved: fc.boolean(),
          needsApproval: fc.boolean(),
          failed: fc.boolean(),
        }),
        (c) => {
          const tool: GatedTool = { name: c.name, risk: c.risk };
          const policy = resolvePolicy({ approvalMode: c.mode, workspace: { root: "/workspace", trusted: c.trusted }, deny: c.deny, allow: c.allow, blockedRiskClasses: [] as RiskClass[] });
          const plan = { callId: "c", status: "planned" as const, tool: c.name, input: {} };
          const environment = { decisionsVersion: 7, ...(c.approved ? { approvedTools: [c.name] } : {}) };
          const without = gateToolCall(plan, tool, policy, environment);
          const hostRule = c.failed ? { needsApproval: true, error: "boom" } : { needsApproval: c.needsApproval };
          const withRule = gateToolCall(plan, tool, policy, { ...environment, hostRule });
          if (without.decision !== "allow") expect(withRule).toEqual(without);
          else if (c.failed) expect(withRule).toMatchObject({ decision: "ask", rule: "host:needs-approval-failed" });
          else if (c.needsApproval) expect(withRule).toMatchObject({ decision: "ask", rule: "host:needs-approval" });
          else expect(withRule).toEqual(without);
        },
      ),
    );
  });
});

describe("an approval deadline", () => {
  const start = Date.UTC(2026, 0, 1);
  /** A call held by the 8th event (recorded at start + 7 s) under a timeout of `timeoutMs`. */
  const heldFold = (timeoutMs: number) => {
    const events: TurnlogEvent[] = [
      sessionStarted({ policy: resolvePolicy({ workspace: { root: "/workspace", trusted: true }, approvalTimeoutMs: timeoutMs }), decisionsVersion: 7, environment: { tempDir: "/tmp", homeDir: "/home/ann" } }),
      userMessage(),
      turnStarted(),
      providerRequested(),
      providerResponded([{ id: "c1", argumentsText: "{}" }]),
      normalized(["c1"]),
      planned(["c1"]),
      gated({ c1: "ask" }),
    ];
    const fold = new SessionFold();
    fold.applyAll(recordForTest(events, { startAt: start }));
    return fold;
  };

  it("is where the decider starts refusing answers and owing the timeout, and replay agrees on both sides of it", () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 86_400_000 }), fc.integer({ min: 0, max: 172_800_000 }), (timeoutMs, afterGate) => {
        const fold = heldFold(timeoutMs);
        const at = start + 7_000 + afterGate;
        const inTime = afterGate < timeoutMs;
        const expired = decideCommand({ type: "expireApprovals", recordedAt: at }, fold);
        expect(expired.length).toBe(inTime ? 0 : 1);
        const approve = () => decideCommand({ type: "approveCall", callId: "c1", by: "ann", recordedAt: at }, fold);
        if (inTime) {
          const [granted] = approve();
          const [recorded] = recordForTest([granted as TurnlogEvent], { startAt: at - 8_000, startPosition: 9 });
          expect(recorded!.meta.recordedAt).toBe(new Date(at).toISOString());
          expect(answerOutOfTime(fold.state, recorded!)).toBeUndefined();
          // The same approval recorded at the deadline is a divergence.
          const [late] = recordForTest([granted as TurnlogEvent], { startAt: start + 7_000 + timeoutMs - 8_000, startPosition: 9 });
          expect(answerOutOfTime(fold.state, late!)).toBeDefined();
        } else {
          expect(approve).toThrow(SessionStateError);
          const [recorded] = recordForTest([expired[0] as TurnlogEvent], { startAt: at - 8_000, startPosition: 9 });
          expect(answerOutOfTime(fold.state, recorded!)).toBeUndefined();
        }
      }),
    );
  });
});
