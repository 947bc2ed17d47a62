import fc from "fast-check";
import { initialTransition, transition } from "xstate";
import { describe, expect, it } from "vitest";
import type { TurnEvent } from "../src/contracts/events.js";
import { latestDecisionsVersion } from "../src/core/decision-versions.js";
import { providerTurnMachine, type ProviderTurnInput } from "../machines/provider-turn.machine.js";
import { startTurn, stepTurn, type ProviderTurnStep } from "../machines/provider-turn.step.js";

// Random turn events, legal and illegal in any state, with the data the guards read varied: a
// small pool of call IDs so that answers and tool ends meet the calls a gate held or cleared.
const turnId = "turn-1";
const callId = fc.constantFrom("a", "b", "c");
const attempt = fc.integer({ min: 1, max: 6 });
const failureKind = fc.constantFrom("transport", "http-status", "timeout", "incomplete-stream", "truncated-tool-calls", "interrupted", "cancelled", "script-exhausted");

const anyTurnEvent: fc.Arbitrary<TurnEvent>[] = [
  attempt.map((n): TurnEvent => ({ type: "turn.provider.requested", data: { turnId, attempt: n, providerId: "p", format: "openai-chat", messageCount: 1, toolNames: [] } })),
  fc.tuple(attempt, fc.array(callId, { maxLength: 3 })).map(
    ([n, ids]): TurnEvent => ({
      type: "turn.provider.responded",
      data: { turnId, attempt: n, content: "", toolCalls: ids.map((id, index) => ({ index, id, name: "read_file", argumentsText: "{}" })), finishReason: ids.length > 0 ? "tool_calls" : "stop" },
    }),
  ),
  fc.tuple(attempt, failureKind, fc.boolean()).map(([n, kind, retryable]): TurnEvent => ({ type: "turn.provider.failed", data: { turnId, attempt: n, kind, retryable } })),
  fc.array(callId, { maxLength: 3 }).map(
    (ids): TurnEvent => ({
      type: "turn.tool_calls.normalized",
      data: { turnId, content: "", calls: ids.map((id, index) => ({ index, id, idSource: "provider", providerId: id, name: "read_file", argumentsText: "{}" })), nativeReplaySafe: true, unsafeReasons: [] },
    }),
  ),
  fc.array(callId, { maxLength: 3 }).map((ids): TurnEvent => ({ type: "turn.tool_calls.planned", data: { turnId, plans: ids.map((id) => ({ callId: id, status: "planned", tool: "read_file", input: {} })) } })),
  fc.array(fc.tuple(callId, fc.constantFrom("allow" as const, "ask" as const, "deny" as const, "block" as const)), { maxLength: 3 }).map(
    (decisions): TurnEvent => ({
      type: "turn.tool_calls.gated",
      data: { turnId, approvalMode: "ask", decisions: decisions.map(([id, decision]) => ({ callId: id, decision, rule: "mode:ask", riskClass: "read-only-local", fingerprint: "f" })) },
    }),
  ),
  callId.map((id): TurnEvent => ({ type: "turn.approval.granted", data: { turnId, callId: id, fingerprint: "f", by: "p", scope: "call" } })),
  callId.map((id): TurnEvent => ({ type: "turn.approval.denied", data: { turnId, callId: id, fingerprint: "f", by: "p", scope: "call" } })),
  callId.map((id): TurnEvent => ({ type: "turn.tool.started", data: { turnId, callId: id, tool: "read_file", group: 0 } })),
  callId.map((id): TurnEvent => ({ type: "turn.tool.succeeded", data: { turnId, callId: id, output: "ok", durationMs: 1 } })),
  callId.map((id): TurnEvent => ({ type: "turn.tool.failed", data: { turnId, callId: id, code: "tool-exception", message: "boom", durationMs: 1 } })),
  callId.map((id): TurnEvent => ({ type: "turn.tool.interrupted", data: { turnId, callId: id } })),
  fc.constant<TurnEvent>({ type: "turn.results.packetized", data: { turnId, packets: [] } }),
  fc.constant<TurnEvent>({ type: "turn.continued", data: { turnId, reason: "tool-results" } }),
  fc.constant<TurnEvent>({ type: "turn.completed", data: { turnId, text: "done" } }),
  fc.constant<TurnEvent>({ type: "turn.stopped", data: { turnId, reason: "cancelled" } }),
  fc.constant<TurnEvent>({ type: "turn.failed", data: { turnId, reason: "provider:http-status" } }),
];

/**
 * One step of a sequence: a candidate event of every type, and which to send. Mostly (15 in 20) an
 * event the machine takes, chosen among the legal candidates so that sequences reach the deep
 * states and both sides of every guard; otherwise any candidate, legal or not (4 in 20), or a
 * turn's end (1 in 20: `turn.stopped` and `turn.failed` are legal everywhere, so they are kept
 * out of the legal choice to let turns run long).
 */
