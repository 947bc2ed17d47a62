/**
 * The cap on stored tool output changes nothing the model sees (docs/log.md, "Large tool
 * outputs"): for any output, any `maxResultChars` and any storage cap at or above it, the packet
 * computed from what the log stores equals the packet computed from the whole output — content,
 * `truncated` and `originalChars` included — and the log never keeps more than the cap.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { packetize, storedFailureMessage, storedOutput, truncate } from "../src/tools/packetizer.js";

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
          expect(message.startsWith(kept.message.slice(0, kept.stored.headChars))).toBe(true);
          expect(message.endsWith(kept.message.slice(kept.stored.headChars))).toBe(true);
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
        const headChars = kept.stored?.headChars ?? 0;
        expect(output.startsWith(kept.output.slice(0, headChars))).toBe(true);
        expect(output.endsWith(kept.output.slice(headChars))).toBe(true);
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
