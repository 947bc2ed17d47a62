/**
 * The secret rules' required-literal prefilter (src/policy/secrets/pattern-matches.ts,
 * docs/design.md#14-speed-ups-and-their-references): a pattern is not run over a text that holds
 * none of the literals of which every match of it holds one. For every pattern the rules run, on any text — random text,
 * text made of the patterns' own characters, the example secrets and their sentences, strings
 * generated from the pattern itself — `matchesOf` gives exactly the matches of running the pattern
 * (`matchesOfReference`): the same positions, texts, groups and group indices.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { matchesOf, matchesOfReference, requiredLiteral, requiredLiterals } from "../src/policy/secrets/pattern-matches.js";
import { scannedPatterns } from "../src/policy/secrets/secret-patterns.js";
import { exampleSecrets, exampleSecretTexts, nonSecretTexts } from "../test/support/secret-examples.js";

const describeMatches = (matches: Iterable<RegExpExecArray>) => [...matches].map((match) => ({ index: match.index, groups: [...match], indices: match.indices?.map((pair) => (pair === undefined ? undefined : [...pair])) }));

/**
 * The pattern without the lookarounds at its ends and without ignoring case, for fast-check's
 * generator (which has neither): what it makes matches the pattern itself too.
 */
function generatorFor(pattern: RegExp): fc.Arbitrary<string> | undefined {
  const source = pattern.source.replace(/^\(\?<[=!](?:[^()\\]|\\.|\([^()]*\))*\)/, "").replace(/\(\?[=!](?:[^()\\]|\\.|\([^()]*\))*\)$/, "");
  try {
    const generator = fc.stringMatching(new RegExp(`^(?:${source})$`, pattern.flags.replace(/[gdyi]/g, "")));
    fc.sample(generator, 1);
    return generator;
  } catch {
    return undefined;
  }
}

/** Commands the example secrets do not hold, so that every rule with literals meets a match without luck. */
const commands = ["openssl enc -aes256 -pass pass:TESTONLYhunter2 -in a", "sshpass -p TESTONLYpw ssh host", "machine example.com login me password TESTONLYpw"];
const examples = [...Object.values(exampleSecrets), ...Object.values(exampleSecretTexts), ...nonSecretTexts, ...commands];
const separators = fc.constantFrom("", " ", "\n", "=", ":", '"', "'", "/", "?", "&", "-", "_", ".", "://", "@", "--", " -p", "\\n");

