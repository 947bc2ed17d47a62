import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { DiagnosticRecordedSchema } from "../src/contracts/events.js";
import type { HistoryDiagnostic } from "../src/history/history-diagnostics.js";
import { exampleSecretMarker } from "../test/support/secret-examples.js";
import { checkHistories, runScenario, scenario, tokenPrefix } from "../test/support/history-scenarios.js";

/**
 * Every argument, result, content, path and echo text in these sessions carries a distinctive
 * token (`Zq7…`); call IDs are model-given tokens or derived hashes. Diagnostics — built ad hoc or
 * recorded by the runtime in the log — must hold none of them: counts and reason enums only.
 */
describe("history diagnostics of any session", () => {
  it("never contain an argument, result, content, path, ID or echo text", async () => {
    await fc.assert(
      fc.asyncProperty(scenario, async (scenario) => {
        const diagnostics: HistoryDiagnostic[] = [];
        const run = await runScenario(scenario, (state) => {
          for (const built of checkHistories(state, scenario.budgets, scenario.system)) diagnostics.push(...built.diagnostics);
        });
        const events = await run.events();
        for (const event of events) if (event.type === "session.diagnostic.recorded") diagnostics.push(event.data as HistoryDiagnostic);
        expect(diagnostics.length).toBeGreaterThan(0);

        const text = JSON.stringify(diagnostics);
        expect(text).not.toContain(tokenPrefix);
        expect(text).not.toContain(exampleSecretMarker);
        for (const callId of run.session.state().calls.keys()) expect(text).not.toContain(callId);
        for (const diagnostic of diagnostics) {
          DiagnosticRecordedSchema.parse({ type: "session.diagnostic.recorded", data: diagnostic });
          // Keys are snake_case words too: nothing from the session can hide in a count's name.
          for (const key of Object.keys(diagnostic.counts)) expect(key).toMatch(/^[a-z_]+$/);
        }
      }),
      { numRuns: 60 },
    );
  });
});
