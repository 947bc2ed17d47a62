import canonicalize from "canonicalize";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { prepareEvents } from "../src/log/event-recording.js";

/** Whether RFC 8785 (the hash's canonical form) can write the value: it refuses lone surrogates. */
function canonicalizable(value: unknown): boolean {
  try {
    canonicalize(value);
    return true;
  } catch {
    return false;
  }
}

function accepted(type: string, data: unknown): boolean {
  try {
    prepareEvents([{ type, data }]);
    return true;
  } catch {
    return false;
  }
}

describe("an append refuses exactly the events the hash cannot canonicalize", () => {
  it("agrees with canonicalize on any JSON value and type, lone surrogates and backslashes included", () => {
    const text = fc.string({ unit: fc.oneof(fc.constantFrom("\\", "u", "d", "8", "\ud800", "\udc00", "\ud83d\ude00"), fc.constantFrom("a", "\u0000")) });
    fc.assert(
      fc.property(fc.jsonValue({ stringUnit: "binary" }), text, fc.oneof(text, fc.jsonValue({ stringUnit: "binary" })), (data, suffix, extra) => {
        const type = `t${suffix}`;
        const value = { data, extra };
        expect(accepted(type, value)).toBe(canonicalizable({ type, data: value }));
      }),
      { numRuns: 2_000 },
    );
  });
});
