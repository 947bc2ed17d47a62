/**
 * Text from the log or a provider, made safe to print on a terminal (docs/security.md, "Nothing
 * from the log reaches a terminal raw"): a tool's output, the model's text, an approval note or an
 * error message may hold escape sequences that retitle or clear the person's terminal, write their
 * clipboard (OSC 52), or reorder what a line shows (bidi overrides, "Trojan Source").
 *
 * Written here rather than taken from npm: the packages that exist either strip ANSI sequences
 * (`strip-ansi`: the person would not see that something was there, and a lone ESC, BEL, C1 or bidi
 * character passes), escape every non-ASCII character (`jsesc`: emoji and accents would be
 * mangled), or are unmaintained. This is one regular expression, and it is used at every print site.
 */

/**
 * The characters a terminal acts on instead of showing: C0 controls but newline and tab (ESC, BEL,
 * CR, backspace, …), DEL, the C1 controls U+0080–U+009F (U+009B is an 8-bit CSI) and the bidi
 * embeddings, overrides and isolates U+202A–U+202E, U+2066–U+2069.
 */
const terminalControls = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/g;

/** Besides {@link terminalControls}, what `JSON.stringify` leaves raw and a terminal may act on: U+2028, U+2029. */
const jsonRawControls = /[\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;

function visible(character: string): string {
  const code = character.charCodeAt(0);
  return code <= 0xff ? `\\x${code.toString(16).padStart(2, "0")}` : `\\u${code.toString(16).padStart(4, "0")}`;
}

/**
 * `text` with every terminal control shown as an escape (`\x1b`, `\x9b`, `\u202e`); newlines, tabs
 * and every printable character (any script, emoji) unchanged. Idempotent: what it writes holds no
 * control, so a second pass changes nothing.
 *
 * @example
 * terminalText("\u001b]0;owned\u0007done\n"); // "\\x1b]0;owned\\x07done\n"
 */
export function terminalText(text: string): string {
  return text.replace(terminalControls, visible);
}

/**
 * A copy of `value` with {@link terminalText} applied to every string in it — keys and values of
 * plain objects, arrays, `Map`s and `Set`s — for formatters that print parts of recorded events,
 * session state or audit rows. Anything else (numbers, class instances) is kept as it is.
 *
 * @example
 * terminalSafe({ output: "\u001b[2J" }); // { output: "\\x1b[2J" }
 */
export function terminalSafe<T>(value: T): T {
  return safeCopy(value) as T;
}

function safeCopy(value: unknown): unknown {
  if (typeof value === "string") return terminalText(value);
  if (value === null || typeof value !== "object") return value;
  if (Array.isArray(value)) return value.map(safeCopy);
  if (value instanceof Map) return new Map([...value].map(([key, item]) => [safeCopy(key), safeCopy(item)]));
  if (value instanceof Set) return new Set([...value].map(safeCopy));
  const prototype = Object.getPrototypeOf(value) as unknown;
  if (prototype !== Object.prototype && prototype !== null) return value;
  // Entries are defined, not assigned, so a "__proto__" key stays an ordinary key.
  const copy: Record<string, unknown> = {};
  for (const [key, item] of Object.entries(value)) Object.defineProperty(copy, terminalText(key), { value: safeCopy(item), enumerable: true, writable: true, configurable: true });
  return copy;
}

/**
 * JSON for stdout: `JSON.stringify`, with what it leaves raw and a terminal could act on (DEL, the
 * C1 controls, U+2028/U+2029, the bidi controls) written as `\u` escapes (four hex digits) — still the same JSON
 * value for whoever parses it, and harmless when printed on a terminal.
 *
 * @example
 * jsonText({ text: "\u009b2J" }); // '{"text":"\\u009b2J"}'
 */
export function jsonText(value: unknown, indent?: number): string {
  return (JSON.stringify(value, null, indent) ?? "undefined").replace(jsonRawControls, (character) => `\\u${character.charCodeAt(0).toString(16).padStart(4, "0")}`);
}
