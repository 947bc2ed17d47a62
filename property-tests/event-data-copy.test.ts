import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { eventDataSnapshot, snapshotData, snapshotDataByJson } from "../src/log/event-recording.js";

/** What a snapshot function makes of `value`: its data and text, or the kind of error it threw. */
function outcome(snapshot: typeof snapshotData, value: unknown): { data: unknown; json: string } | { refused: string } {
  try {
    return snapshot(value, "event t.x");
  } catch (error) {
    return { refused: error instanceof TypeError ? `TypeError: ${error.message}` : String(error) };
  }
}

/**
 * `left` and `right` are the same JSON data, exactly: the same primitives (`Object.is`, so `-0` is
 * not `0`), arrays of the same items, plain objects (prototype `Object.prototype`, as `JSON.parse`
 * makes them) with the same keys in the same order.
 */
function sameData(left: unknown, right: unknown): boolean {
  if (typeof left !== "object" || left === null || typeof right !== "object" || right === null) return Object.is(left, right);
  if (Array.isArray(left) !== Array.isArray(right)) return false;
  if (Object.getPrototypeOf(left) !== Object.getPrototypeOf(right)) return false;
  const leftKeys = Object.keys(left);
  const rightKeys = Object.keys(right);
  if (leftKeys.length !== rightKeys.length || leftKeys.some((key, index) => key !== rightKeys[index])) return false;
  return leftKeys.every((key) => sameData((left as Record<string, unknown>)[key], (right as Record<string, unknown>)[key]));
}

function deeplyFrozen(value: unknown): boolean {
  if (typeof value !== "object" || value === null) return true;
  return Object.isFrozen(value) && Object.values(value).every(deeplyFrozen);
}

/** Strings that reach lone surrogates, escapes, quotes and control characters often. */
const awkwardText = fc.string({ unit: fc.oneof(fc.constantFrom("\\", '"', "u", "d", "8", "\ud800", "\udc00", "\ud83d\ude00", "\u0000", "\u2028", "é", "__proto__", "toJSON"), fc.string({ minLength: 1, maxLength: 1 })) });

/** Keys that are awkward for a copy by assignment: `__proto__`, integer-like keys (which come first), `toJSON`. */
const awkwardKey = fc.oneof(awkwardText, fc.constantFrom("__proto__", "toJSON", "constructor", "0", "10", "2", "-1", "01"));

const json = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: "small" },
    fc.constant(null),
    fc.boolean(),
    fc.double(),
    fc.constantFrom(-0, 0, Number.NaN, Number.POSITIVE_INFINITY),
    fc.integer(),
    awkwardText,
    fc.array(tie("value")),
    fc.dictionary(awkwardKey, tie("value")),
  ),
})).value;

/** Values that are not plain JSON: what the copy must leave to the round trip. */
const notPlain = fc.oneof(
  fc.anything({ withBoxedValues: true, withMap: true, withSet: true, withTypedArray: true, withSparseArray: true, withNullPrototype: true, withObjectString: true, withDate: true, withBigInt: true }),
  fc.anything().map((inner) => ({ toJSON: () => inner, b: 1 })),
  fc.anything().map((inner) => [1, { toJSON: (key: string) => `${key}:${String(inner)}` }]),
  json.map((inner) => ({ a: inner, b: undefined, c: () => 1, [Symbol("s")]: 2 })),
  json.map((inner) => [inner, undefined, () => 1]),
  json.map((inner) => Object.defineProperty({ a: inner }, "g", { enumerable: true, get: () => inner })),
  fc.constant(Object.defineProperty({}, "g", { enumerable: true, get: () => { throw new Error("getter"); } })),
);

describe("a staged event's data is copied as the JSON round trip copies it (snapshotData)", () => {
  it("gives the same data (keys in order, -0 as 0), the same text, or the same refusal, as JSON.stringify and JSON.parse, for any value", () => {
    fc.assert(
      fc.property(fc.oneof(json, notPlain, fc.jsonValue({ stringUnit: "binary" })), (value) => {
        const fast = outcome(snapshotData, value);
        const reference = outcome(snapshotDataByJson, value);
        if ("refused" in reference) {
          expect(fast).toEqual(reference);
          return;
        }
        if ("refused" in fast) throw new Error(`refused what the round trip takes: ${fast.refused}`);
        expect(fast.json).toBe(reference.json);
        expect(sameData(fast.data, reference.data)).toBe(true);
        // The stored text stands for the copy: it is what JSON.stringify writes for it.
        expect(JSON.stringify(fast.data)).toBe(fast.json);
      }),
      { numRuns: 4000 },
    );
  });

  it("stages data deeply frozen, unchanged by later changes to the original", () => {
    fc.assert(
      fc.property(fc.dictionary(awkwardKey, json), (value) => {
        let staged: unknown;
        try {
          staged = eventDataSnapshot(value, "t.x");
        } catch {
          return;
        }
        const before = JSON.stringify(staged);
        expect(deeplyFrozen(staged)).toBe(true);
        for (const key of Object.keys(value)) value[key] = "changed";
        expect(JSON.stringify(staged)).toBe(before);
      }),
      { numRuns: 1000 },
    );
  });
});
