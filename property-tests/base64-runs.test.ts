/**
 * The base64 rules ask for a text's longest base64 run first (src/policy/secrets/base64-runs.ts,
 * docs/design.md#14-speed-ups-and-their-references): `longestBase64Run` is the longest run of
 * `[A-Za-z0-9+/]`, and `base64Runs`, which stops when that is shorter than 22, finds exactly the runs
 * its reference finds by reading every character — on random text, text dense in base64 characters,
 * padding and the characters that end or disqualify a run, and realistic tool outputs.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { longestBase64Run } from "../src/policy/secrets/base64-runs.js";
import { base64Runs, base64RunsReference } from "../src/policy/secrets/secret-boundaries.js";
import { redactText } from "../src/policy/secrets/secret-detector.js";
import { realisticScript } from "../bench/realistic-workload.js";

const longestByPattern = (text: string) => Math.max(0, ...(text.match(/[A-Za-z0-9+/]+/g) ?? []).map((run) => run.length));

const realistic = realisticScript(4).flat().map((call) => call.output);
const base64Unit = fc.constantFrom("a", "Z", "0", "9", "+", "/", "f", "A");
const blob = fc.integer({ min: 18, max: 44 }).chain((length) => fc.string({ unit: base64Unit, minLength: length, maxLength: length }));
const piece = fc.oneof(blob, fc.string({ unit: base64Unit, maxLength: 30 }), fc.constantFrom("=", "==", "===", " ", "\n", "_", "-", ".", ":", "é", "\\n"), fc.string({ maxLength: 10 }), fc.constantFrom(...realistic));
const text = fc.array(piece, { maxLength: 8 }).map((parts) => parts.join(""));

describe("the longest base64 run, asked first", () => {
  it("is the longest run of base64 characters, and base64Runs finds what its reference finds", () => {
    fc.assert(
      fc.property(text, (value) => {
        expect(longestBase64Run(value)).toBe(longestByPattern(value));
        expect(base64Runs(value)).toEqual(base64RunsReference(value));
      }),
      { numRuns: 2000 },
    );
  });

  it("keeps the shortest run worth decoding: 22 base64 characters and two of padding", () => {
    const encoded = Buffer.from("PASSWORD=hunter2").toString("base64");
    expect(encoded).toBe("UEFTU1dPUkQ9aHVudGVyMg==");
    expect(redactText(`config: ${encoded}`).kinds).toContain("encoded-secret");
  });
});
