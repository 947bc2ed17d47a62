import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { firstDifference, sameJson } from "../src/util/first-difference.js";

/** Keys that reach the prototype, `undefined` members and the edge cases of `Object.is` often. */
const key = fc.oneof(fc.constantFrom("a", "b", "constructor", "toString", "__proto__", "hasOwnProperty", "0", "length"), fc.string({ maxLength: 3 }));
const leaf = fc.oneof(fc.constantFrom(undefined, null, 0, -0, Number.NaN, 1, "", "a", true, false), fc.integer(), fc.string({ maxLength: 3 }));
const value = fc.letrec((tie) => ({
  json: fc.oneof(
    { depthSize: "small" },
    leaf,
    fc.array(tie("json"), { maxLength: 4 }),
    fc.dictionary(key, tie("json"), { maxKeys: 4 }),
    fc.array(tie("json"), { maxLength: 3 }).map((items) => Object.assign(Object.create(null) as object, items)),
  ),
})).json;

/** A copy of `original` with up to a few small edits (or none), so that equal pairs are common. */
function edited(original: unknown, edits: readonly { at: number; kind: number; with: unknown; key: string }[]): unknown {
  const copy = (input: unknown): unknown => {
    if (Array.isArray(input)) return input.map(copy);
    if (typeof input === "object" && input !== null) {
      const out: Record<string, unknown> = Object.getPrototypeOf(input) === null ? (Object.create(null) as Record<string, unknown>) : {};
      for (const [name, member] of Object.entries(input)) out[name] = copy(member);
      return out;
    }
    return input;
  };
  const result = copy(original);
  const containers: (unknown[] | Record<string, unknown>)[] = [];
  const collect = (input: unknown) => {
    if (typeof input !== "object" || input === null) return;
    containers.push(input as unknown[] | Record<string, unknown>);
    for (const member of Object.values(input)) collect(member);
  };
  collect(result);
  for (const edit of edits) {
    const target = containers[edit.at % Math.max(1, containers.length)];
    if (target === undefined) return edit.with;
    const names = Object.keys(target);
    const name = names[edit.at % Math.max(1, names.length)] ?? edit.key;
    if (Array.isArray(target)) {
      if (edit.kind === 0) target.push(undefined);
      else if (edit.kind === 1) target.push(edit.with);
      else if (edit.kind === 2) target.pop();
      else target[Number(name) || 0] = edit.with;
    } else {
      if (edit.kind === 0) target[edit.key] = undefined;
      else if (edit.kind === 1) target[edit.key] = edit.with;
      else if (edit.kind === 2) delete target[name];
      else target[name] = edit.with;
    }
  }
  return result;
}

describe("sameJson says what firstDifference says: whether there is any difference", () => {
  it("agrees on a value and an edited copy of it (often equal, often differing in one place)", () => {
    const edit = fc.record({ at: fc.nat(), kind: fc.nat({ max: 3 }), with: value, key });
    fc.assert(
      fc.property(value, fc.array(edit, { maxLength: 2 }), fc.boolean(), (original, edits, swap) => {
        const other = edited(original, edits);
        const [expected, actual] = swap ? [other, original] : [original, other];
        expect(sameJson(expected, actual)).toBe(firstDifference(expected, actual) === undefined);
      }),
      { numRuns: 5000 },
    );
  });

  it("agrees on unrelated values, anything included", () => {
    fc.assert(
      fc.property(fc.oneof(value, fc.anything()), fc.oneof(value, fc.anything()), (expected, actual) => {
        expect(sameJson(expected, actual)).toBe(firstDifference(expected, actual) === undefined);
      }),
      { numRuns: 3000 },
    );
  });

  it("treats an undefined member as absent and tells -0 from 0, as firstDifference does", () => {
    expect(sameJson({ a: 1, b: undefined }, { a: 1 })).toBe(true);
    expect(sameJson([1], [1, undefined])).toBe(true);
    expect(sameJson({ a: -0 }, { a: 0 })).toBe(false);
    expect(sameJson([Number.NaN], [Number.NaN])).toBe(true);
    expect(sameJson({ a: [1] }, { a: { 0: 1 } })).toBe(false);
  });
});
