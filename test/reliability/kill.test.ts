import { describe, expect, it } from "vitest";
import { killFamily } from "../../soak/families/kill.js";

/**
 * The `kill` soak family at its CI size, with a fixed seed: hosts running three sessions at once
 * on one LevelDB log (retries, compaction, a real MCP server, an approval from another process,
 * CLI readers beside them) SIGKILLed at seeded points and restarted until done, then every
 * invariant of soak/kill/invariants.ts checked. `npm run soak -- --family kill` runs the same
 * code at 1 000 kill points.
 */
describe("soak family kill (CI size)", () => {
  it(`lands ${killFamily.ciCount} kill points and every invariant holds`, async () => {
    const result = await killFamily.run({ seed: 17_001, count: killFamily.ciCount, log: () => {} });
    expect(result.failures, result.failures.join("\n")).toEqual([]);
    expect(result.failed).toBe(0);
    expect(result.passed).toBe(killFamily.ciCount);
    // The mix was exercised, not only configured.
    expect(result.summary).toMatch(/ [1-9]\d* failed provider attempts retried, [1-9]\d* compactions, [1-9]\d* MCP side effects, [1-9]\d* approvals from another process/);
  }, 180_000);
});
