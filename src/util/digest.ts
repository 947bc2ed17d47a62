import { createHash } from "node:crypto";
import { canonicalJsonOf } from "./canonical-json.js";

/** RFC 8785 canonical JSON (see canonical-json.ts: key order and number forms are exact). */
export function canonicalJson(value: unknown): string {
  const text = canonicalJsonOf(value);
  if (text === undefined) throw new TypeError("value cannot be represented as canonical JSON");
  return text;
}

/** SHA-256 hex of a string. */
export function sha256(text: string): string {
  return createHash("sha256").update(text).digest("hex");
}
