/**
 * Random recorded sessions for the property tests of the fold and of snapshots
 * (property-tests/fold-in-place.test.ts, property-tests/session-snapshot.test.ts): scripted steps
 * of tool calls (good, bad and unknown tools, a repeated provider ID) and provider failures, run
 * through a real runtime over a workspace, with approvals and denials of held calls and a small
 * history budget so that the session compacts.
 */
import fc from "fast-check";
import { createRuntime } from "../../src/index.js";
import type { RecordedTurnlogEvent } from "../../src/index.js";
import { MemoryEventLog, scriptedProvider } from "../../src/testing/index.js";
import type { ScriptStep } from "../../src/testing/index.js";
import { sequentialIds, steppingClock, workspace } from "./tools.js";

const toolCall = fc.oneof(
  fc.record({ name: fc.constant("read_file"), arguments: fc.constantFrom('{"path":"a.txt"}', '{"path":"nope.txt"}', "{bad") }),
  fc.record({ name: fc.constant("write_file"), arguments: fc.constantFrom('{"path":"c.txt","content":"x"}', '{"path":1}') }),
  fc.record({ name: fc.constantFrom("unknown_tool", "__proto__"), arguments: fc.constant("{}") }),
  fc.record({ id: fc.constantFrom("call_1", "call_1"), name: fc.constant("read_file"), arguments: fc.constant('{"path":"a.txt"}') }),
);

/** One step of the scripted model: an answer with 1–4 tool calls, or a failure. */
export const scriptStep: fc.Arbitrary<ScriptStep> = fc.oneof(
  { weight: 5, arbitrary: fc.record({ content: fc.constantFrom("", "working"), toolCalls: fc.array(toolCall, { minLength: 1, maxLength: 4 }) }) },
  { weight: 1, arbitrary: fc.record({ error: fc.record({ kind: fc.constantFrom("transport" as const, "http-status" as const), retryable: fc.boolean() }) }) },
);

/** Up to three user messages of up to four scripted steps each, for `recordScriptedSession`. */
export const scriptedMessages: fc.Arbitrary<ScriptStep[][]> = fc.array(fc.array(scriptStep, { maxLength: 4 }), { minLength: 1, maxLength: 3 });

/** How held calls are answered, in turn (approve or deny), for `recordScriptedSession`. */
export const approvalAnswers: fc.Arbitrary<boolean[]> = fc.array(fc.boolean(), { minLength: 4, maxLength: 4 });

/**
 * Records user messages of scripted steps (each message's steps, then an answer), approving or
 * denying held calls as `answers` says in turn, into a new MemoryEventLog as session "p1".
 */
export async function recordScriptedSession(messages: ScriptStep[][], answers: boolean[]): Promise<{ log: MemoryEventLog; events: RecordedTurnlogEvent[] }> {
  const ws = workspace({ "a.txt": "alpha ".repeat(40) });
  const log = new MemoryEventLog({ clock: steppingClock(), ids: sequentialIds("event") });
  const steps = messages.flatMap((steps, index) => [...steps, { content: `done ${index}` }]);
  const runtime = await createRuntime({ log, provider: scriptedProvider(steps), tools: ws.tools, clock: steppingClock(), history: { maxTokens: 600 }, providerRetry: { baseDelayMs: 0 } });
  const session = await runtime.openSession("p1");
  for (const [index] of messages.entries()) {
    let outcome = await session.send(`message ${index}`);
    for (let round = 0; outcome.status === "awaiting-approval" && round < 20; round += 1) {
      for (const [position, call] of outcome.pendingApprovals.entries()) {
        if (answers[(round + position) % answers.length]) await session.approve(call.callId, { by: "p" });
        else await session.deny(call.callId, { by: "p" });
      }
      outcome = await session.resume();
    }
    // A failed or stopped message leaves the provider's later steps for the next message: the
    // script may then run out, which ends the session there.
    if (outcome.status !== "completed") break;
  }
  return { log, events: [...(await runtime.events("p1"))] };
}
