/**
 * Where the secret rules' regular expressions run over a text (docs/policy.md#secrets). Most text
 * holds no secret, so the cost of a scan is the cost of finding nothing: a rule such as
 * `(?<![A-Za-z0-9])sk-ant-[A-Za-z0-9_-]{20,}` starts with a lookbehind, which keeps V8 from
 * skipping ahead to a likely start, and tries every position of the text. Every match of it holds
 * `sk-ant-`, though, and `String.prototype.includes` finds a literal far faster than the rule can
 * fail: a rule whose pattern has a literal every match must hold is not run over a text without it.
 * `matchesOfReference` runs every rule, and property-tests/secret-pattern-prefilter.test.ts checks
 * that the two agree (docs/design.md#14-speed-ups-and-their-references).
 */
import { buildKeywordAutomaton, scanKeywords } from "./keyword-automaton.js";

/**
 * `text.matchAll(pattern)` for a global pattern, without the copy of the regex `matchAll` makes on
 * every call when there is nothing to match — the common case, since most text holds no secret:
 * 4.0 → 0.4 µs for a dozen patterns over a short tool output (docs/performance.md#what-makes-a-tool-call-cheap-issue-15). `test` leaves
 * `lastIndex` after the first match, and `matchAll` starts where `lastIndex` is: both reset it.
 */
export function matchesOfReference(text: string, pattern: RegExp): Iterable<RegExpExecArray> {
  pattern.lastIndex = 0;
  const found = pattern.test(text);
  pattern.lastIndex = 0;
  return found ? (text.matchAll(pattern) as Iterable<RegExpExecArray>) : [];
}

/** The matches `matchesOfReference` gives, found without running `pattern` over a text that lacks each of its required literals. */
export function matchesOf(text: string, pattern: RegExp): Iterable<RegExpExecArray> {
  const literals = literalSet();
  const literalIds = literals?.idsOf.get(pattern);
  if (literals !== undefined && literalIds !== undefined) {
    const present = literals.presentIn(text);
    if (!literalIds.some((id) => present[id] === 1)) return [];
    return matchesOfReference(text, pattern);
  }
  const prefilter = prefilterOf(pattern);
  if (prefilter !== undefined) {
    const haystack = prefilter.ignoreCase ? lowerCased(text) : text;
    if (!prefilter.literals.some((literal) => haystack.includes(literal))) return [];
  }
  return matchesOfReference(text, pattern);
}

/**
 * The patterns whose literals are looked for in one pass (`literalSet`): the rules register the
 * patterns they run over every text (`secret-patterns.ts`); any other pattern looks for its own
 * literals with `includes`. Registered, not compiled: the automaton is built on the first scan, as
 * the gitleaks rules are, so that an import that never redacts does not pay for it.
 */
let registeredPatterns: readonly RegExp[] = [];
let literalSetBuilt: LiteralSet | undefined;

/**
 * Registers the patterns whose required literals `matchesOf` finds in one pass over a text.
 *
 * @example
 * registerPrefilteredPatterns([/sk-ant-[A-Za-z0-9]{20,}/g, /AKIA[A-Z0-9]{16}/g]);
 */
export function registerPrefilteredPatterns(patterns: readonly RegExp[]): void {
  registeredPatterns = patterns;
  literalSetBuilt = undefined;
}

/**
 * The required literals of the registered patterns, each found in one pass of an automaton
 * (`keyword-automaton.ts`) instead of one `includes` per literal: the literals of some 50 patterns
 * read a 1 350-character output about 75 times, which cost more than most rules' own work.
 * The automaton reads ASCII letters in either case; a literal of a pattern that keeps case is
 * checked where the automaton finds it (`startsWith`), one that ignores case is found as it is —
 * the pattern's own case folding (not under `u`, `requiredLiterals`) matches an ASCII letter only
 * by an ASCII letter. A pattern with a literal that is not ASCII keeps `includes`.
 */
interface LiteralSet {
  /** Each registered pattern's literals, as indices into `literals`. */
  idsOf: Map<RegExp, number[]>;
  /** Which literals `text` holds: 1 at each present literal's index. */
  presentIn(text: string): Uint8Array;
}

function literalSet(): LiteralSet | undefined {
  if (literalSetBuilt !== undefined || registeredPatterns.length === 0) return literalSetBuilt;
  const literals: { text: string; exact: boolean }[] = [];
  const idsOf = new Map<RegExp, number[]>();
  for (const pattern of registeredPatterns) {
    const prefilter = prefilterOf(pattern);
    if (prefilter === undefined || prefilter.literals.some((literal) => /[^\x00-\x7f]/.test(literal))) continue;
    idsOf.set(
      pattern,
      prefilter.literals.map((literal) => {
        const exact = !prefilter.ignoreCase;
        const known = literals.findIndex((entry) => entry.text === literal && entry.exact === exact);
        if (known >= 0) return known;
        literals.push({ text: literal, exact });
        return literals.length - 1;
      }),
    );
  }
  const automaton = buildKeywordAutomaton(literals.map((literal) => [literal.text.toLowerCase()]));
  let lastText: string | undefined;
  let lastPresent = new Uint8Array(literals.length);
  literalSetBuilt = {
    idsOf,
    presentIn(text: string): Uint8Array {
      if (text === lastText) return lastPresent;
      const present = new Uint8Array(literals.length);
      scanKeywords(automaton, text, (id, end) => {
        if (present[id] === 1) return;
        const literal = literals[id]!;
        if (literal.exact && !text.startsWith(literal.text, end - literal.text.length)) return;
        present[id] = 1;
      });
      lastText = text;
      lastPresent = present;
      return present;
    },
  };
  return literalSetBuilt;
}

