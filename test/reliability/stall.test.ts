import { describe, expect, it } from "vitest";
import { stall } from "../../soak/families/stall.js";

describe("soak family stall (CI size, fixed seed)", () => {
  it("ends every stalled stream and hanging tool with a recorded reason, and every child process exits by itself", async () => {
    const result = await stall.run({ seed: 17, count: stall.ciCount, log: () => {} });
    expect(result.failures, result.failures.join("\n")).toEqual([]);
    expect(result.failed).toBe(0);
    expect(result.passed).toBe(stall.ciCount);
    expect(result.summary).toMatch(/0 children had to be killed/);
  }, 240_000);
});
