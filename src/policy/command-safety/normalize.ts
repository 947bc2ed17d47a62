/**
 * Step one of command safety (docs/policy.md#command-safety): turn whatever text a model produced into plain
 * shell text, so that look-alike spellings classify like the real thing. The classifier never runs
 * this text; it only decides about it.
 *
 * There are two readings of the same text, and the classifier judges both:
 * - the **visible** one, what a person sees in a terminal: ANSI escape sequences and invisible
 *   characters removed, so `r\u001b[0mm -rf /` reads `rm -rf /`;
 * - the **executed** one, what a shell would run: there an escape sequence is not markup but
 *   bytes inside a word, so it stays. Stripping a whole sequence could swallow shell syntax
 *   (`ls\u001b[;rm -rf /` shows as `lsm -rf /` but runs `rm -rf /`), so judging only the visible
 *   reading would fail open.
 */

/**
 * Terminal escape sequences: CSI (`ESC [ … final`, also the 8-bit `0x9B` form), OSC
 * (`ESC ] … BEL|ST`, also `0x9D`), the string sequences DCS/SOS/PM/APC, and two-byte escapes.
 */
const ANSI_ESCAPES: readonly RegExp[] = [
  /(?:\u001b\[|\u009b)[0-?]*[ -/]*[@-~]/g,
  /(?:\u001b\]|\u009d)[^\u0007\u001b\u009c]*(?:\u0007|\u001b\\|\u009c)?/g,
  /(?:\u001b[PX^_]|[\u0090\u0098\u009e\u009f])[^\u001b\u009c]*(?:\u001b\\|\u009c)?/g,
  /\u001b[ -/]*[0-~]?/g,
];

/**
 * Invisible format characters (soft hyphen, zero-width space and joiners, word joiner, BOM, and the
 * bidirectional overrides of "Trojan Source"): they change what a reader sees, never what a
 * reader would call the command.
 */
const INVISIBLE = /[\u00ad\u061c\u180e\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff]/g;

/** Control characters other than tab, newline, vertical tab, form feed and carriage return. */
const CONTROL = /[\u0000-\u0008\u000e-\u001f\u007f-\u009f]/g;

function collapse(text: string): string {
  return text
    .replace(/[ \t\u000b\u000c]+/g, " ")
    .replace(/ ?\n ?/g, "\n")
    .trim();
}

function lines(text: string): string {
  // NFKC first: fullwidth `ｒｍ －ｒｆ ／` becomes `rm -rf /`, and fullwidth spaces become spaces.
  // A bare carriage return shows the rest as a new line, so it separates like one; Unicode line
  // and paragraph separators and NEL too.
  return text.normalize("NFKC").replace(/\r\n?|[\u0085\u2028\u2029]/g, "\n");
}

/**
 * The visible reading: NFKC, ANSI escape sequences and invisible characters stripped, carriage
 * returns made newlines, other control characters dropped, runs of blanks collapsed to one space.
 * Newlines are kept: they separate commands.
 *
 * @example
 * visibleCommandText("ｒｍ\t -ｒｆ  \u001b[31m/") // "rm -rf /"
 */
export function visibleCommandText(text: string): string {
  let result = lines(text);
  for (const pattern of ANSI_ESCAPES) result = result.replace(pattern, "");
  return collapse(result.replace(INVISIBLE, "").replace(CONTROL, ""));
}

/**
 * The executed reading: like {@link visibleCommandText}, but escape sequences and invisible
 * characters stay in their words, as a shell would see them. Only NUL goes (no shell argument can
 * hold one, and the scanner uses it for placeholders).
 *
 * @example
 * executedCommandText("ls\u001b[;rm -rf /") // "ls\u001b[;rm -rf /": `ls\u001b[`, then `rm -rf /`
 */
export function executedCommandText(text: string): string {
  return collapse(lines(text).replace(/\u0000/g, ""));
}
