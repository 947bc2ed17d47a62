import { hash } from "node:crypto";
import { canonicalJsonOf, canonicalJsonOfParsed, hasLoneSurrogateEscape } from "../util/canonical-json.js";
import type { RecordedEvent, RecordedEventMeta, VerifyReport } from "./event-log.js";
import { isRecord } from "../util/json-value.js";

/** An event as it is hashed: everything the log records except the `hash` itself. */
export interface UnhashedEvent {
  type: string;
  data: unknown;
  meta: Omit<RecordedEventMeta, "hash"> & { hash?: string };
}

/**
 * The SHA-256 (hex) of `prevHash` followed by the RFC 8785 canonical JSON of `event` without its
 * `meta.hash`. Canonical JSON makes the hash independent of key order and number formatting, so
 * an event read back from any backend hashes to the same value.
 *
 * @example
 * const hash = computeEventHash("", { type: "session.opened", data: {}, meta });
 */
export function computeEventHash(prevHash: string, event: UnhashedEvent): string {
  const { hash: _ignored, ...metaWithoutHash } = event.meta;
  const canonical = canonicalJsonOf({ type: event.type, data: event.data, meta: metaWithoutHash });
  if (canonical === undefined) {
    throw new TypeError("an event must be representable as JSON to be hashed");
  }
  return hash("sha256", prevHash + canonical);
}

/**
 * `computeEventHash` of an event being recorded, whose `data` is plain JSON already checked for
 * lone surrogates (prepared by event-recording.ts) and whose `type` was checked too: the canonical
 * text is put together from its three members' (RFC 8785 sorts `data`, `meta`, `type` so), and
 * `data` is not walked again to make sure it is plain. property-tests/canonical-json.test.ts shows
 * it equals `computeEventHash`.
 */
export function computeRecordedEventHash(prevHash: string, type: string, data: unknown, meta: Omit<RecordedEventMeta, "hash">): string {
  // The meta's members in sorted order: JSON.stringify writes them canonically (integers and
  // strings), and refuses nothing, so a lone surrogate in an ID is looked for in its text.
  const { causationId, eventId, globalPosition, prevHash: previous, recordedAt, schemaVersion, stream, streamPosition } = meta;
  const sorted = { eventId, globalPosition, prevHash: previous, recordedAt, schemaVersion, stream, streamPosition };
  const metaText = JSON.stringify(causationId === undefined ? sorted : { causationId, ...sorted });
  if (hasLoneSurrogateEscape(metaText)) throw new TypeError("an event must be representable as JSON to be hashed");
  // `crypto.hash` (one call, no Hash object per event) of prevHash followed by the canonical text.
  return hash("sha256", `${prevHash}{"data":${canonicalJsonOfParsed(data)},"meta":${metaText},"type":${JSON.stringify(type)}}`);
}


/** The head a backend keeps for each stream, so that removing the last event is detected. */
export interface StreamHead {
  version: number;
  hash: string;
}

/** The head of a stream that does not exist. */
export const EMPTY_STREAM_HEAD: StreamHead = Object.freeze({ version: 0, hash: "" });

/**
 * One stored event as a backend finds it by walking a stream's index: the stream position the
 * index files it under, and the stored JSON text (`undefined` when the index points at nothing).
 * Verification takes the raw text, not a parsed object, so that a corrupted value is reported
 * at its position instead of crashing the walk.
 */
export interface StoredChainEntry {
  position: number;
  /** The global position the index points at, when the backend keeps one. */
  globalPosition?: number;
  raw: string | undefined;
}

/** Why a stream's chain is broken; the prefix of every `VerifyReport.reason`. */
export type ChainFaultKind =
  | "unreadable"
  | "missing"
  | "malformed"
  | "position-gap"
  | "out-of-order"
  | "wrong-stream"
  | "prev-hash-mismatch"
  | "hash-mismatch"
  | "head-mismatch";

