/**
 * The secret rules' required-literal prefilter (src/policy/secrets/pattern-matches.ts,
 * docs/design.md#14-speed-ups-and-their-references): a pattern is not run over a text that lacks
 * the literal every match of it holds. For every pattern the rules run, on any text — random text,
 * text made of the patterns' own characters, the example secrets and their sentences, strings
 * generated from the pattern itself — `matchesOf` gives exactly the matches of running the pattern
 * (`matchesOfReference`): the same positions, texts, groups and group indices.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { matchesOf, matchesOfReference, requiredLiteral } from "../src/policy/secrets/pattern-matches.js";
import { scannedPatterns } from "../src/policy/secrets/secret-patterns.js";
import { exampleSecrets, exampleSecretTexts, nonSecretTexts } from "../test/support/secret-examples.js";

const describeMatches = (matches: Iterable<RegExpExecArray>) => [...matches].map((match) => ({ index: match.index, groups: [...match], indices: match.indices?.map((pair) => (pair === undefined ? undefined : [...pair])) }));

/** The pattern without the lookarounds at its ends, for fast-check's generator (which has none). */
function generatorFor(pattern: RegExp): fc.Arbitrary<string> | undefined {
  const source = pattern.source.replace(/^\(\?<[=!](?:[^()\\]|\\.|\([^()]*\))*\)/, "").replace(/\(\?[=!](?:[^()\\]|\\.|\([^()]*\))*\)$/, "");
  try {
    const generator = fc.stringMatching(new RegExp(`^(?:${source})$`, pattern.flags.replace(/[gdy]/g, "")));
    fc.sample(generator, 1);
    return generator;
  } catch {
    return undefined;
  }
}

const examples = [...Object.values(exampleSecrets), ...Object.values(exampleSecretTexts), ...nonSecretTexts];
const separators = fc.constantFrom("", " ", "\n", "=", ":", '"', "'", "/", "?", "&", "-", "_", ".", "://", "@", "--", " -p", "\\n");

describe("the required-literal prefilter of the secret rules", () => {
  it("reads the literal every match must hold, and none where it cannot tell", () => {
    expect(requiredLiteral(/(?<![A-Za-z0-9])sk-ant-[A-Za-z0-9_-]{20,}/g)).toBe("sk-ant-");
    expect(requiredLiteral(/(?<![A-Za-z0-9+.-])[A-Za-z][A-Za-z0-9+.-]*:\/\/([^\s/?#"'`<>[\]\\]*)@/dg)).toBe("://");
    expect(requiredLiteral(/(?<![A-Za-z0-9:])[0-9]{8,10}:AA[A-Za-z0-9_-]{33}/g)).toBe(":AA");
    expect(requiredLiteral(/ab?c/g)).toBe("a");
    expect(requiredLiteral(/xa+b/g)).toBe("xa");
    expect(requiredLiteral(/a{0,3}bc/g)).toBe("bc");
    expect(requiredLiteral(/abc|xyz/g)).toBeUndefined();
    expect(requiredLiteral(/token/gi)).toBeUndefined();
    expect(requiredLiteral(/(\\?)"auth\1"/g)).toBeUndefined();
    expect(requiredLiteral(/[A-Za-z0-9]+/g)).toBeUndefined();
  });

  for (const pattern of scannedPatterns) {
    const literal = requiredLiteral(pattern);
    const generated = generatorFor(pattern);
    const alphabet = [...new Set(`${pattern.source}${literal ?? ""}aA0 \n`)].filter((char) => char !== "\\");
    const piece = fc.oneof(
      fc.string({ maxLength: 12 }),
      fc.string({ unit: fc.constantFrom(...alphabet), maxLength: 40 }),
      fc.constantFrom(...examples),
      ...(literal !== undefined ? [fc.constant(literal)] : []),
      ...(generated !== undefined ? [generated, generated] : []),
    );
    const text = fc.array(fc.tuple(separators, piece), { maxLength: 8 }).map((parts) => parts.map(([separator, part]) => `${separator}${part}`).join(""));

    it(`finds what running ${pattern.source.slice(0, 60)} finds (literal ${JSON.stringify(literal ?? null)})`, () => {
      let matched = 0;
      fc.assert(
        fc.property(text, (input) => {
          const reference = describeMatches(matchesOfReference(input, pattern));
          matched += reference.length;
          expect(describeMatches(matchesOf(input, pattern))).toEqual(reference);
          if (literal !== undefined) for (const match of reference) expect(match.groups[0]).toContain(literal);
        }),
        { numRuns: 300 },
      );
      // Not vacuous: the texts hold matches of every pattern that has a literal to skip by.
      if (literal !== undefined) expect(matched).toBeGreaterThan(0);
    });
  }
});
