import { describe, expect, it } from "vitest";
import { CallMap } from "../../src/projections/call-map.js";

const entries = (map: ReadonlyMap<string, number>) => [...map];

describe("CallMap", () => {
  it("is a frozen, read-only Map whose changes make new maps and leave the old one as it was", () => {
    const empty = new CallMap<number>();
    const one = empty.with("a", 1);
    const two = one.with("b", 2).with("a", 3);
    expect(entries(empty)).toEqual([]);
    expect(entries(one)).toEqual([["a", 1]]);
    // An existing key keeps its place; a new one goes last.
    expect(entries(two)).toEqual([["a", 3], ["b", 2]]);
    expect(entries(two.without(["a"]))).toEqual([["b", 2]]);
    expect(Object.isFrozen(two) && !two.thawed).toBe(true);
    expect(() => two.set()).toThrow(TypeError);
    expect(() => two.delete()).toThrow(TypeError);
    expect(() => two.clear()).toThrow(TypeError);
    expect(() => two.put("c", 4)).toThrow(/persistent/);
    expect(() => two.remove(["a"])).toThrow(/persistent/);
  });

  describe("thawed (a fold in place)", () => {
    it("changes in place with put and remove, and reads like any Map meanwhile", () => {
      const map = CallMap.thawed<number>([["a", 1]]);
      map.put("b", 2);
      map.put("a", 3);
      map.put("c", 4);
      map.remove(["b", "missing"]);
      expect(map.thawed).toBe(true);
      expect(Object.isFrozen(map)).toBe(false);
      expect(map.size).toBe(2);
      expect([map.get("a"), map.has("b"), map.has("c")]).toEqual([3, false, true]);
      expect([...map.keys()]).toEqual(["a", "c"]);
      expect([...map.values()]).toEqual([3, 4]);
      const seen: [string, number][] = [];
      map.forEach((value, key, self) => {
        expect(self).toBe(map);
        seen.push([key, value]);
      });
      expect(seen).toEqual([["a", 3], ["c", 4]]);
      // Still read-only through the Map interface: only the fold that owns it changes it.
      expect(() => map.set()).toThrow(TypeError);
      expect(() => map.delete()).toThrow(TypeError);
      expect(() => map.clear()).toThrow(TypeError);
    });

    it("becomes persistent with CallMap.from: same entries, same order, equal to a map built by with", () => {
      const thawed = CallMap.thawed<number>();
      let persistent = new CallMap<number>();
      for (const [key, value] of [["x", 1], ["y", 2], ["x", 3], ["z", 4]] as const) {
        thawed.put(key, value);
        persistent = persistent.with(key, value);
      }
      const frozen = CallMap.from(thawed);
      expect(frozen).not.toBe(thawed);
      expect(frozen.thawed).toBe(false);
      expect(Object.isFrozen(frozen)).toBe(true);
      expect(entries(frozen)).toEqual([["x", 3], ["y", 2], ["z", 4]]);
      expect(frozen).toEqual(persistent);
      expect(thawed).toEqual(persistent);
      // Equality looks at the entries (not at the Map's own, empty storage of a persistent map).
      expect(frozen).not.toEqual(persistent.with("x", 0));
      expect(thawed).not.toEqual(persistent.without(["z"]));
      // The persistent copy does not follow later changes of the thawed map.
      thawed.put("w", 5);
      expect(frozen.has("w")).toBe(false);
      expect(CallMap.from(frozen)).toBe(frozen);
    });

    it("answers with and without by a new persistent map, itself unchanged", () => {
      const thawed = CallMap.thawed<number>([["a", 1], ["b", 2]]);
      const added = thawed.with("c", 3);
      const removed = thawed.without(["a"]);
      expect([added.thawed, removed.thawed]).toEqual([false, false]);
      expect(entries(added)).toEqual([["a", 1], ["b", 2], ["c", 3]]);
      expect(entries(removed)).toEqual([["b", 2]]);
      expect(entries(thawed)).toEqual([["a", 1], ["b", 2]]);
    });

    it("copies the entries it is thawed from, so the map it came from never changes", () => {
      const persistent = new CallMap<number>().with("a", 1);
      const thawed = CallMap.thawed(persistent);
      thawed.put("a", 2);
      thawed.put("b", 3);
      expect(entries(persistent)).toEqual([["a", 1]]);
      expect(entries(thawed)).toEqual([["a", 2], ["b", 3]]);
    });
  });

  describe("lazy (the calls of a state read back from a snapshot)", () => {
    it("builds its entries only when read beyond what was set on it since, once for every map made from it", () => {
      let builds = 0;
      const lazy = CallMap.lazy(() => {
        builds += 1;
        return new CallMap<number>().with("a", 1).with("b", 2);
      });
      const later = lazy.with("c", 3).with("c", 4);
      expect([later.get("c"), later.has("c")]).toEqual([4, true]);
      expect(Object.isFrozen(later) && !later.thawed).toBe(true);
      expect(builds).toBe(0);
      // A key set on it that the base holds keeps the base's place; the others follow.
      const changed = later.with("a", 5);
      expect(entries(changed)).toEqual([["a", 5], ["b", 2], ["c", 4]]);
      expect(entries(later)).toEqual([["a", 1], ["b", 2], ["c", 4]]);
      expect([lazy.size, lazy.get("b"), lazy.has("c")]).toEqual([2, 2, false]);
      expect(builds).toBe(1);
      expect(entries(CallMap.thawed(later))).toEqual(entries(later));
    });
  });
});
