import { createHash, randomBytes, timingSafeEqual } from "node:crypto";

/**
 * A secret that grants access (`turnlog view`'s token and CSRF token, a LevelDB log's owner
 * channel): 256 bits from the operating system's cryptographic source, URL-safe base64.
 *
 * @example
 * newSecretToken(); // "q3V1…" (43 characters)
 */
export function newSecretToken(): string {
  return randomBytes(32).toString("base64url");
}

/**
 * Whether `given` is `token`, compared in constant time: both are hashed first, so neither their
 * content nor their length shows in how long the comparison takes.
 *
 * @example
 * tokensMatch(request.token, channel.token);
 */
export function tokensMatch(given: string, token: string): boolean {
  const digest = (text: string) => createHash("sha256").update(text, "utf8").digest();
  return timingSafeEqual(digest(given), digest(token));
}