/** What a pattern is skipped by: literals of which every match holds one (lower-cased when the pattern ignores case). */
export interface Prefilter {
  literals: readonly string[];
  ignoreCase: boolean;
}

const prefilters = new WeakMap<RegExp, Prefilter | null>();

function prefilterOf(pattern: RegExp): Prefilter | undefined {
  let prefilter = prefilters.get(pattern);
  if (prefilter === undefined) {
    prefilter = requiredLiterals(pattern) ?? null;
    prefilters.set(pattern, prefilter);
  }
  return prefilter ?? undefined;
}

/** The last text lower-cased: the rules run over one text after another, each with many patterns. */
let lastText: string | undefined;
let lastLowerCased = "";

function lowerCased(text: string): string {
  if (text !== lastText) {
    lastText = text;
    lastLowerCased = text.toLowerCase();
  }
  return lastLowerCased;
}

/**
 * The literals of which every match of `pattern` holds one, read from its source: the longest run
 * of literal characters that no match can leave out, or, where that is shorter, one literal of each
 * alternative of a group every match goes through (`(?:AKIA|ASIA|A3T…)`, or the pattern's own
 * alternatives at the top), whichever set's shortest literal is longest. Anything this reading does
 * not follow (a backreference, an unknown escape) gives no literals: the pattern always runs. A
 * pattern that ignores case gets lower-cased literals, to look for in the lower-cased text — only
 * ASCII ones, and not with the `u` or `v` flag, whose case folding maps other characters to ASCII
 * letters (`ſ` to `s`).
 *
 * @example
 * requiredLiterals(/(?<![A-Za-z0-9])sk-ant-[A-Za-z0-9_-]{20,}/g); // { literals: ["sk-ant-"], ignoreCase: false }
 * requiredLiterals(/(?:AKIA|ASIA|A3T[A-Z0-9])[A-Z0-9]{16}/g); // { literals: ["AKIA", "ASIA", "A3T"], … }
 * requiredLiterals(/bearer[ \t]+/gi); // { literals: ["bearer"], ignoreCase: true }
 */
export function requiredLiterals(pattern: RegExp): Prefilter | undefined {
  // With the `v` flag a class can hold classes (`[[a-z]--[aeiou]]`), which `closingIndex` does not
  // follow: such a pattern always runs. Without `v`, a `[` inside a class is an ordinary character.
  if (pattern.flags.includes("v")) return undefined;
  if (pattern.ignoreCase && pattern.unicode) return undefined;
  const literals = alternativesLiterals(pattern.source);
  if (literals === undefined) return undefined;
  // Ignoring case, an ASCII character matches only itself in either case; `σ` also matches `ς`,
  // which lower-cases to itself: a literal with such a character is no sure sign.
  if (pattern.ignoreCase && literals.some((literal) => /[^\x00-\x7f]/.test(literal))) return undefined;
  return { literals: pattern.ignoreCase ? literals.map((literal) => literal.toLowerCase()) : literals, ignoreCase: pattern.ignoreCase };
}

/** The single longest literal of `requiredLiterals`, or undefined (for the examples in the docs and tests). */
export function requiredLiteral(pattern: RegExp): string | undefined {
  const prefilter = requiredLiterals(pattern);
  return prefilter?.literals.length === 1 ? prefilter.literals[0] : undefined;
}

/** The top-level alternatives of a source (split at `|` outside groups and classes), or undefined when it does not parse. */
function alternativesOf(source: string): string[] | undefined {
  const alternatives: string[] = [];
  let from = 0;
  for (let index = 0; index < source.length; index += 1) {
    const char = source[index];
    if (char === "\\") index += 1;
    else if (char === "(" || char === "[") {
      const end = closingIndex(source, index);
      if (end === undefined) return undefined;
      index = end - 1;
    } else if (char === "|") {
      alternatives.push(source.slice(from, index));
      from = index + 1;
    }
  }
  alternatives.push(source.slice(from));
  return alternatives;
}

/** Literals of which every match of `source` holds one: one set per alternative, joined. */
function alternativesLiterals(source: string): string[] | undefined {
  const alternatives = alternativesOf(source);
  if (alternatives === undefined) return undefined;
  const literals: string[] = [];
  for (const alternative of alternatives) {
    const found = sequenceLiterals(alternative);
    if (found === undefined) return undefined;
    literals.push(...found);
  }
  return [...new Set(literals)];
}