const step = fc.record({ candidates: fc.tuple(...anyTurnEvent), pick: fc.noBias(fc.nat({ max: 1000 })), mode: fc.noBias(fc.integer({ min: 0, max: 19 })) });
const isEnd = (event: TurnEvent) => event.type === "turn.stopped" || event.type === "turn.failed";

const input: fc.Arbitrary<ProviderTurnInput> = fc.record(
  {
    turnId: fc.constant(turnId),
    turnSeq: fc.integer({ min: 1, max: 3 }),
    iteration: fc.integer({ min: 1, max: 3 }),
    maxAttempts: fc.integer({ min: 1, max: 4 }),
    decisionsVersion: fc.integer({ min: 1, max: latestDecisionsVersion }),
  },
  { requiredKeys: ["turnId", "turnSeq", "iteration", "maxAttempts"] },
);

type XStateResult = ReturnType<typeof initialTransition<typeof providerTurnMachine>>;

function expectSame(fast: ProviderTurnStep, [snapshot, actions]: XStateResult): void {
  expect(fast.value).toBe(snapshot.value);
  expect(fast.context).toEqual(snapshot.context);
  expect(fast.actions).toEqual(actions.map((action) => action.type));
  expect(fast.done).toBe(snapshot.status === "done");
}

describe("the compiled turn machine step", () => {
  it("agrees with XState, event by event, on legality, next state, context, owed actions and the end of the turn", () => {
    // Every transition seen (state, event, next state, actions), to show the sequences reach them all.
    const seen = new Map<string, number>();
    const see = (transition: string) => seen.set(transition, (seen.get(transition) ?? 0) + 1);
    fc.assert(
      fc.property(input, fc.array(step, { minLength: 20, maxLength: 60 }), (turnInput, steps) => {
        let xstate = initialTransition(providerTurnMachine, turnInput);
        let fast = startTurn(turnInput);
        expectSame(fast, xstate);
        for (const { candidates, pick, mode } of steps) {
          const taken = candidates.filter((candidate) => !isEnd(candidate) && xstate[0].can(candidate));
          const choices = mode < 4 || taken.length === 0 ? candidates : mode === 4 ? candidates.filter(isEnd) : taken;
          const next = choices[pick % choices.length]!;
          const legal = xstate[0].can(next);
          const stepped = stepTurn(fast, next);
          expect(stepped !== undefined).toBe(legal);
          if (stepped === undefined) {
            see(`${fast.value} ${next.type} refused`);
            continue;
          }
          const after = transition(providerTurnMachine, xstate[0], next);
          expectSame(stepped, after);
          see(`${fast.value} ${next.type} → ${stepped.value} [${stepped.actions.join(",")}]`);
          // The given state is left as it was.
          expect(fast.context).toEqual(xstate[0].context);
          [fast, xstate] = [stepped, after];
          if (stepped.done) {
            // A finished turn takes no more events, in either; the next one starts fresh.
            expect(stepTurn(stepped, next)).toBeUndefined();
            xstate = initialTransition(providerTurnMachine, turnInput);
            fast = startTurn(turnInput);
          }
        }
      }),
      { numRuns: 500 },
    );
    for (const transition of [
      "finalizing turn.provider.requested → finalizing [callProvider]",
      "finalizing turn.provider.failed → finalizing [requestProvider]",
      "finalizing turn.provider.failed → finalizing [refuseTruncated]",
      "finalizing turn.provider.failed → finalizing [failTurn]",
      "finalizing turn.provider.responded → finalizing [completeTurn]",
      "finalizing turn.provider.responded → normalizing [normalizeToolCalls]",
      "finalizing turn.completed → completed []",
      "gating turn.tool_calls.gated → awaitingApproval [awaitApprovals]",
      "gating turn.tool_calls.gated → running [runToolCalls]",
      "gating turn.tool_calls.gated → packetizing [packetizeResults]",
      "awaitingApproval turn.approval.granted → awaitingApproval []",
      "awaitingApproval turn.approval.granted → running [runToolCalls]",
      "awaitingApproval turn.approval.denied → packetizing [packetizeResults]",
      "running turn.tool.started → running []",
      "running turn.tool.succeeded → running []",
      "running turn.tool.interrupted → packetizing [packetizeResults]",
      "packetizing turn.results.packetized → continuing [decideContinuation]",
      "continuing turn.continued → continued []",
      "running turn.stopped → stopped []",
      "awaitingApproval turn.failed → failed []",
      "normalizing turn.tool_calls.gated refused",
      "running turn.provider.requested refused",
    ]) {
      expect([...seen.keys()]).toContain(transition);
    }
  });
});
