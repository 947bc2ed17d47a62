/**
 * Translates a Go RE2 regular expression (gitleaks' rule syntax) into a JavaScript one with the
 * same meaning, for `scripts/update-secret-rules.ts`.
 *
 * Hand-written because no maintained npm package does this translation, and the subset gitleaks
 * uses is small: Node 20 has no inline modifiers, so a leading `(?i)` becomes the `i` flag, and an
 * inner `(?i)`, `(?i:…)`, `(?-i:…)` or `(?s:…)` is rewritten by spelling out what it means — each
 * letter as `[aA]`, each class with both cases, `.` as `[\s\S]`. `\z` and `\A` become `$` and `^`
 * (JavaScript's without the `m` flag mean the same), `[[:alnum:]]`-style POSIX classes their
 * ranges, `(?P<name>` the JavaScript `(?<name>`. Anything else it does not know is an error, so a
 * rule that uses new syntax is dropped and listed rather than translated wrongly.
 */

/** A regular expression as JavaScript takes it: `new RegExp(source, flags)`. */
export interface JavaScriptRegex {
  source: string;
  flags: string;
}

/** RE2 syntax with no JavaScript translation here; the message says which. */
export class UntranslatableRegexError extends Error {
  override readonly name = "UntranslatableRegexError";
}

const posixClasses: Record<string, string> = {
  alnum: "A-Za-z0-9",
  alpha: "A-Za-z",
  ascii: "\\x00-\\x7F",
  blank: " \\t",
  cntrl: "\\x00-\\x1F\\x7F",
  digit: "0-9",
  graph: "!-~",
  lower: "a-z",
  print: " -~",
  punct: "!-\\/:-@\\[-`{-~",
  space: "\\t\\n\\v\\f\\r ",
  upper: "A-Z",
  word: "A-Za-z0-9_",
  xdigit: "A-Fa-f0-9",
};

interface Flags {
  caseInsensitive: boolean;
  dotAll: boolean;
}

const isLetter = (char: string): boolean => /^[A-Za-z]$/.test(char);
const otherCase = (char: string): string => (char === char.toLowerCase() ? char.toUpperCase() : char.toLowerCase());

/** Escapes whose JavaScript meaning is the RE2 one, kept as they are. */
const sameEscapes = new Set(["d", "D", "w", "W", "s", "S", "b", "B", "n", "r", "t", "f", "v", "0"]);

class Translator {
  #index = 0;
  readonly #pattern: string;
  /** Whether any flag changes inside the pattern (then nothing can be left to a JavaScript flag). */
  readonly #expandCase: boolean;

  constructor(pattern: string, expandCase: boolean) {
    this.#pattern = pattern;
    this.#expandCase = expandCase;
  }

