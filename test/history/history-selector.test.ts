import { describe, expect, it } from "vitest";
import { selectSuffix } from "../../src/history/history-selector.js";

const cost = (unit: { tokens: number }) => unit.tokens;
const units = (...tokens: number[]) => tokens.map((value, index) => ({ name: `u${index}`, tokens: value }));
const names = (list: readonly { name: string }[]) => list.map((unit) => unit.name);

describe("selectSuffix", () => {
  it("keeps everything that fits", () => {
    const selection = selectSuffix(units(10, 20, 30), 60, cost);
    expect(names(selection.selected)).toEqual(["u0", "u1", "u2"]);
    expect(selection.dropped).toEqual([]);
    expect(selection.selectedTokens).toBe(60);
  });

  it("keeps the largest chronological suffix that fits and drops the older units", () => {
    const selection = selectSuffix(units(10, 20, 30), 55, cost);
    expect(names(selection.selected)).toEqual(["u1", "u2"]);
    expect(names(selection.dropped)).toEqual(["u0"]);
    expect(selection.selectedTokens).toBe(50);
  });

  it("stops at the first unit that does not fit: never skips an expensive unit to include older cheap ones", () => {
    const selection = selectSuffix(units(1, 1, 1, 500, 10), 100, cost);
    expect(names(selection.selected)).toEqual(["u4"]);
    expect(names(selection.dropped)).toEqual(["u0", "u1", "u2", "u3"]);
  });

  it("drops everything when the newest unit alone does not fit, or the budget is gone", () => {
    expect(selectSuffix(units(5, 50), 20, cost).selected).toEqual([]);
    expect(names(selectSuffix(units(5, 5), -3, cost).dropped)).toEqual(["u0", "u1"]);
    expect(selectSuffix(units(0), 0, cost).selected).toHaveLength(1);
  });

  it("handles an empty history and an unbounded budget", () => {
    expect(selectSuffix([], 10, cost)).toEqual({ selected: [], dropped: [], selectedTokens: 0 });
    expect(selectSuffix(units(1e9, 1e9), Infinity, cost).dropped).toEqual([]);
  });
});
