/**
 * Where a text labels a value: `DB_PASSWORD=`, `export API_KEY="`, `--password=`, `"apiKey": `,
 * `password: ` (docs/policy.md#secrets). The secret detector reads each label it finds here and
 * decides by the name whether the value after it is a secret (`secret-patterns.ts`).
 *
 * Every line of code, JSON or a log has such a label, so this rule is tried at every position of
 * every text the detector scans: as a regular expression (`labelledValuePattern`, the reference) it
 * was the largest part of a scan that finds nothing (docs/performance.md#realistic-calls-issue-35).
 * `nextLabelledValue` finds the same matches by hand: it looks for the separators (`indexOf`, which
 * the engine runs far faster than a pattern with a look-behind tried at every position) and tries
 * only the few positions before each that can start a label, each decided by reading forward once. property-tests/labelled-values.test.ts checks that the two find the same
 * matches, with the same groups, on any text (docs/design.md#14-speed-ups-and-their-references).
 */

/**
 * A name followed by `=`, `:=` or `:`, as a regular expression: the optional dashes of a flag, an
 * optional quote (or the `\"` of JSON inside a string) that must close the name as well, the name,
 * blanks, the separator, blanks. The look-behind keeps the name whole and leaves `?name=` to the
 * query scanner.
 */
export const labelledValuePattern = /(?<![A-Za-z0-9_.$\\?&/@-]|&amp;)(-{1,2})?(\\?["'])?([A-Za-z_][A-Za-z0-9_.-]*)\2[ \t]*(:=|=|:)[ \t]*/dg;

/** One match of `labelledValuePattern`: where it starts and ends, and its groups. */
export interface LabelledValue {
  index: number;
  end: number;
  /** `-` or `--` before the name, if any (group 1). */
  dashes: string | undefined;
  /** The quote around the name, if any: `"`, `'`, `\"` or `\'` (group 2). */
  nameQuote: string | undefined;
  name: string;
  separator: ":=" | "=" | ":";
}

/** `[A-Za-z0-9_.-]`: a name's characters after its first. */
function isNameCode(code: number): boolean {
  return (code >= 97 && code <= 122) || (code >= 65 && code <= 90) || (code >= 48 && code <= 57) || code === 95 || code === 46 || code === 45;
}

/** `[A-Za-z_]`: a name's first character. */
function isNameStartCode(code: number): boolean {
  return (code >= 97 && code <= 122) || (code >= 65 && code <= 90) || code === 95;
}

/** `[A-Za-z0-9_.$\\?&/@-]`: a character no match may follow. */
function isLookbehindCode(code: number): boolean {
  return isNameCode(code) || code === 36 || code === 92 || code === 63 || code === 38 || code === 47 || code === 64;
}

/** The choices of the optional groups, in the order the pattern tries them (made once, not per position). */
const none = [0] as const;
const oneOrNone = [1, 0] as const;
const twoOrNone = [2, 0] as const;
const twoOneOrNone = [2, 1, 0] as const;

const isBlankCode = (code: number): boolean => code === 32 || code === 9;
const isQuoteCode = (code: number): boolean => code === 34 || code === 39;

/** Whether a character can stand in a match before its separator: a name character, a quote, `\\` or a blank. */
function isLabelCode(code: number): boolean {
  return isNameCode(code) || isQuoteCode(code) || code === 92 || isBlankCode(code);
}

/**
 * The first match of `labelledValuePattern` in `text` that starts at `from` or after, as
 * `labelledValuePattern.exec` finds it with `lastIndex` at `from`; undefined when there is none.
 * To find them all, start the next search at the last match's `end`.
 *
 * A match holds no `:` or `=` before its separator, so the separator of a match that starts before
 * the next `:` or `=` is that one, and everything from the match's start to it is characters a
 * label holds: only the positions after the last other character before it can start a match.
 * Those few are tried in order, each as the pattern tries it.
 *
 * @example
 * nextLabelledValue("export API_KEY=abc", 0); // { index: 7, end: 15, name: "API_KEY", separator: "=", … }
 */
export function nextLabelledValue(text: string, from: number): LabelledValue | undefined {
  let colon = text.indexOf(":", from);
  let equals = text.indexOf("=", from);
  for (let position = from; ; ) {
    if (colon >= 0 && colon < position) colon = text.indexOf(":", position);
    if (equals >= 0 && equals < position) equals = text.indexOf("=", position);
    const separator = colon < 0 ? equals : equals < 0 ? colon : Math.min(colon, equals);
    if (separator < 0) return undefined;
    let first = separator;
    while (first > position && isLabelCode(text.charCodeAt(first - 1))) first -= 1;
    for (let start = first; start < separator; start += 1) {
      if (start > 0 && isLookbehindCode(text.charCodeAt(start - 1))) continue;
      if (start >= 5 && text.charCodeAt(start - 1) === 59 && text.startsWith("&amp;", start - 5)) continue;
      const match = labelledValueAt(text, start);
      if (match !== undefined) return match;
    }
    position = separator + 1;
  }
}

/**
 * The match of the pattern (after its look-behind) at `start`, trying its choices in the order the
 * regular expression does: two dashes, one, none; then `\"`, `"`, no quote. The name is the whole
 * run of name characters, since a shorter one would be followed by a name character, which is
 * neither the closing quote, a blank nor a separator; the blanks before the separator likewise.
 */
function labelledValueAt(text: string, start: number): LabelledValue | undefined {
  const first = text.charCodeAt(start);
  const dashChoices = first !== 45 ? none : text.charCodeAt(start + 1) === 45 ? twoOneOrNone : oneOrNone;
  for (const dashes of dashChoices) {
    const quoteAt = start + dashes;
    const quoteCode = text.charCodeAt(quoteAt);
    const quoteChoices = quoteCode === 92 && isQuoteCode(text.charCodeAt(quoteAt + 1)) ? twoOrNone : isQuoteCode(quoteCode) ? oneOrNone : none;
    for (const quoteLength of quoteChoices) {
      const nameStart = quoteAt + quoteLength;
      if (!isNameStartCode(text.charCodeAt(nameStart))) continue;
      let nameEnd = nameStart + 1;
      while (nameEnd < text.length && isNameCode(text.charCodeAt(nameEnd))) nameEnd += 1;
      const quote = quoteLength === 0 ? undefined : text.slice(quoteAt, nameStart);
      if (quote !== undefined && !text.startsWith(quote, nameEnd)) continue;
      let cursor = nameEnd + quoteLength;
      while (cursor < text.length && isBlankCode(text.charCodeAt(cursor))) cursor += 1;
      const code = text.charCodeAt(cursor);
      const separator = code === 58 ? (text.charCodeAt(cursor + 1) === 61 ? ":=" : ":") : code === 61 ? "=" : undefined;
      if (separator === undefined) continue;
      let end = cursor + separator.length;
      while (end < text.length && isBlankCode(text.charCodeAt(end))) end += 1;
      return { index: start, end, dashes: dashes === 0 ? undefined : text.slice(start, quoteAt), nameQuote: quote, name: text.slice(nameStart, nameEnd), separator };
    }
  }
  return undefined;
}