  translate(flags: Flags): string {
    const result = this.#sequence(flags, false);
    if (this.#index < this.#pattern.length) throw new UntranslatableRegexError(`unbalanced ")" at ${this.#index}`);
    return result;
  }

  /** A sequence up to the `)` that closes the current group (not consumed) or the end. */
  #sequence(outer: Flags, inGroup: boolean): string {
    const flags = { ...outer };
    let out = "";
    const pattern = this.#pattern;
    while (this.#index < pattern.length) {
      const char = pattern[this.#index]!;
      if (char === ")") {
        if (!inGroup) throw new UntranslatableRegexError(`unbalanced ")" at ${this.#index}`);
        return out;
      }
      if (char === "\\") {
        out += this.#escape(flags, false);
        continue;
      }
      if (char === "[") {
        out += this.#characterClass(flags);
        continue;
      }
      if (char === "(") {
        const flagGroup = /^\(\?([a-zA-Z]*)(?:-([a-zA-Z]*))?([:)])/.exec(pattern.slice(this.#index));
        if (flagGroup !== null && (flagGroup[1] !== "" || flagGroup[2] !== undefined)) {
          const inner = applyFlags(flags, flagGroup[1] ?? "", flagGroup[2] ?? "");
          this.#index += flagGroup[0].length;
          if (flagGroup[3] === ")") {
            // `(?i)` in the middle: to the end of the enclosing group.
            Object.assign(flags, inner);
            continue;
          }
          out += `(?:${this.#sequence(inner, true)})`;
          this.#expect(")");
          continue;
        }
        let opening = "(";
        const named = /^\(\?P?<([A-Za-z_][A-Za-z0-9_]*)>/.exec(pattern.slice(this.#index));
        if (named !== null) {
          opening = `(?<${named[1]}>`;
          this.#index += named[0].length;
        } else if (pattern.startsWith("(?:", this.#index)) {
          opening = "(?:";
          this.#index += 3;
        } else if (pattern.startsWith("(?", this.#index)) {
          throw new UntranslatableRegexError(`group syntax ${pattern.slice(this.#index, this.#index + 4)} at ${this.#index}`);
        } else {
          this.#index += 1;
        }
        out += opening + this.#sequence(flags, true);
        this.#expect(")");
        out += ")";
        continue;
      }
      if (char === ".") {
        out += flags.dotAll ? "[\\s\\S]" : "[^\\n]";
        this.#index += 1;
        continue;
      }
      if (char === "{") {
        // A repetition `{n}`, `{n,}`, `{n,m}`; RE2 reads any other `{` as a literal.
        const repetition = /^\{\d+(?:,\d*)?\}/.exec(pattern.slice(this.#index));
        out += repetition !== null ? repetition[0] : "\\{";
        this.#index += repetition !== null ? repetition[0].length : 1;
        continue;
      }
      if (char === "}") {
        out += "\\}";
        this.#index += 1;
        continue;
      }
      if (char === "/") {
        out += "\\/";
        this.#index += 1;
        continue;
      }
      out += this.#literal(char, flags);
      this.#index += 1;
    }
    if (inGroup) throw new UntranslatableRegexError("unclosed group");
    return out;
  }

  #expect(char: string): void {
    if (this.#pattern[this.#index] !== char) throw new UntranslatableRegexError(`expected "${char}" at ${this.#index}`);
    this.#index += 1;
  }

  #literal(char: string, flags: Flags): string {
    if (flags.caseInsensitive && this.#expandCase && isLetter(char)) return `[${char}${otherCase(char)}]`;
    return char;
  }

  /** An escape outside or inside a class; returns its JavaScript spelling. */
  #escape(flags: Flags, inClass: boolean): string {
    const pattern = this.#pattern;
    const next = pattern[this.#index + 1];
    if (next === undefined) throw new UntranslatableRegexError("trailing backslash");
    this.#index += 2;
    if (next === "x") {
      const hex = /^[0-9A-Fa-f]{2}/.exec(pattern.slice(this.#index));
      if (hex === null) throw new UntranslatableRegexError(`\\x{…} at ${this.#index}`);
      this.#index += 2;
      const code = Number.parseInt(hex[0], 16);
      const char = String.fromCharCode(code);
      if (isLetter(char) && flags.caseInsensitive && this.#expandCase) return inClass ? `${char}${otherCase(char)}` : `[${char}${otherCase(char)}]`;
      return `\\x${hex[0]}`;
    }
    if (!inClass && next === "z") return "$";
    if (!inClass && next === "A") return "^";
    if (sameEscapes.has(next) && !(inClass && (next === "b" || next === "B"))) return `\\${next}`;
    if (/[A-Za-z0-9]/.test(next)) throw new UntranslatableRegexError(`escape \\${next}`);
    // An escaped punctuation character is that character in both dialects.
    return `\\${next}`;
  }

  /** A bracketed class, with POSIX classes spelled out and both cases when case-insensitive. */
  #characterClass(flags: Flags): string {
    const pattern = this.#pattern;
    this.#index += 1;
    let negated = false;
    if (pattern[this.#index] === "^") {
      negated = true;
      this.#index += 1;
    }
    const items: string[] = [];
    const extra: string[] = [];
    let first = true;
    while (this.#index < pattern.length && (pattern[this.#index] !== "]" || first)) {
      first = false;
      const posix = /^\[:(\^?)([a-z]+):\]/.exec(pattern.slice(this.#index));
      if (posix !== null) {
        const ranges = posixClasses[posix[2]!];
        if (ranges === undefined || posix[1] === "^") throw new UntranslatableRegexError(`POSIX class ${posix[0]}`);
        items.push(ranges);
        this.#index += posix[0].length;
        continue;
      }
      const start = this.#classAtom(flags);
      if (pattern[this.#index] === "-" && pattern[this.#index + 1] !== "]" && this.#index + 1 < pattern.length) {
        this.#index += 1;
        const end = this.#classAtom(flags);
        items.push(`${start.text}-${end.text}`);
        if (flags.caseInsensitive && this.#expandCase && start.char !== undefined && end.char !== undefined) extra.push(...foldedRange(start.char, end.char));
        continue;
      }
      items.push(start.text);
      if (flags.caseInsensitive && this.#expandCase && start.char !== undefined && isLetter(start.char)) extra.push(otherCase(start.char));
    }
    if (pattern[this.#index] !== "]") throw new UntranslatableRegexError("unclosed class");
    this.#index += 1;
    return `[${negated ? "^" : ""}${items.join("")}${[...new Set(extra)].join("")}]`;
  }

  /** One character of a class: its JavaScript text, and the character when it is a plain one. */
  #classAtom(flags: Flags): { text: string; char?: string } {
    const pattern = this.#pattern;
    const char = pattern[this.#index]!;
    if (char === "\\") {
      const next = pattern[this.#index + 1];
      const text = this.#escape({ ...flags, caseInsensitive: false }, true);
      if (next !== undefined && !/[A-Za-z0-9]/.test(next)) return { text, char: next };
      if (next === "x") return { text, char: String.fromCharCode(Number.parseInt(text.slice(2), 16)) };
      return { text };
    }
    this.#index += 1;
    // `[` and `/` are literal in an RE2 class; JavaScript wants `[` escaped under the `v` flag only,
    // but escaping both is always safe.
    // A `-` that is no range (first or last) is escaped, so the other-case ranges appended after
    // it cannot turn it into one (`[a-z0-9-]` + `A-Z` would read `9-A`).
    if (char === "[" || char === "/" || char === "-") return { text: `\\${char}`, char };
    return { text: char, char };
  }
}

/** The other-case letters a case-insensitive range adds: `a-f` adds `A-F`. */
function foldedRange(start: string, end: string): string[] {
  const folded: string[] = [];
  const low = Math.max(start.charCodeAt(0), "A".charCodeAt(0));
  const high = Math.min(end.charCodeAt(0), "z".charCodeAt(0));
  const upper: number[] = [];
  const lower: number[] = [];
  for (let code = low; code <= high; code += 1) {
    const char = String.fromCharCode(code);
    if (!isLetter(char)) continue;
    (char === char.toLowerCase() ? upper : lower).push(otherCase(char).charCodeAt(0));
  }
  for (const codes of [upper, lower]) {
    if (codes.length === 0) continue;
    const first = String.fromCharCode(Math.min(...codes));
    const last = String.fromCharCode(Math.max(...codes));
    folded.push(first === last ? first : `${first}-${last}`);
  }
  return folded;
}

function applyFlags(flags: Flags, on: string, off: string): Flags {
  const result = { ...flags };
  for (const [letters, value] of [
    [on, true],
    [off, false],
  ] as const) {
    for (const letter of letters) {
      if (letter === "i") result.caseInsensitive = value;
      else if (letter === "s") result.dotAll = value;
      else throw new UntranslatableRegexError(`flag ${letter}`);
    }
  }
  return result;
}

/**
 * The JavaScript form of an RE2 pattern. A pattern that is case-insensitive throughout (a leading
 * `(?i)` and no `(?-i` after it) gets the `i` flag; otherwise case-insensitive parts are spelled
 * out. The result is checked to compile.
 *
 * @example
 * re2ToJavaScript("(?i)\\b(key)(?:[\\x60'\"\\s;]|\\z)"); // { source: "\\b(key)(?:[\\x60'\"\\s;]|$)", flags: "i" }
 * re2ToJavaScript("p8e-(?i)[a-z]{2}").source; // "p8e-[a-zA-Z]{2}"
 */
export function re2ToJavaScript(pattern: string): JavaScriptRegex {
  const leading = /^\(\?i\)/.exec(pattern);
  const uniform = leading !== null && !/\(\?[a-z]*-[a-z]*i|\(\?-/.test(pattern.slice(leading[0].length));
  const body = uniform ? pattern.slice(leading[0].length) : pattern;
  const source = new Translator(body, !uniform).translate({ caseInsensitive: false, dotAll: false });
  const flags = uniform ? "i" : "";
  try {
    new RegExp(source, flags);
  } catch (error) {
    throw new UntranslatableRegexError(`does not compile in JavaScript: ${(error as Error).message}`);
  }
  return { source, flags };
}
