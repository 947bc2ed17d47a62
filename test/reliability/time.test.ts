import { describe, expect, it } from "vitest";
import { time } from "../../soak/families/time.js";

describe("soak family time (CI size, fixed seed)", () => {
  it("keeps recordedAt monotonic per stream and the wall-clock budget where an exact clock puts it, in every seeded session", async () => {
    const result = await time.run({ seed: 17, count: time.ciCount, log: () => {} });
    expect(result.failures, result.failures.join("\n")).toEqual([]);
    expect(result.failed).toBe(0);
    expect(result.passed).toBe(time.ciCount);
    // The seed draws sessions the budget stops (the invariant is then tested, not vacuous).
    expect(result.summary).toMatch(/the wall-clock budget stopped [1-9]\d* of them/);
  });
});
