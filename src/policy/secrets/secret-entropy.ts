/**
 * Key-like values: the entropy rule of the secret detector (`secret-detector.ts`). A value that
 * has no known format and no secret name is still redacted when it sits where a credential sits —
 * an assignment (`X=…`), a JSON or YAML field (`"x": "…"`), a header (`X-Thing: …`), a flag
 * (`--x …`) — and looks random: one token of 20 to 256 characters with letters and digits whose
 * Shannon entropy is near the maximum its length allows.
 *
 * Hand-written because it is a dozen lines over data that only this runtime knows: what it writes
 * itself (call IDs, fingerprints, hashes) and what tools print all day (git SHAs, UUIDs, paths,
 * test file names) must never be mistaken for a key, or every history would become unsafe for
 * native replay. So, conservatively:
 *
 * - hexadecimal values (hashes, SHAs, fingerprints, UUIDs) are never key-like: 16 symbols carry at
 *   most 4 bits a character, and a hex secret without a name or format is indistinguishable from a
 *   digest;
 * - a field named like an identifier or a digest (`id`, `callId`, `fingerprint`, `hash`, `sha`,
 *   `digest`, `checksum`, `integrity`, `etag`, `commit`, `signature`, `cursor`…) is exempt;
 * - IDs with a known prefix (`call_`, `toolu_`, `chatcmpl-`, `msg_`, `resp_`…), paths and file
 *   names (`test/history/token-estimator.test.ts`), and base64 that decodes to readable text are exempt;
 * - values longer than 256 characters (images, encrypted reasoning) are data, not keys.
 */
import { nameWords } from "../../util/secret-names.js";

/** Shortest value the entropy rule looks at; shorter random strings are too often IDs. */
export const minimumKeyLength = 20;
/** Longest: beyond this a token is data (an image, a signature blob), not a key. */
export const maximumKeyLength = 256;
/**
 * Entropy over the most a value of its length could have (`log2(min(length, 64))`). Random keys
 * of 20 to 40 characters score 0.88 to 0.95; words, identifiers and paths 0.7 to 0.8.
 */
export const minimumEntropyRatio = 0.85;

/**
 * Shannon entropy of `text` in bits per character.
 *
 * @example
 * shannonEntropy("aaaa"); // 0
 * shannonEntropy("abcd"); // 2
 */
export function shannonEntropy(text: string): number {
  const counts = new Map<string, number>();
  for (const char of text) counts.set(char, (counts.get(char) ?? 0) + 1);
  let entropy = 0;
  for (const count of counts.values()) {
    const probability = count / text.length;
    entropy -= probability * Math.log2(probability);
  }
  return entropy;
}

/** Last words of field names that hold identifiers or digests, never keys. */
const exemptLastWords = new Set([
  "id",
  "ids",
  "uuid",
  "guid",
  "fingerprint",
  "fingerprints",
  "hash",
  "sha",
  "sha1",
  "sha256",
  "sha512",
  "md5",
  "digest",
  "checksum",
  "integrity",
  "etag",
  "commit",
  "revision",
  "rev",
  "ref",
  "oid",
  "signature",
  "cursor",
  "version",
  "path",
  "file",
  "filename",
  "url",
  "uri",
  "href",
  "model",
]);

/**
 * Whether a field name announces an identifier or digest, whose value the entropy rule leaves
 * alone (`callId`, `tool_call_id`, `fingerprint`, `prevHash`, `commit`).
 *
 * @example
 * isKeyLikeExemptName("tool_call_id"); // true
 * isKeyLikeExemptName("X-Request-Signing"); // false
 */
export function isKeyLikeExemptName(name: string): boolean {
  let answer = exemptNames.get(name);
  if (answer === undefined) {
    const last = nameWords(name).at(-1);
    // `token` after a word that makes it no secret (`nextPageToken`, `eos_token`) is a cursor or vocabulary.
    answer = last !== undefined && (exemptLastWords.has(last) || last === "token");
    // Bounded, since names come from untrusted text.
    if (exemptNames.size >= 4096) exemptNames.clear();
    exemptNames.set(name, answer);
  }
  return answer;
}
const exemptNames = new Map<string, boolean>();

/** Prefixes of IDs that providers and turnlog itself write. */
const idPrefix = /^(?:call|toolu|msg|resp|rs|fc|run|req|evt|asst|thread|file|batch|chatcmpl|turn|native|session|sha\d+)[_-]/i;
const hexValue = /^(?:0x)?[0-9a-fA-F]+(?:-[0-9a-fA-F]+)*$/;
/** One token: an `=` inside is an assignment (`a=b`), only base64 padding may end it. */
const tokenCharacters = /^[A-Za-z0-9+/_.~-]+={0,2}$/;
/** A path or a file name: rooted, relative, or ending in an extension. */
const pathLike = /^(?:\.{0,2}\/|~\/)|\.[A-Za-z][A-Za-z0-9]{0,5}$/;

/** Base64 that decodes to readable text is encoded content, not a key. */
function isEncodedText(value: string): boolean {
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(value) && !/^[A-Za-z0-9_-]+={0,2}$/.test(value)) return false;
  const bytes = Buffer.from(value, value.includes("-") || value.includes("_") ? "base64url" : "base64");
  if (bytes.length < 12) return false;
  let readable = 0;
  for (const byte of bytes) if ((byte >= 0x20 && byte < 0x7f) || byte === 0x0a || byte === 0x0d || byte === 0x09) readable += 1;
  return readable / bytes.length >= 0.95;
}

/**
 * Whether a value looks like a random key: one token of 20 to 256 token characters, letters and
 * digits, not hexadecimal, not an ID, path or encoded text, with entropy near its maximum.
 *
 * @example
 * isKeyLikeValue("Q6psUXPD+wWrYWpE6xmKVdBW4G70hGyEoJrM6CBF"); // true
 * isKeyLikeValue("3f2a9c1d8e7b6a5f4e3d2c1b0a9f8e7d6c5b4a39"); // false: a git SHA
 * isKeyLikeValue("test/history/token-estimator.test.ts"); // false: a path
 */
export function isKeyLikeValue(value: string): boolean {
  if (value.length < minimumKeyLength || value.length > maximumKeyLength) return false;
  if (!tokenCharacters.test(value) || !/[0-9]/.test(value) || !/[A-Za-z]/.test(value)) return false;
  if (hexValue.test(value) || idPrefix.test(value) || pathLike.test(value)) return false;
  const ratio = shannonEntropy(value) / Math.log2(Math.min(value.length, 64));
  return ratio >= minimumEntropyRatio && !isEncodedText(value);
}
