import { createHash, sign, verify } from "node:crypto";
import { canonicalJsonOf } from "../../util/canonical-json.js";
import type { SealKey } from "./seal-key.js";

/** The event type of a seal (in its own stream, never in the stream it seals). */
export const sealEventType = "log.stream.sealed";

/** The prefix of every seal stream: `turnlog.seals/<sealed stream>`. */
export const sealStreamPrefix = "turnlog.seals/";

/**
 * The stream that holds the seals of `stream`. Seals live beside the stream they seal, not in it,
 * so no fold, projection, history, audit or replay of a session ever sees one, and a seal can
 * never change a decision.
 *
 * @example
 * sealStreamOf("session-s1"); // "turnlog.seals/session-s1"
 */
export function sealStreamOf(stream: string): string {
  return `${sealStreamPrefix}${stream}`;
}

/** Whether `stream` is a seal stream (never sealed itself). */
export function isSealStream(stream: string): boolean {
  return stream.startsWith(sealStreamPrefix);
}

/**
 * The events that are always sealed (docs/log.md, "Seals and the witness"): a person's answer to a
 * held call and a turn's end. From seal format 2 on, the runtime announces each of them in a seal
 * before appending it, so one that no seal covers or announces was not written by the runtime.
 */
export const alwaysSealedEventTypes: ReadonlySet<string> = new Set(["turn.approval.granted", "turn.approval.denied", "turn.completed", "turn.stopped", "turn.failed"]);

/** Whether an event of `type` is always sealed ({@link alwaysSealedEventTypes}). */
export function isAlwaysSealed(type: string): boolean {
  return alwaysSealedEventTypes.has(type);
}

/** An event a seal announces: its type and the SHA-256 (hex) of the canonical JSON of its type and data. */
export interface AnnouncedEvent {
  type: string;
  digest: string;
}

/**
 * What a seal announces of an event about to be appended: its type and a digest of its type and
 * data as the log stores them (the JSON form: members that are `undefined` are gone).
 *
 * @example
 * announcedEventOf({ type: "turn.approval.granted", data: { callId: "c1", by: "alice" } });
 */
export function announcedEventOf(event: { type: string; data: unknown }): AnnouncedEvent {
  const stored: unknown = JSON.parse(JSON.stringify({ type: event.type, data: event.data ?? null }));
  const canonical = canonicalJsonOf(stored);
  if (canonical === undefined) throw new TypeError("an announced event must be JSON");
  return { type: event.type, digest: createHash("sha256").update(canonical).digest("hex") };
}

/**
 * The seal format this turnlog writes. Format 1 (no `format` field) sealed turn ends; format 2
 * also announces every always-sealed event before it is appended (`next`) and names the witness
 * it keeps (`witness`), so that `verify` can tell a forged answer from a crash, and a witness
 * deleted from one never kept (docs/log.md, "Seal formats").
 */
export const currentSealFormat = 2;

/**
 * A signed statement, in the manner of Certificate Transparency's signed tree head: stream
 * `stream` held `version` events, the last with hash `hash`; the events `from`..`version` had the
 * hashes `hashes` (so a rewrite is found at its position); the previous seal of the stream was
 * signed `previousSignature` ("" for the first), so no seal can be dropped from between two others.
 */
export interface SealStatement {
  stream: string;
  version: number;
  hash: string;
  /** The first stream position this seal lists a hash for (the previous seal's version + 1). */
  from: number;
  /** The hashes of events `from`..`version`, in order. */
  hashes: string[];
  previousSignature: string;
  /** ISO-8601, from the runtime's clock. */
  sealedAt: string;
  keyId: string;
  /** 2 from this format on; absent in format 1. */
  format?: number;
  /**
   * Format 2: the events about to be appended at `version + 1`, `version + 2`, … (an always-sealed
   * event among them, or a stream's first events). A crash between this seal and the next leaves
   * them announced, not forged.
   */
  next?: AnnouncedEvent[];
  /** Format 2: where the sealer keeps its witness (a file, a directory or a URL), when it keeps one. */
  witness?: string;
}

/** A seal as the log stores it: the statement and its Ed25519 signature (base64). */
export interface Seal extends SealStatement {
  signature: string;
}

/** Domain separation: a seal signature can never be mistaken for a signature of anything else (nor one format's for another's). */
const signingContext = "turnlog seal v1\n";
const signingContextV2 = "turnlog seal v2\n";

function signedBytes(statement: SealStatement): Buffer {
  const { stream, version, hash, from, hashes, previousSignature, sealedAt, keyId } = statement;
  if (statement.format === undefined) {
    const canonical = canonicalJsonOf({ stream, version, hash, from, hashes, previousSignature, sealedAt, keyId });
    if (canonical === undefined) throw new TypeError("a seal statement must be JSON");
    return Buffer.from(signingContext + canonical, "utf8");
  }
  const { format, next, witness } = statement;
  const canonical = canonicalJsonOf({ stream, version, hash, from, hashes, previousSignature, sealedAt, keyId, format, next: next ?? [], witness: witness ?? null });
  if (canonical === undefined) throw new TypeError("a seal statement must be JSON");
  return Buffer.from(signingContextV2 + canonical, "utf8");
}

/**
 * Signs a statement with `key` (which must hold a private key).
 *
 * @example
 * const seal = signSeal({ stream: "session-s1", version: 12, hash, from: 1, hashes, previousSignature: "", sealedAt, keyId: key.keyId }, key);
 */
export function signSeal(statement: SealStatement, key: SealKey): Seal {
  if (key.privateKey === undefined) throw new TypeError(`seal key ${key.keyId} has no private key: it can verify seals, not make them`);
  if (statement.keyId !== key.keyId) throw new TypeError("a seal names the key that signs it");
  return { ...statement, signature: sign(null, signedBytes(statement), key.privateKey).toString("base64") };
}

/** Whether `seal`'s signature is `key`'s over the seal's statement. */
export function sealSignatureValid(seal: Seal, key: SealKey): boolean {
  try {
    return verify(null, signedBytes(seal), key.publicKey, Buffer.from(seal.signature, "base64"));
  } catch {
    return false;
  }
}

/** `value` as a seal, when it has a seal's shape; `undefined` otherwise. */
export function asSeal(value: unknown): Seal | undefined {
  if (typeof value !== "object" || value === null) return undefined;
  const seal = value as Record<string, unknown>;
  const strings = ["stream", "hash", "previousSignature", "sealedAt", "keyId", "signature"];
  if (!strings.every((field) => typeof seal[field] === "string")) return undefined;
  if (!Number.isSafeInteger(seal.version) || !Number.isSafeInteger(seal.from)) return undefined;
  if (!Array.isArray(seal.hashes) || !seal.hashes.every((hash) => typeof hash === "string")) return undefined;
  if (seal.format !== undefined && seal.format !== 2) return undefined;
  if (seal.format === undefined && (seal.next !== undefined || seal.witness !== undefined)) return undefined;
  if (seal.witness !== undefined && typeof seal.witness !== "string") return undefined;
  if (seal.next !== undefined) {
    if (!Array.isArray(seal.next)) return undefined;
    const announced = seal.next as unknown[];
    if (!announced.every((event) => typeof event === "object" && event !== null && typeof (event as AnnouncedEvent).type === "string" && typeof (event as AnnouncedEvent).digest === "string")) return undefined;
  }
  return value as Seal;
}
