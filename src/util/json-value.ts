/**
 * Whether a value handed in by a tool or a host can be stored in the log as it is. The log keeps
 * JSON (docs/log.md, "Event data"); `JSON.stringify` throws on a BigInt or a cycle — the append
 * then fails after the call ran — and silently drops a function or a symbol and writes a
 * non-finite number as `null`, so the log would hold something other than what was handed in.
 * Each of those is refused here, by name and path, before anything is logged. Hand-written: the
 * JSON Schema and zod validators answer for a schema, not for "is this plain JSON", and walking
 * with the reason and path is a few lines.
 */

/** Deeper than this is refused: `JSON.stringify` would overflow the stack long before the log could store it. */
const maxDepth = 256;

/**
 * Why `value` is not JSON the log can store unchanged, naming where (`path` first, then
 * `.member` and `[index]`); `undefined` when it is. An object member that is `undefined` is
 * allowed (JSON leaves it out, as it does for every event); an object with `toJSON` (a `Date`)
 * is judged by what `toJSON` returns, as `JSON.stringify` writes it. A getter or a `toJSON` that
 * throws is reported as such.
 *
 * @example
 * notJsonReason({ count: 1n }, "metadata"); // "metadata.count is a BigInt"
 * notJsonReason({ when: new Date(0) }, "metadata"); // undefined
 */
export function notJsonReason(value: unknown, path: string): string | undefined {
  try {
    return reasonAt(value, path, new Set(), 0);
  } catch (error) {
    return `${path} could not be read: ${describeThrown(error)}`;
  }
}

function reasonAt(value: unknown, path: string, ancestors: Set<object>, depth: number): string | undefined {
  if (typeof value === "object" && value !== null && typeof (value as { toJSON?: unknown }).toJSON === "function") {
    value = (value as { toJSON: (key: string) => unknown }).toJSON("");
  }
  switch (typeof value) {
    case "string":
    case "boolean":
      return undefined;
    case "number":
      return Number.isFinite(value) ? undefined : `${path} is ${String(value)}, not a finite number`;
    case "bigint":
      return `${path} is a BigInt`;
    case "function":
      return `${path} is a function`;
    case "symbol":
      return `${path} is a symbol`;
    case "undefined":
      return `${path} is undefined`;
    case "object": {
      if (value === null) return undefined;
      if (depth >= maxDepth) return `${path} is nested more than ${maxDepth} levels deep`;
      if (ancestors.has(value)) return `${path} refers back to an enclosing value (a cycle)`;
      ancestors.add(value);
      try {
        if (Array.isArray(value)) {
          for (let index = 0; index < value.length; index += 1) {
            // JSON writes a hole or `undefined` in an array as null; anything else must be JSON.
            const item: unknown = value[index];
            if (item === undefined) continue;
            const reason = reasonAt(item, `${path}[${index}]`, ancestors, depth + 1);
            if (reason !== undefined) return reason;
          }
          return undefined;
        }
        for (const key of Object.keys(value)) {
          const member = (value as Record<string, unknown>)[key];
          if (member === undefined) continue;
          const reason = reasonAt(member, `${path}.${key}`, ancestors, depth + 1);
          if (reason !== undefined) return reason;
        }
        return undefined;
      } finally {
        ancestors.delete(value);
      }
    }
  }
  return `${path} is not JSON`;
}

/**
 * What a thrown value says, as text, whatever was thrown: an `Error`'s message, otherwise the
 * value as `String` writes it — or, for a value that cannot be made a string (an object without
 * a prototype, one whose `toString` throws), a sentence saying so.
 *
 * @example
 * describeThrown(new Error("disk full")); // "disk full"
 * describeThrown(Object.create(null)); // "a value that cannot be shown as text was thrown"
 */
export function describeThrown(error: unknown): string {
  try {
    if (error instanceof Error && typeof error.message === "string") return error.message;
    return String(error);
  } catch {
    return "a value that cannot be shown as text was thrown";
  }
}

/** A JSON object: an object that is neither `null` nor an array. */
export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/**
 * The member `key` of `value` when it is a JSON object (own members only), else undefined: for
 * data read without a schema — an unverified log's seal or approval — where a missing or odd
 * member is reported, not trusted.
 *
 * @example
 * memberOf(event.data, "by"); // "alice", or undefined when data holds no `by`
 */
export function memberOf(value: unknown, key: string): unknown {
  return isRecord(value) && Object.hasOwn(value, key) ? value[key] : undefined;
}
