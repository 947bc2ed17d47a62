import canonicalize from "canonicalize";
import { configure } from "safe-stable-stringify";

/**
 * RFC 8785 canonical JSON: what every event hash, fingerprint and seal is computed over, so its
 * output for a given value is a contract (old logs verify and replay only while it stays
 * byte-identical).
 *
 * RFC 8785 is: object keys sorted by UTF-16 code units, no whitespace, strings and numbers written
 * as ECMAScript's `JSON.stringify` writes them, and no lone surrogates. `safe-stable-stringify`
 * in deterministic mode writes exactly that for a JSON value, about twice as fast as the
 * `canonicalize` package (7.7 against 16.5 µs for a 600-byte event, docs/performance.md#what-makes-a-tool-call-cheap-issue-15), which walks
 * every string in JavaScript looking for lone surrogates. The check left to do is the one
 * `JSON.stringify` makes cheap: it escapes a lone surrogate as `\ud800`–`\udfff` and never escapes a
 * well-formed pair, so a regex over the text finds one. property-tests/canonical-json.test.ts
 * shows the two agree — same text, or both refuse — on any JSON value, lone surrogates included.
 *
 * A value that is not plain JSON (a `toJSON` method, `undefined` or a function inside, NaN, a
 * cycle) goes to `canonicalize` itself, so every caller gets exactly its answer or its error.
 */
const stringify = configure({ deterministic: true, strict: true, circularValue: Error, bigint: false });

/**
 * A `\ud800`–`\udfff` escape in JSON text written by `JSON.stringify` (or any writer that escapes
 * only lone surrogates): a real escape, not an escaped backslash followed by "ud…".
 */
const loneSurrogateEscape = /(?<!\\)(?:\\\\)*\\ud[89a-f][0-9a-f]{2}/;

/** Whether JSON text as `JSON.stringify` writes it holds a lone surrogate (escaped). */
export function hasLoneSurrogateEscape(json: string): boolean {
  return json.includes("\\ud") && loneSurrogateEscape.test(json);
}

/**
 * The RFC 8785 canonical JSON of `value`, or `undefined` when it has none (`undefined`, a
 * function or a symbol at the top). Throws for what RFC 8785 refuses: a lone surrogate, a
 * non-finite number, a cycle.
 *
 * @example
 * canonicalJsonOf({ b: 1, a: [true, "x"] }); // '{"a":[true,"x"],"b":1}'
 */
export function canonicalJsonOf(value: unknown): string | undefined {
  if (isPlainJson(value, 0)) {
    const text = stringify(value);
    if (text !== undefined && !hasLoneSurrogateEscape(text)) return text;
  }
  // Not plain JSON, or a lone surrogate: the reference implementation says what it makes of it.
  return canonicalize(value);
}

/**
 * `canonicalJsonOf` for a value known to be plain JSON without a lone surrogate — what `JSON.parse`
 * returns for text that `hasLoneSurrogateEscape` passed — without walking it first to make sure.
 * An event's data on append is such a value (event-recording.ts checks and parses it).
 */
export function canonicalJsonOfParsed(value: unknown): string {
  const text = stringify(value);
  if (text === undefined) throw new TypeError("value cannot be represented as canonical JSON");
  return text;
}

/** Past this depth the walk leaves the value to `canonicalize` (a cycle, or a pathological value). */
const maxPlainDepth = 64;

/**
 * Whether `value` is made only of null, booleans, finite numbers, strings, arrays (without holes
 * or `undefined`) and objects without a `toJSON` method or an `undefined`, function or symbol
 * member — the values on which `safe-stable-stringify` and `canonicalize` are known to agree.
 */
function isPlainJson(value: unknown, depth: number): boolean {
  switch (typeof value) {
    case "string":
    case "boolean":
      return true;
    case "number":
      return Number.isFinite(value);
    case "object": {
      if (value === null) return true;
      if (depth > maxPlainDepth) return false;
      if (Array.isArray(value)) {
        for (let index = 0; index < value.length; index += 1) {
          if (!(index in value) || !isPlainJson(value[index], depth + 1)) return false;
        }
        return true;
      }
      const prototype = Object.getPrototypeOf(value) as unknown;
      if (prototype !== Object.prototype && prototype !== null) return false;
      if (typeof (value as { toJSON?: unknown }).toJSON === "function") return false;
      for (const key in value) {
        if (!isPlainJson((value as Record<string, unknown>)[key], depth + 1)) return false;
      }
      return true;
    }
    default:
      return false;
  }
}
