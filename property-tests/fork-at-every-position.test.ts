import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { createRuntime, type Session, type SendOutcome } from "../src/index.js";
import { MemoryEventLog, scriptedProvider } from "../src/testing/index.js";
import type { ScriptStep } from "../src/testing/index.js";
import { sequentialIds, steppingClock, workspace } from "../test/support/tools.js";
import { scriptedStep } from "../test/support/scripted-steps.js";

/** Answers every held call of an outcome (approve or deny, by the answers given) until the turn ends. */
async function settle(session: Session, first: SendOutcome, answers: readonly boolean[]): Promise<SendOutcome> {
  let outcome = first;
  for (let round = 0; round < 20; round += 1) {
    if (outcome.status === "awaiting-approval") {
      for (const [index, call] of outcome.pendingApprovals.entries()) {
        if (answers[(round + index) % answers.length]) await session.approve(call.callId, { by: "p" });
        else await session.deny(call.callId, { by: "p" });
      }
    } else if (outcome.status !== "needs-resume") {
      return outcome;
    }
    outcome = await session.resume();
  }
  return outcome;
}

/** Random sessions: one to three user messages, each a run of scripted provider steps (tools, failures) and a final answer. */
const sessionScript = fc.record({
  messages: fc.array(fc.array(scriptedStep, { maxLength: 3 }), { minLength: 1, maxLength: 3 }),
  answers: fc.array(fc.boolean(), { minLength: 4, maxLength: 4 }),
  maxIterations: fc.integer({ min: 1, max: 4 }),
  // A small history budget compacts; a short wall-clock budget (the clock steps 1 ms a reading) stops turns.
  historyTokens: fc.option(fc.constantFrom(250, 400), { nil: undefined }),
  wallClockMs: fc.option(fc.integer({ min: 4, max: 40 }), { nil: undefined }),
});

describe("fork at every position", () => {
  it("of any scripted session makes a fork that continues (a further send works) and replays identical", async () => {
    await fc.assert(
      fc.asyncProperty(sessionScript, async ({ messages, answers, maxIterations, historyTokens, wallClockMs }) => {
        const ws = workspace({ "a.txt": "alpha ".repeat(40), "b.txt": "beta" });
        const script: ScriptStep[] = messages.flatMap((steps, index) => [...steps, { content: `answer ${index}` }]);
        const log = new MemoryEventLog({ clock: steppingClock(), ids: sequentialIds("event") });
        const options = { log, tools: ws.tools, clock: steppingClock(), budgets: { maxIterations, ...(wallClockMs !== undefined ? { wallClockMs } : {}) },
          providerRetry: { baseDelayMs: 0 },
          ...(historyTokens !== undefined ? { history: { maxTokens: historyTokens } } : {}),
        };
        const source = await createRuntime({ ...options, provider: scriptedProvider(script) });
        const session = await source.openSession("source");
        for (const [index] of messages.entries()) await settle(session, await session.send(`message ${index}`), answers);
        const version = await log.streamVersion("session-source");

        for (let at = 1; at <= version; at += 1) {
          const to = `fork-${at}`;
          const forked = await source.fork("source", { at, to });
          expect(forked.copied).toBe(forked.forkedFrom.position);
          // Whatever the fork owes, a provider that always answers in words lets it finish.
          const continuing = await createRuntime({ ...options, provider: scriptedProvider(Array.from({ length: 40 }, () => ({ content: "fork answer" }))) });
          const fork = await continuing.openSession(to);
          await settle(fork, fork.outcome(), answers);
          const further = await settle(fork, await fork.send("one more"), answers);
          expect([`at ${at}`, further.status]).toEqual([`at ${at}`, "completed"]);
          const report = await continuing.replay(to);
          expect([`at ${at}`, report.divergences]).toEqual([`at ${at}`, []]);
        }
      }),
      { numRuns: 25 },
    );
  });
});
