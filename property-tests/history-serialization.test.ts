import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { checkHistories, refold, runScenario, scenario, violations } from "../test/support/history-scenarios.js";

describe("native history of any session", () => {
  it("passes both providers' rules in every format and budget, is byte-identical on rebuild, restart and compaction", async () => {
    await fc.assert(
      fc.asyncProperty(scenario, async (scenario) => {
        const run = await runScenario(scenario, (state) => {
          checkHistories(state, scenario.budgets, scenario.system);
        });
        // Every request the runtime really sent obeys its provider's rules.
        for (const request of run.requests) expect(violations(scenario.format, request)).toEqual([]);
        // After a restart (the state refolded from the log alone) the history is the same bytes.
        const events = await run.events();
        const live = run.session.state();
        const restarted = refold(events);
        expect(JSON.stringify(checkHistories(restarted, scenario.budgets, scenario.system))).toBe(JSON.stringify(checkHistories(live, scenario.budgets, scenario.system)));
        // Compactions the runtime recorded replay identically.
        const report = await run.runtime.replay("h1");
        expect(report.divergences).toEqual([]);
      }),
      { numRuns: 80 },
    );
  });
});
