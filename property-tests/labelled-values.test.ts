/**
 * The labelled-value rule found by hand (`nextLabelledValue`, src/policy/secrets/labelled-values.ts,
 * docs/design.md#14-speed-ups-and-their-references) against its reference, the regular expression
 * `labelledValuePattern`: on any text — random, made of the characters the pattern reads (name
 * characters, quotes, `\"`, dashes, blanks, separators, the look-behind's characters and `&amp;`),
 * realistic tool outputs, the example secrets — the same matches in the same order, with the same
 * start, end and groups, and the same first match from any position.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { labelledValuePattern, nextLabelledValue } from "../src/policy/secrets/labelled-values.js";
import { realisticScript } from "../bench/realistic-workload.js";
import { exampleSecrets, exampleSecretTexts, nonSecretTexts } from "../test/support/secret-examples.js";

const fromPattern = (match: RegExpExecArray) => ({ index: match.index, end: match.index + match[0].length, dashes: match[1], nameQuote: match[2], name: match[3], separator: match[4] });

function byPattern(text: string): ReturnType<typeof fromPattern>[] {
  return [...text.matchAll(labelledValuePattern)].map(fromPattern);
}

function byHand(text: string): ReturnType<typeof fromPattern>[] {
  const found = [];
  for (let match = nextLabelledValue(text, 0); match !== undefined; match = nextLabelledValue(text, match.end)) found.push({ ...match });
  return found;
}

/** The first match from `from`, as `exec` finds it with `lastIndex` there. */
function firstByPattern(text: string, from: number) {
  const pattern = new RegExp(labelledValuePattern.source, labelledValuePattern.flags);
  pattern.lastIndex = from;
  const match = pattern.exec(text);
  return match === null ? undefined : fromPattern(match);
}

const realistic = realisticScript(4).flat().map((call) => call.output);
const examples = [...Object.values(exampleSecrets), ...Object.values(exampleSecretTexts), ...nonSecretTexts];
const token = fc.constantFrom<string>("a", "Z", "_", "0", ".", "-", "--", "$", "\\", "?", "&", "/", "@", '"', "'", '\\"', "\\'", ":", "=", ":=", ";", " ", "\t", "\n", "&amp;", "amp;", "é", "name", "API_KEY", "x.y-z", "(", "{");
/** A label as the pattern reads one, or nearly: dashes, a quote, a name, a quote (the same or not), blanks, a separator. */
const pick = (...choices: string[]): fc.Arbitrary<string> => fc.constantFrom(...choices);
const label = fc
  .tuple(
    pick("", "-", "--", "---"),
    pick("", '"', "'", '\\"', "\\'", "\\"),
    pick("a", "API_KEY", "x.y-z", "_1", "1a", "-a", "name$"),
    pick("", '"', "'", '\\"', "\\'", "\\"),
    pick("", " ", "\t ", "\n"),
    pick(":", "=", ":=", "==", "::", ";", ""),
    pick("", " ", "\t", "x"),
  )
  .map((parts) => parts.join(""));
const dense = fc.array(fc.oneof(token, label), { maxLength: 40 }).map((parts) => parts.join(""));
const text = fc.oneof(
  dense,
  fc.string({ maxLength: 60 }),
  fc.array(fc.oneof(dense, fc.constantFrom(...realistic, ...examples)), { maxLength: 4 }).map((parts) => parts.join("")),
);

describe("the labelled-value rule found by hand", () => {
  it("finds what the regular expression finds in the realistic outputs and the example secrets", () => {
    for (const value of [...realistic, ...examples]) expect(byHand(value)).toEqual(byPattern(value));
  });

  it("finds the same matches, in order, with the same groups, in any text", () => {
    let matched = 0;
    fc.assert(
      fc.property(text, (value) => {
        const reference = byPattern(value);
        matched += reference.length;
        expect(byHand(value)).toEqual(reference);
      }),
      { numRuns: 3000 },
    );
    expect(matched).toBeGreaterThan(1000);
  });

  it("finds the same first match from any position", () => {
    fc.assert(
      fc.property(text, fc.nat(), (value, at) => {
        const from = value.length === 0 ? 0 : at % (value.length + 1);
        const found = nextLabelledValue(value, from);
        expect(found === undefined ? undefined : { ...found }).toEqual(firstByPattern(value, from));
      }),
      { numRuns: 1000 },
    );
  });
});