const shortest = (literals: readonly string[]): number => Math.min(...literals.map((literal) => literal.length));

/** How many characters an escape at `index` (a backslash) takes, when it is one this reading follows. */
function escapeLength(source: string, index: number): number | undefined {
  const escaped = source[index + 1];
  if (escaped === undefined) return undefined;
  if (!/[A-Za-z0-9]/.test(escaped)) return 2;
  if ("dDwWsSbBnrtvf".includes(escaped)) return 2;
  if (escaped === "x") return /^[0-9A-Fa-f]{2}$/.test(source.slice(index + 2, index + 4)) ? 4 : undefined;
  if (escaped === "u") {
    if (/^[0-9A-Fa-f]{4}$/.test(source.slice(index + 2, index + 6))) return 6;
    const braces = /^\{[0-9A-Fa-f]+\}/.exec(source.slice(index + 2));
    return braces === null ? undefined : 2 + braces[0].length;
  }
  return undefined;
}

/**
 * Literals of which every match of one alternative (a sequence of atoms) holds one: its longest run
 * of consecutive literal characters that are not optional, or the literals of a group every match
 * goes through, whichever has the longer shortest literal.
 */
function sequenceLiterals(source: string): string[] | undefined {
  let best: string[] | undefined;
  const consider = (candidate: string[] | undefined) => {
    if (candidate !== undefined && candidate.length > 0 && shortest(candidate) > 0 && (best === undefined || shortest(candidate) > shortest(best))) best = candidate;
  };
  let run = "";
  const endRun = () => {
    if (run !== "") consider([run]);
    run = "";
  };
  for (let index = 0; index < source.length; ) {
    const char = source[index]!;
    let literal: string | undefined;
    let group: string | undefined;
    let next: number;
    if (char === "(" || char === "[") {
      const end = closingIndex(source, index);
      if (end === undefined) return undefined;
      if (char === "(") {
        const inner = source.slice(index + 1, end - 1);
        // Lookarounds hold no character of the match; a named or non-capturing group is its content.
        if (!/^\?<?[=!]/.test(inner)) group = inner.replace(/^\?(?::|<[A-Za-z_$][\w$]*>)/, "");
      }
      next = end;
    } else if (char === "\\") {
      const length = escapeLength(source, index);
      if (length === undefined) return undefined;
      if (length === 2 && !/[A-Za-z0-9]/.test(source[index + 1]!)) literal = source[index + 1];
      next = index + length;
    } else if ("^$.".includes(char)) {
      next = index + 1;
    } else if (")]{}*+?|".includes(char)) {
      return undefined;
    } else {
      literal = char;
      next = index + 1;
    }
    const quantifier = quantifierAt(source, next);
    if (quantifier !== undefined) next += quantifier.length;
    const required = quantifier === undefined || quantifier.min > 0;
    if (group !== undefined && required) {
      endRun();
      consider(alternativesLiterals(group));
    } else if (literal === undefined || !required) {
      endRun();
    } else if (quantifier !== undefined) {
      // `a+`, `a{2,}`: the last `a` is followed by what follows, the first preceded by what precedes.
      run += literal;
      endRun();
      run = literal;
    } else {
      run += literal;
    }
    index = next;
  }
  endRun();
  return best;
}

/** A quantifier at `index` of a pattern's source: its least count and its length, lazy `?` included. */
function quantifierAt(source: string, index: number): { min: number; length: number } | undefined {
  const char = source[index];
  let quantifier: { min: number; length: number } | undefined;
  if (char === "?" || char === "*") quantifier = { min: 0, length: 1 };
  else if (char === "+") quantifier = { min: 1, length: 1 };
  else if (char === "{") {
    const braces = /^\{(\d+)(?:,\d*)?\}/.exec(source.slice(index));
    if (braces !== null) quantifier = { min: Number(braces[1]), length: braces[0].length };
  }
  if (quantifier !== undefined && source[index + quantifier.length] === "?") quantifier.length += 1;
  return quantifier;
}

/** The index just past the group or class opened at `index` (`(` or `[`), escapes and classes inside skipped. */
function closingIndex(source: string, index: number): number | undefined {
  if (source[index] === "[") {
    for (let at = index + 1; at < source.length; at += 1) {
      if (source[at] === "\\") at += 1;
      else if (source[at] === "]") return at + 1;
    }
    return undefined;
  }
  let depth = 0;
  for (let at = index; at < source.length; at += 1) {
    const char = source[at];
    if (char === "\\") at += 1;
    else if (char === "[") {
      const end = closingIndex(source, at);
      if (end === undefined) return undefined;
      at = end - 1;
    } else if (char === "(") depth += 1;
    else if (char === ")") {
      depth -= 1;
      if (depth === 0) return at + 1;
    }
  }
  return undefined;
}
