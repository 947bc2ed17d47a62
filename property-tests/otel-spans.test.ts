import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { createRuntime } from "../src/index.js";
import { otlpJson, sessionSpans } from "../src/otel/index.js";
import { MemoryEventLog, scriptedProvider } from "../src/testing/index.js";
import { auditRows } from "../src/projections/audit.js";
import { foldEvents } from "../src/projections/projection.js";
import { sessionStateProjection } from "../src/projections/session-state.js";
import { sequentialIds, steppingClock, workspace } from "../test/support/tools.js";
import { scriptedStep as step } from "../test/support/scripted-steps.js";
import { memoryTracer, normalizeOtlp, normalizeReadable } from "../test/otel/support/otel-spans.js";

describe("the spans of any scripted session", () => {
  it("are the same live and after the fact, nest in time, end once the session rests, and agree with the audit", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(step, { maxLength: 6 }),
        fc.array(fc.boolean(), { minLength: 6, maxLength: 6 }),
        fc.integer({ min: 1, max: 4 }),
        async (steps, answers, maxIterations) => {
          const ws = workspace();
          const { exporter, provider: tracerProvider, tracer } = memoryTracer();
          const log = new MemoryEventLog({ clock: steppingClock(), ids: sequentialIds("event") });
          const runtime = await createRuntime({
            log,
            provider: scriptedProvider([...steps, { content: "final" }]),
            tools: ws.tools,
            clock: steppingClock(),
            budgets: { maxIterations },
            providerRetry: { baseDelayMs: 0 },
            tracer,
          });
          const session = await runtime.openSession("p1");
          let outcome = await session.send("go");
          for (let round = 0; outcome.status === "awaiting-approval" && round < 20; round += 1) {
            for (const [index, call] of outcome.pendingApprovals.entries()) {
              if (answers[(round + index) % answers.length]) await session.approve(call.callId, { by: "p" });
              else await session.deny(call.callId, { by: "p" });
            }
            outcome = await session.resume();
          }
          const events = await runtime.events("p1");
          await runtime.close();
          await tracerProvider.forceFlush();

          const derived = sessionSpans(events, { sessionId: "p1" });
          const json = otlpJson(derived, { sessionId: "p1" });
          // Deterministic: the same events give the same bytes.
          expect(JSON.stringify(otlpJson(sessionSpans(events, { sessionId: "p1" }), { sessionId: "p1" }))).toBe(JSON.stringify(json));
          const after = normalizeOtlp(json);
          // Live equals after the fact.
          expect(normalizeReadable(exporter.getFinishedSpans())).toEqual(after);
          // The session rests (completed, stopped or failed): nothing is left open.
          expect(derived.filter((span) => span.attributes["turnlog.open"] === true)).toEqual([]);
          // Every span ends at or after it starts, its events lie within it, and a child lies within its parent.
          const byLabel = new Map(after.map((span) => [span.label, span]));
          for (const span of after) {
            expect(span.endMs).toBeGreaterThanOrEqual(span.startMs);
            for (const event of span.events) expect(event.timeMs >= span.startMs && event.timeMs <= span.endMs).toBe(true);
            if (span.parent === null) continue;
            const parent = byLabel.get(span.parent)!;
            expect(span.startMs >= parent.startMs && span.endMs <= parent.endMs).toBe(true);
          }
          // One execute_tool span per call in the audit, with its decision and outcome.
          const rows = auditRows(foldEvents(sessionStateProjection, events));
          const toolSpans = after.filter((span) => span.attributes["gen_ai.operation.name"] === "execute_tool");
          expect(toolSpans.map((span) => span.attributes["gen_ai.tool.call.id"]).sort()).toEqual(rows.map((row) => row.callId).sort());
          for (const row of rows) {
            const span = toolSpans.find((candidate) => candidate.attributes["gen_ai.tool.call.id"] === row.callId)!;
            expect(span.attributes["turnlog.decision"]).toBe(row.decision ?? "rejected");
            expect(span.attributes["turnlog.outcome"]).toBe(row.outcome);
            expect(span.status.code === 2).toBe(!["succeeded", "pending"].includes(row.outcome));
          }
          // One chat span per provider attempt.
          expect(after.filter((span) => span.attributes["gen_ai.operation.name"] === "chat")).toHaveLength(events.filter((event) => event.type === "turn.provider.requested").length);
        },
      ),
      { numRuns: 100 },
    );
  });
});
