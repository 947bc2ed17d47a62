/**
 * Text a provider sent, made valid Unicode. A lone UTF-16 surrogate — half of an astral
 * character, as a model or an OpenAI-compatible server can stream it, raw or as a JSON `\ud83d`
 * escape — cannot be hashed (RFC 8785 refuses it), so the log refuses any event holding one. Each
 * becomes U+FFFD, the replacement character a UTF-8 decoder puts in place of bytes that are not
 * valid: what the model meant is lost there either way, and the rest of the response is kept.
 * Hand-written: `String.prototype.toWellFormed` does the first part but not the JSON escapes, and
 * no maintained library rewrites those.
 */

const loneSurrogate = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;

/**
 * The text with every lone surrogate replaced by U+FFFD; a well-formed text is returned as is.
 *
 * @example
 * wellFormedText("a\ud83d") // "a\ufffd"
 * wellFormedText("\ud83d\ude00") // "😀" (a pair is left alone)
 */
export function wellFormedText(text: string): string {
  return text.replace(loneSurrogate, "\ufffd");
}

const isHigh = (code: number) => code >= 0xd800 && code <= 0xdbff;
const isLow = (code: number) => code >= 0xdc00 && code <= 0xdfff;

/**
 * JSON text (a tool call's arguments, as the model wrote them) that parses to valid Unicode: raw
 * lone surrogates and escapes of lone surrogates (`\u` and four hex digits) both become U+FFFD
 * (the escape as `\ufffd`); an escaped pair (`\ud83d\ude00`) and an escaped backslash before
 * `u` (`\\ud800`, which is text, not an escape) are left alone. Text that is not JSON is treated
 * the same way.
 *
 * @example
 * wellFormedJsonText('{"value":"\\ud800"}') // '{"value":"\\ufffd"}'
 */
export function wellFormedJsonText(text: string): string {
  const raw = wellFormedText(text);
  if (!raw.includes("\\u")) return raw;
  // Every escape of `\u` and four hex digits, read left to right so that an escaped backslash is
  // skipped whole.
  const escapes: { at: number; code: number }[] = [];
  for (let position = 0; position < raw.length; position += 1) {
    if (raw[position] !== "\\") continue;
    const hex = raw[position + 1] === "u" ? raw.slice(position + 2, position + 6) : "";
    if (/^[0-9a-fA-F]{4}$/.test(hex)) {
      escapes.push({ at: position, code: Number.parseInt(hex, 16) });
      position += 5;
    } else {
      position += 1;
    }
  }
  const lone: number[] = [];
  for (let index = 0; index < escapes.length; index += 1) {
    const escape = escapes[index]!;
    const next = escapes[index + 1];
    if (isHigh(escape.code) && next !== undefined && next.at === escape.at + 6 && isLow(next.code)) {
      index += 1;
    } else if (isHigh(escape.code) || isLow(escape.code)) {
      lone.push(escape.at);
    }
  }
  let result = "";
  let copied = 0;
  for (const at of lone) {
    result += `${raw.slice(copied, at)}\\ufffd`;
    copied = at + 6;
  }
  return result + raw.slice(copied);
}

/**
 * A JSON value (a provider's replay echo) with every string, keys included, made valid Unicode.
 * Values without a lone surrogate come back unchanged (the same object).
 *
 * @example
 * wellFormedValue({ reasoning_content: "x\udc00" }) // { reasoning_content: "x\ufffd" }
 */
export function wellFormedValue<T>(value: T): T {
  const text = JSON.stringify(value);
  if (text === undefined || !/\\ud[89a-f]/i.test(text)) return value;
  return JSON.parse(wellFormedJsonText(text)) as T;
}
