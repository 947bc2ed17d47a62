import { createHash } from "node:crypto";
import canonicalize from "canonicalize";

/** RFC 8785 canonical JSON (a maintained implementation: key order and number forms are exact). */
export function canonicalJson(value: unknown): string {
  const text = canonicalize(value);
  if (text === undefined) throw new TypeError("value cannot be represented as canonical JSON");
  return text;
}

/** SHA-256 hex of a string. */
export function sha256(text: string): string {
  return createHash("sha256").update(text).digest("hex");
}
