import { describe, expect, it } from "vitest";
import { fuzzFamily } from "../../soak/families/fuzz.js";

describe("soak family fuzz, CI-sized", () => {
  it(`runs ${fuzzFamily.ciCount} fuzzed provider stream scripts through both finalizers and the whole loop, every invariant holding`, async () => {
    const result = await fuzzFamily.run({ seed: 17, count: fuzzFamily.ciCount, log: () => {} });
    expect(result.failures, result.failures.join("\n\n")).toEqual([]);
    expect(result.failed).toBe(0);
    expect(result.passed).toBe(fuzzFamily.ciCount);
  }, 120_000);
});