/** The result of walking one stream's chain. */
export type ChainVerification =
  | { ok: true; checked: number }
  | { ok: false; checked: number; firstBadPosition: number; kind: ChainFaultKind; reason: string };

interface ChainFault {
  position: number;
  kind: ChainFaultKind;
  reason: string;
}

/**
 * Walks one stream's hash chain one stored entry at a time, so a backend can feed it from a
 * paged iterator and never hold a whole stream in memory. Stops at the first fault.
 *
 * @example
 * const verifier = new ChainVerifier("s1");
 * for (const entry of entries) if (!verifier.check(entry)) break;
 * const result = verifier.finish(head);
 */
export class ChainVerifier {
  private expectedPosition = 1;
  private prevHash = "";
  private checked = 0;
  private fault: ChainFault | undefined;

  constructor(readonly stream: string) {}

  /** Checks the next entry of the stream; returns `false` once the chain is known to be broken. */
  check(entry: StoredChainEntry): boolean {
    if (this.fault !== undefined) return false;
    const position = this.expectedPosition;
    const fault = this.findFault(position, entry);
    if (fault !== undefined) {
      this.fault = fault;
      return false;
    }
    this.checked += 1;
    this.expectedPosition += 1;
    return true;
  }

  /**
   * Ends the walk. With `expectedHead`, also checks that the stream ends where its head says,
   * which is the only way to notice that the last event was removed.
   */
  finish(expectedHead?: StreamHead): ChainVerification {
    if (this.fault === undefined && expectedHead !== undefined) {
      const lastPosition = this.expectedPosition - 1;
      if (expectedHead.version > lastPosition) {
        this.fault = {
          position: lastPosition + 1,
          kind: "head-mismatch",
          reason: `the stream head is at version ${expectedHead.version} but the stream ends at ${lastPosition}: event ${lastPosition + 1} is missing`,
        };
      } else if (expectedHead.version < lastPosition) {
        this.fault = {
          position: expectedHead.version + 1,
          kind: "head-mismatch",
          reason: `the stream head is at version ${expectedHead.version} but the stream holds ${lastPosition} events`,
        };
      } else if (expectedHead.hash !== this.prevHash) {
        this.fault = {
          position: lastPosition,
          kind: "head-mismatch",
          reason: `the stream head's hash does not match event ${lastPosition}`,
        };
      }
    }
    if (this.fault === undefined) return { ok: true, checked: this.checked };
    return {
      ok: false,
      checked: this.checked,
      firstBadPosition: this.fault.position,
      kind: this.fault.kind,
      reason: `${this.fault.kind}: ${this.fault.reason}`,
    };
  }

  private findFault(position: number, entry: StoredChainEntry): ChainFault | undefined {
    if (entry.position !== position) {
      return {
        position,
        kind: entry.position > position ? "position-gap" : "out-of-order",
        reason: `expected stream position ${position} next, the index holds ${entry.position}`,
      };
    }
    if (entry.raw === undefined) {
      return { position, kind: "missing", reason: `the index points at an event that is not stored` };
    }
    let parsed: unknown;
    try {
      parsed = JSON.parse(entry.raw);
    } catch {
      return { position, kind: "unreadable", reason: "the stored event is not valid JSON" };
    }
    const event = asStoredEvent(parsed);
    if (event === undefined) {
      return { position, kind: "malformed", reason: "the stored event does not have the shape of a recorded event" };
    }
    const { meta } = event;
    if (meta.stream !== this.stream) {
      return { position, kind: "wrong-stream", reason: `the stored event belongs to stream ${JSON.stringify(meta.stream)}` };
    }
    if (meta.streamPosition !== position) {
      return {
        position,
        kind: "out-of-order",
        reason: `the event stored at position ${position} was recorded at position ${String(meta.streamPosition)} (an event was removed or reordered)`,
      };
    }
    if (entry.globalPosition !== undefined && meta.globalPosition !== entry.globalPosition) {
      return {
        position,
        kind: "out-of-order",
        reason: `the event stored at global position ${entry.globalPosition} was recorded at ${String(meta.globalPosition)}`,
      };
    }
    if (meta.prevHash !== this.prevHash) {
      return { position, kind: "prev-hash-mismatch", reason: "prevHash does not match the hash of the previous event" };
    }
    let hash: string;
    try {
      hash = computeEventHash(this.prevHash, event as UnhashedEvent);
    } catch {
      return { position, kind: "malformed", reason: "the stored event cannot be canonicalized" };
    }
    if (hash !== meta.hash) {
      return { position, kind: "hash-mismatch", reason: "the event's content does not match its hash" };
    }
    this.prevHash = hash;
    return undefined;
  }
}

