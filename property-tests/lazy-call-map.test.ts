import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { CallMap } from "../src/projections/call-map.js";

const key = fc.constantFrom("a", "b", "c", "d", "e", "f", "__proto__");
const operation = fc.oneof(
  fc.record({ kind: fc.constant("with" as const), key, value: fc.integer() }),
  fc.record({ kind: fc.constant("without" as const), keys: fc.array(key, { maxLength: 2 }) }),
  fc.record({ kind: fc.constant("read" as const), key }),
);

/** Everything a reader of a map sees. */
const view = (map: CallMap<number>, probe: string) => ({ entries: [...map], keys: [...map.keys()], values: [...map.values()], size: map.size, get: map.get(probe), has: map.has(probe) });

describe("CallMap.lazy (the calls of a state read back from a snapshot, built when first read)", () => {
  it("reads, after any sequence of with, without and reads, as the map built at once from the same entries (the reference) does", () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(key, fc.integer()), { maxLength: 8 }), fc.array(operation, { maxLength: 12 }), (base, operations) => {
        let lazy = CallMap.lazy(() => CallMap.fromEntries(base));
        let reference = CallMap.fromEntries(base);
        for (const step of operations) {
          if (step.kind === "with") {
            lazy = lazy.with(step.key, step.value);
            reference = reference.with(step.key, step.value);
          } else if (step.kind === "without") {
            lazy = lazy.without(step.keys);
            reference = reference.without(step.keys);
          } else {
            expect([lazy.get(step.key), lazy.has(step.key)]).toEqual([reference.get(step.key), reference.has(step.key)]);
          }
        }
        expect(view(lazy, "a")).toEqual(view(reference, "a"));
        expect(lazy).toEqual(reference);
      }),
      { numRuns: 500 },
    );
  });
});
