import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { createRuntime, decisionsVersions, type Session } from "../src/index.js";
import { foldEvents } from "../src/projections/projection.js";
import { sessionStateProjection } from "../src/projections/session-state.js";
import { SessionFold } from "../src/core/session-fold.js";
import { MemoryEventLog, scriptedProvider } from "../src/testing/index.js";
import { sequentialIds, steppingClock, workspace } from "../test/support/tools.js";
import { scriptedStep as step } from "../test/support/scripted-steps.js";

describe("any scripted session", () => {
  it("replays identical, answers every call exactly once, and runs no tool twice", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(step, { maxLength: 6 }),
        fc.array(fc.boolean(), { minLength: 8, maxLength: 8 }),
        fc.integer({ min: 1, max: 4 }),
        async (steps, answers, maxIterations) => {
          const ws = workspace();
          const provider = scriptedProvider([...steps, { content: "final" }]);
          const log = new MemoryEventLog({ clock: steppingClock(), ids: sequentialIds("event") });
          // Retryable failures are scripted freely; the backoff between attempts is not under test.
          const runtime = await createRuntime({ log, provider, tools: ws.tools, clock: steppingClock(), budgets: { maxIterations }, providerRetry: { baseDelayMs: 0 } });
          const session = await runtime.openSession("p1");
          let outcome = await session.send("go");
          for (let round = 0; outcome.status === "awaiting-approval" && round < 20; round += 1) {
            for (const [index, call] of outcome.pendingApprovals.entries()) {
              if (answers[(round + index) % answers.length]) await session.approve(call.callId, { by: "p" });
              else await session.deny(call.callId, { by: "p" });
            }
            outcome = await session.resume();
          }
          expect(["completed", "stopped", "failed"]).toContain(outcome.status);

          const report = await runtime.replay("p1");
          expect(report.divergences).toEqual([]);

          const events = await runtime.events("p1");
          const state = foldEvents(sessionStateProjection, events);
          expect(foldEvents(sessionStateProjection, events)).toEqual(state);
          // Every call of a packetized turn has exactly one packet, in call order.
          for (const turn of state.turns) {
            const packets = events.filter((event) => event.type === "turn.results.packetized" && (event.data as { turnId: string }).turnId === turn.turnId);
            if (packets.length === 0) continue;
            expect(packets).toHaveLength(1);
            expect((packets[0]?.data as { packets: { callId: string }[] }).packets.map((packet) => packet.callId)).toEqual(turn.callIds);
          }
          // No call ID is used twice in the session, and every one is valid for both providers.
          const ids = [...state.calls.keys()];
          expect(new Set(ids).size).toBe(ids.length);
          for (const id of ids) expect(id).toMatch(/^[a-zA-Z0-9_-]{1,40}$/);
          // No tool started twice.
          const started = events.filter((event) => event.type === "turn.tool.started").map((event) => (event.data as { callId: string }).callId);
          expect(new Set(started).size).toBe(started.length);
          // A write ran only if a person approved it.
          for (const call of state.calls.values()) {
            if (call.name === "write_file" && call.status === "succeeded") expect(call.approval?.granted).toBe(true);
          }

          // The turn machine runs lazily in a bulk fold: at every position, a fold read only at the
          // end owes the same actions, in the same machine state, as one read after every event.
          const eager = new SessionFold();
          for (const [index, event] of events.entries()) {
            eager.apply(event);
            const bulk = new SessionFold({ mutable: true });
            for (const earlier of events.slice(0, index + 1)) bulk.apply(earlier);
            expect([bulk.turnState, bulk.pending]).toEqual([eager.turnState, eager.pending]);
            expect(bulk.turn?.context).toEqual(eager.turn?.context);
          }
        },
      ),
      { numRuns: 150 },
    );
  });
});

describe("any scripted session, under any decisions version", () => {
  it("replays identical when recorded under one version and continued under another, and a preview under its own version changes nothing", async () => {
    const versions = decisionsVersions.map(({ version }) => version);
    await fc.assert(
      fc.asyncProperty(
        fc.array(step, { maxLength: 4 }),
        fc.array(step, { maxLength: 4 }),
        fc.constantFrom(...versions),
        fc.constantFrom(...versions),
        fc.constantFrom("on-resume" as const, "never" as const),
        async (first, second, recordedUnder, continuedUnder, upgradeSessions) => {
          const ws = workspace();
          const log = new MemoryEventLog({ clock: steppingClock(), ids: sequentialIds("event") });
          const common = { log, tools: ws.tools, clock: steppingClock(), providerRetry: { baseDelayMs: 0 } };
          /** Sends, approving every held call, until the exchange ends. */
          const exchange = async (session: Session, text: string) => {
            let outcome = await session.send(text);
            for (let round = 0; outcome.status === "awaiting-approval" && round < 20; round += 1) {
              for (const call of outcome.pendingApprovals) await session.approve(call.callId, { by: "p" });
              outcome = await session.resume();
            }
            return outcome;
          };
          const before = await createRuntime({ ...common, provider: scriptedProvider([...first, { content: "first done" }]), decisionsVersion: recordedUnder });
          await exchange(await before.openSession("v1"), "go");
          await before.close();
          const after = await createRuntime({ ...common, provider: scriptedProvider([...second, { content: "second done" }]), decisionsVersion: continuedUnder, upgradeSessions });
          const outcome = await exchange(await after.openSession("v1"), "again");
          expect(["completed", "stopped", "failed"]).toContain(outcome.status);

          const events = await after.events("v1");
          const upgrades = events.filter((event) => event.type === "session.decisions.upgraded");
          expect(upgrades).toHaveLength(upgradeSessions === "on-resume" && continuedUnder > recordedUnder ? 1 : 0);
          const report = await after.replay("v1");
          expect(report.divergences).toEqual([]);
          const final = upgrades.length > 0 ? continuedUnder : recordedUnder;
          if (upgrades.length === 0) expect((await after.replay("v1", { decisionsVersion: final })).changes).toEqual([]);
        },
      ),
      { numRuns: 60 },
    );
  });
});