/**
 * Walks one stream's chain: `entries` in index order, optionally with the head the backend
 * keeps. Returns the first bad stream position and why, or `ok`.
 *
 * @example
 * verifyChain("s1", [{ position: 1, raw }], { version: 1, hash });  // { ok: true, checked: 1 }
 */
export function verifyChain(
  stream: string,
  entries: Iterable<StoredChainEntry>,
  expectedHead?: StreamHead,
): ChainVerification {
  const verifier = new ChainVerifier(stream);
  for (const entry of entries) {
    if (!verifier.check(entry)) break;
  }
  return verifier.finish(expectedHead);
}

interface StoredEvent {
  type: string;
  data: unknown;
  meta: { stream: unknown; streamPosition: unknown; globalPosition: unknown; prevHash: unknown; hash: string } & Record<
    string,
    unknown
  >;
}

function asStoredEvent(value: unknown): StoredEvent | undefined {
  if (!isRecord(value) || typeof value.type !== "string" || !isRecord(value.meta)) return undefined;
  if (typeof value.meta.hash !== "string") return undefined;
  return value as unknown as StoredEvent;
}

/**
 * Verifies streams one after another and reports the first bad one — the part of `verify()` both
 * backends share; each supplies how one stream's chain is walked.
 */
export async function verifyStreams(
  streams: readonly string[],
  verifyStream: (stream: string) => ChainVerification | Promise<ChainVerification>,
): Promise<VerifyReport> {
  let checked = 0;
  for (const stream of streams) {
    const result = await verifyStream(stream);
    checked += result.checked;
    if (!result.ok) return { ok: false, checked, firstBadPosition: result.firstBadPosition, stream, reason: result.reason };
  }
  return { ok: true, checked };
}

/**
 * Where a run of one stream's events, as a read returned them (consecutive positions), does not
 * hold together: an event whose content does not match its own hash, or that does not chain on
 * from the event before it. `undefined` when every event does. Reads do not check hashes (they
 * would cost every reader of the log); a reader that hands a whole session to a person or a
 * projection does, so a byte changed under the log is never shown as if it were recorded.
 *
 * @example
 * const fault = findChangedEvent(await log.readStream("session-s1"));
 * if (fault) throw new LogCorruptedError(`event ${fault.position}: ${fault.reason}`);
 */
export function findChangedEvent(events: readonly RecordedEvent[]): { position: number; reason: string } | undefined {
  let previous: RecordedEvent | undefined;
  for (const event of events) {
    const meta = event?.meta;
    const position = typeof meta?.streamPosition === "number" ? meta.streamPosition : Number.NaN;
    if (previous !== undefined ? meta?.prevHash !== previous.meta.hash : position === 1 && meta?.prevHash !== "") {
      return { position, reason: "prevHash does not match the hash of the previous event" };
    }
    let hash: string | undefined;
    try {
      hash = computeEventHash(meta.prevHash, event as UnhashedEvent);
    } catch {
      hash = undefined;
    }
    if (hash !== meta.hash) return { position, reason: "the event's content does not match its hash" };
    previous = event;
  }
  return undefined;
}