describe("the required-literal prefilter of the secret rules", () => {
  it("reads the literal every match must hold, and none where it cannot tell", () => {
    expect(requiredLiteral(/(?<![A-Za-z0-9])sk-ant-[A-Za-z0-9_-]{20,}/g)).toBe("sk-ant-");
    expect(requiredLiteral(/(?<![A-Za-z0-9+.-])[A-Za-z][A-Za-z0-9+.-]*:\/\/([^\s/?#"'`<>[\]\\]*)@/dg)).toBe("://");
    expect(requiredLiteral(/(?<![A-Za-z0-9:])[0-9]{8,10}:AA[A-Za-z0-9_-]{33}/g)).toBe(":AA");
    expect(requiredLiteral(/ab?c/g)).toBe("a");
    expect(requiredLiteral(/xa+b/g)).toBe("xa");
    expect(requiredLiteral(/a{0,3}bc/g)).toBe("bc");
    expect(requiredLiteral(/[A-Za-z0-9]+/g)).toBeUndefined();
    expect(requiredLiterals(/abc|xyz/g)).toEqual({ literals: ["abc", "xyz"], ignoreCase: false });
    expect(requiredLiterals(/abc|x?/g)).toBeUndefined();
    expect(requiredLiterals(/(?:AKIA|ASIA|A3T[A-Z0-9])[A-Z0-9]{16}/g)?.literals).toEqual(["AKIA", "ASIA", "A3T"]);
    expect(requiredLiterals(/(?:(?:sk|rk)_(?:live|test)_[a-z]+|whsec_[a-z]+)/g)?.literals).toEqual(["live", "test", "whsec_"]);
    expect(requiredLiterals(/x(?=abc)y/g)?.literals).toEqual(["x"]);
    expect(requiredLiterals(/Bearer [a-z]+/gi)).toEqual({ literals: ["bearer "], ignoreCase: true });
    // Unicode case folding maps `ſ` to `s` and the Kelvin sign to `k`: no literal then.
    expect(requiredLiterals(/sk-[a-z]+/giu)).toBeUndefined();
    expect(requiredLiterals(/σκ[a-z]+/gi)).toBeUndefined();
    expect(requiredLiterals(/(\\?)"auth\1"/g)).toBeUndefined();
    // A `v`-flag class holds classes and strings, and `--` in it is set difference, not text: such a
    // pattern is never read (the second, a class with a string and then a sure `c`, is refused for
    // the flag alone).
    expect(requiredLiterals(new RegExp("[[a-z]--[aeiou]]xyz", "gv"))).toBeUndefined();
    expect(requiredLiterals(new RegExp("[\\q{ab}]c", "gv"))).toBeUndefined();
    expect(requiredLiterals(/[[]--x/g)?.literals).toEqual(["--x"]);
  });

  for (const pattern of scannedPatterns) {
    const prefilter = requiredLiterals(pattern);
    const literals = prefilter?.literals ?? [];
    // A pattern that ignores case meets its literals in any case.
    const planted = prefilter?.ignoreCase === true ? literals.flatMap((literal) => [literal, literal.toUpperCase(), literal.replace(/^./, (first) => first.toUpperCase())]) : literals;
    const generated = generatorFor(pattern);
    const alphabet = [...new Set(`${pattern.source}${literals.join("")}aA0 \n`)].filter((char) => char !== "\\");
    // A pattern that ignores case also meets its matches in any mix of cases (`AuThOrIzAtIoN:`).
    const caseMixed =
      generated !== undefined && pattern.ignoreCase
        ? [fc.tuple(generated, fc.array(fc.boolean(), { maxLength: 64 })).map(([value, upper]) => [...value].map((char, index) => (upper[index % Math.max(1, upper.length)] === true ? char.toUpperCase() : char.toLowerCase())).join(""))]
        : [];
    const piece = fc.oneof(
      fc.string({ maxLength: 12 }),
      fc.string({ unit: fc.constantFrom(...alphabet), maxLength: 40 }),
      fc.constantFrom(...examples),
      ...(planted.length > 0 ? [fc.constantFrom(...planted)] : []),
      ...(generated !== undefined ? [generated, generated] : []),
      ...caseMixed,
    );
    const text = fc.array(fc.tuple(separators, piece), { maxLength: 8 }).map((parts) => parts.map(([separator, part]) => `${separator}${part}`).join(""));

    it(`finds what running ${pattern.source.slice(0, 60)} finds (literals ${JSON.stringify(literals)})`, () => {
      let matched = 0;
      // Matches in the texts fast-check makes, apart from the fixed examples run first.
      let matchedInGenerated = 0;
      // Every example as it is first, so that what the examples match is always checked.
      for (const example of examples) {
        const reference = describeMatches(matchesOfReference(example, pattern));
        matched += reference.length;
        expect(describeMatches(matchesOf(example, pattern))).toEqual(reference);
      }
      fc.assert(
        fc.property(text, (input) => {
          const reference = describeMatches(matchesOfReference(input, pattern));
          matched += reference.length;
          matchedInGenerated += reference.length;
          expect(describeMatches(matchesOf(input, pattern))).toEqual(reference);
          for (const match of reference) {
            const text = prefilter?.ignoreCase === true ? match.groups[0]!.toLowerCase() : match.groups[0]!;
            if (prefilter !== undefined) expect(literals.some((literal) => text.includes(literal))).toBe(true);
          }
        }),
        { numRuns: 300 },
      );
      // Not vacuous: the texts hold matches of every pattern that has a literal to skip by.
      if (prefilter !== undefined) expect(matched).toBeGreaterThan(0);
      // Nor left to the examples: the random texts meet matches of every such pattern themselves
      // (in 200 runs of 300 texts with other seeds, at least 8 texts of each matched).
      if (prefilter !== undefined) expect(matchedInGenerated).toBeGreaterThan(0);
    });
  }
});
