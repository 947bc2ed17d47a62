/**
 * The cap on stored tool output changes nothing the model sees (docs/log.md, "Large tool
 * outputs"): for any output, any `maxResultChars` and any storage cap at or above it, the packet
 * computed from what the log stores equals the packet computed from the whole output — content,
 * `truncated` and `originalChars` included — and the log never keeps more than the cap.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { packetize, storedFailureMessage, storedOutput, truncate } from "../src/tools/packetizer.js";
import { wellFormedText } from "../src/util/well-formed-text.js";

/** Outputs of every shape: short and long, ASCII, astral characters (surrogate pairs), lone halves. */
const outputs = fc.oneof(
  fc.string({ maxLength: 400 }),
  fc.string({ unit: "grapheme", maxLength: 300 }),
  fc.string({ unit: "binary", maxLength: 300 }),
  fc.tuple(fc.string({ maxLength: 30 }), fc.integer({ min: 0, max: 5_000 })).map(([seed, times]) => seed.repeat(Math.min(times, 5_000 / Math.max(1, seed.length)))),
);

/** `maxResultChars` from tiny (below the marker's length) to larger than most outputs. */
const limits = fc
  .tuple(fc.integer({ min: 1, max: 600 }), fc.integer({ min: 0, max: 800 }))
  .map(([maxResultChars, above]) => ({ maxResultChars, maxStoredChars: maxResultChars + above }));

const packetOf = (output: string, maxResultChars: number, stored?: ReturnType<typeof storedOutput>["stored"]) =>
  packetize([{ callId: "call_1", tool: "read_file", maxResultChars, result: { kind: "succeeded", output, ...(stored !== undefined ? { stored } : {}) } }]);

describe("stored tool output", () => {
  it("packetizes to exactly the packet of the whole output, whatever the cap", () => {
    fc.assert(
      fc.property(outputs, limits, (output, { maxResultChars, maxStoredChars }) => {
        const kept = storedOutput(output, { maxResultChars, maxStoredChars });
        expect(packetOf(kept.output, maxResultChars, kept.stored)).toEqual(packetOf(output, maxResultChars));
      }),
      { numRuns: 2_000 },
    );
  });

  it("a failed call's message, stored cut, packetizes to exactly the packet of the whole message", () => {
    const codes = fc.constantFrom("tool-error", "timeout", "tool-exception", "x");
    const failedPacketOf = (code: string, message: string, maxResultChars: number, stored?: ReturnType<typeof storedFailureMessage>["stored"]) =>
      packetize([{ callId: "call_1", tool: "run_command", maxResultChars, result: { kind: "failed", code, message, ...(stored !== undefined ? { stored } : {}) } }]);
    fc.assert(
      fc.property(codes, outputs, limits, (code, message, { maxResultChars, maxStoredChars }) => {
        const kept = storedFailureMessage(code, message, { maxResultChars, maxStoredChars });
        expect(failedPacketOf(code, kept.message, maxResultChars, kept.stored)).toEqual(failedPacketOf(code, message, maxResultChars));
        if (kept.stored !== undefined) {
          // Cut: with its prefix, the stored message is exactly the cap (raised to maxResultChars).
          expect(`Error (${code}): `.length + kept.message.length).toBe(Math.max(maxStoredChars, maxResultChars));
          expect(kept.stored.originalChars).toBe(message.length);
          // The message's head and tail, a surrogate pair cut at either edge kept as U+FFFD.
          expect(kept.message.slice(0, kept.stored.headChars)).toBe(wellFormedText(message.slice(0, kept.stored.headChars)));
          expect(kept.message.slice(kept.stored.headChars)).toBe(wellFormedText(message.slice(message.length - (kept.message.length - kept.stored.headChars))));
        }
      }),
      { numRuns: 2_000 },
    );
  });

  it("keeps at most the cap, cuts only what exceeds it, and records the cut", () => {
    fc.assert(
      fc.property(outputs, limits, (output, { maxResultChars, maxStoredChars }) => {
        const kept = storedOutput(output, { maxResultChars, maxStoredChars });
        if (output.length <= maxStoredChars) {
          expect(kept).toEqual({ output });
          return;
        }
        expect(kept.output.length).toBe(maxStoredChars);
        expect(kept.stored?.originalChars).toBe(output.length);
        // The output's head and tail, each made valid Unicode on its own: a surrogate pair cut at
        // either edge is kept as U+FFFD, never as a half the log would refuse.
        const headChars = kept.stored?.headChars ?? 0;
        expect(kept.output.slice(0, headChars)).toBe(wellFormedText(output.slice(0, headChars)));
        expect(kept.output.slice(headChars)).toBe(wellFormedText(output.slice(output.length - (maxStoredChars - headChars))));
      }),
      { numRuns: 1_000 },
    );
  });

  it("never cuts a well-formed output into text the log would refuse: what is stored and shown is valid Unicode", () => {
    const wellFormed = fc.oneof(fc.string({ unit: "grapheme", maxLength: 300 }), fc.tuple(fc.constantFrom("😀", "a😀", "𐀀b"), fc.integer({ min: 1, max: 400 })).map(([seed, times]) => seed.repeat(times)));
    fc.assert(
      fc.property(wellFormed, limits, (output, { maxResultChars, maxStoredChars }) => {
        const kept = storedOutput(output, { maxResultChars, maxStoredChars });
        expect(wellFormedText(kept.output)).toBe(kept.output);
        const [packet] = packetOf(kept.output, maxResultChars, kept.stored);
        expect(wellFormedText(packet?.content ?? "")).toBe(packet?.content);
      }),
      { numRuns: 1_000 },
    );
  });

  it("is raised to maxResultChars: a cap below it never changes the packet", () => {
    fc.assert(
      fc.property(outputs, fc.integer({ min: 1, max: 600 }), fc.integer({ min: 1, max: 600 }), (output, maxResultChars, cap) => {
        const kept = storedOutput(output, { maxResultChars, maxStoredChars: cap });
        expect(kept.output.length).toBeLessThanOrEqual(Math.max(cap, maxResultChars));
        expect(packetOf(kept.output, maxResultChars, kept.stored)[0]).toEqual({ callId: "call_1", tool: "read_file", ok: true, ...truncate(output, maxResultChars) });
      }),
    );
  });
});
