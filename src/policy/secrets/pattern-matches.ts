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

/** The matches `matchesOfReference` gives, found without running `pattern` over a text that lacks its required literal. */
export function matchesOf(text: string, pattern: RegExp): Iterable<RegExpExecArray> {
  const literal = requiredLiteralOf(pattern);
  if (literal !== undefined && !text.includes(literal)) return [];
  return matchesOfReference(text, pattern);
}

const literals = new WeakMap<RegExp, string | null>();

function requiredLiteralOf(pattern: RegExp): string | undefined {
  let literal = literals.get(pattern);
  if (literal === undefined) {
    literal = requiredLiteral(pattern) ?? null;
    literals.set(pattern, literal);
  }
  return literal ?? undefined;
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

/**
 * The longest run of characters that every match of `pattern` holds, read from its source at the
 * top level: consecutive literal characters that are not optional. Anything else — a class, a
 * group, an assertion, `.`, an escape that names a class or a code — ends a run, so a run is
 * always a substring of a match. No literal (undefined) for a pattern that ignores case, has an
 * alternative at the top level, or that this reading does not follow.
 *
 * @example
 * requiredLiteral(/(?<![A-Za-z0-9])sk-ant-[A-Za-z0-9_-]{20,}/g); // "sk-ant-"
 * requiredLiteral(/[A-Za-z][A-Za-z0-9+.-]*:\/\/([^@]*)@/g); // "://"
 * requiredLiteral(/(?:ghp|gho)_[A-Za-z0-9]{30,}/g); // "_"
 */
export function requiredLiteral(pattern: RegExp): string | undefined {
  if (pattern.ignoreCase) return undefined;
  const source = pattern.source;
  let longest = "";
  let run = "";
  const endRun = () => {
    if (run.length > longest.length) longest = run;
    run = "";
  };
  for (let index = 0; index < source.length; ) {
    const char = source[index]!;
    let literal: string | undefined;
    let next: number;
    if (char === "|") return undefined;
    if (char === "(" || char === "[") {
      const end = closingIndex(source, index);
      if (end === undefined) return undefined;
      next = end;
    } else if (char === "\\") {
      const escaped = source[index + 1];
      if (escaped === undefined) return undefined;
      // `\d`, `\b`, `\x41`, `\u{…}`, `\p{…}`, `\k<…>`, `\1`: not a character of its own here.
      if (/[A-Za-z0-9]/.test(escaped)) return undefined;
      literal = escaped;
      next = index + 2;
    } else if ("^$.)]{}*+?".includes(char)) {
      if (char !== "^" && char !== "$" && char !== ".") return undefined;
      next = index + 1;
    } else {
      literal = char;
      next = index + 1;
    }
    const quantifier = quantifierAt(source, next);
    if (quantifier !== undefined) next += quantifier.length;
    if (literal === undefined || (quantifier !== undefined && quantifier.min === 0)) {
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
  return longest === "" ? undefined : longest;
}
