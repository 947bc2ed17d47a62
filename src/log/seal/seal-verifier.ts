import type { EventLog, RecordedEvent, VerifyReport } from "../event-log.js";
import { asSeal, isSealStream, sealEventType, sealSignatureValid, sealStreamOf, sealStreamPrefix, type Seal } from "./seal-record.js";
import type { SealKey } from "./seal-key.js";
import type { SealWitness, WitnessedSeal } from "./seal-witness.js";

/**
 * What is wrong, named:
 * - `chain`: a hash chain is broken (the fault `log.verify()` reports);
 * - `truncated`: a stream holds fewer events than a seal in the log covers;
 * - `deleted-stream`: a stream that a seal or the witness vouches for is not in the log;
 * - `emptied-log`: the log holds none of the streams the witness saw sealed (the log truncated to
 *   nothing, emptied, or its directory deleted);
 * - `dropped-tail`: the witness saw a stream sealed at a version the log no longer reaches — events
 *   removed from its end together with their seals;
 * - `missing-seal`: the witness's seal of a stream is not in the log, though its events are;
 * - `witness-mismatch`: the log's seals of a stream go past the witness's without including it;
 * - `rewritten`: an event is not the one a valid seal lists at its position (changed, removed or
 *   inserted, and the chain re-computed or not);
 * - `forged-approval`: the first rewritten event is a person's answer to a held call — a forged
 *   approver or answer;
 * - `bad-signature`, `unknown-key`, `malformed-seal`: a seal that does not verify, is signed by
 *   a key this verifier does not trust, or is not a seal;
 * - `seal-chain`: a seal does not follow on from the stream's previous seal (one was removed or
 *   the seals were reordered);
 * - `witness-unreadable`: the witness file exists but cannot be read.
 */
export type SealFaultKind =
  | "chain"
  | "truncated"
  | "deleted-stream"
  | "emptied-log"
  | "dropped-tail"
  | "missing-seal"
  | "witness-mismatch"
  | "rewritten"
  | "forged-approval"
  | "bad-signature"
  | "unknown-key"
  | "malformed-seal"
  | "seal-chain"
  | "witness-unreadable";

/** One fault `verify` found. */
export interface SealFault {
  kind: SealFaultKind;
  /** The stream it is in (for `emptied-log`, the first stream the witness saw). */
  stream: string;
  /** The first stream position concerned, when there is one. */
  position?: number;
  /** The position of the seal concerned in the stream's seal stream (1-based), when there is one. */
  sealPosition?: number;
  /** The event type at `position`, for `rewritten` and `forged-approval`. */
  eventType?: string;
  reason: string;
}

/** Events after a stream's last seal: normal after a crash, not a fault. */
export interface UnsealedTail {
  stream: string;
  /** First unsealed stream position. */
  from: number;
  /** Last one (the stream's version). */
  to: number;
}

/**
 * `verify` with seals: the fields of {@link VerifyReport} (the first fault in `stream`,
 * `firstBadPosition` and `reason`), plus every fault, the seals checked, the unsealed tails and
 * whether a witness was compared.
 */
export interface SealedVerifyReport extends VerifyReport {
  faults: SealFault[];
  seals: {
    /** Seals whose signature and content were checked and found good. */
    verified: number;
    /** Streams with at least one seal. */
    sealedStreams: number;
    /** Key IDs of the keys that signed the verified seals. */
    keyIds: string[];
  };
  unsealed: UnsealedTail[];
  /** The witness compared, or `null` when none was given or it had nothing for this log. */
  witness: { file: string; streams: number } | null;
}

/** What {@link verifySealedLog} checks seals against. */
export interface SealVerifyOptions {
  /** The keys whose seals are trusted (public keys suffice). A seal by any other key is a fault. */
  keys: readonly SealKey[];
  witness?: SealWitness;
}

/**
 * Verifies a log: every hash chain (`log.verify()`), every seal (signature, key, continuity with
 * the previous seal, and that the events it lists are the ones at its positions), and the log
 * against the witness. `log` is `undefined` for a log directory that no longer exists: then only
 * the witness speaks. Events after a stream's last seal are reported in `unsealed`, not as a fault;
 * a log without any seal (recorded before seals) verifies as wholly unsealed.
 *
 * @example
 * const report = await verifySealedLog(log, { keys: [await loadSealKey(sealKeyDirectory())], witness });
 * if (!report.ok) console.log(report.faults[0]?.kind); // "forged-approval"
 */
export async function verifySealedLog(log: EventLog | undefined, options: SealVerifyOptions): Promise<SealedVerifyReport> {
  const keys = new Map(options.keys.map((key) => [key.keyId, key]));
  const faults: SealFault[] = [];
  const unsealed: UnsealedTail[] = [];
  const keyIds = new Set<string>();
  let verified = 0;
  let sealedStreams = 0;

  const chain: VerifyReport = log === undefined ? { ok: true, checked: 0 } : await log.verify();
  if (!chain.ok) {
    faults.push({ kind: "chain", stream: chain.stream ?? "", ...(chain.firstBadPosition !== undefined ? { position: chain.firstBadPosition } : {}), reason: chain.reason ?? "the hash chain is broken" });
  }

  let witnessed = new Map<string, WitnessedSeal>();
  if (options.witness !== undefined) {
    try {
      witnessed = await options.witness.read();
    } catch (error) {
      faults.push({ kind: "witness-unreadable", stream: "", reason: error instanceof Error ? error.message : String(error) });
    }
  }

  const streams = log === undefined ? [] : await log.listStreams();
  const present = new Set(streams.filter((stream) => !isSealStream(stream)));
  for (const stream of streams) {
    if (!isSealStream(stream)) continue;
    const sealed = stream.slice(sealStreamPrefix.length);
    if (!present.has(sealed)) faults.push({ kind: "deleted-stream", stream: sealed, reason: `the log holds seals of stream ${sealed}, but not the stream` });
  }

  for (const stream of present) {
    if (log === undefined) break;
    const result = await verifyStreamSeals(log, stream, keys, witnessed.get(stream));
    faults.push(...result.faults);
    if (result.tail !== undefined) unsealed.push(result.tail);
    verified += result.verified;
    if (result.sealCount > 0) sealedStreams += 1;
    for (const keyId of result.keyIds) keyIds.add(keyId);
  }

  const gone = [...witnessed.keys()].filter((stream) => !present.has(stream) && !streams.includes(sealStreamOf(stream)));
  if (gone.length > 0 && gone.length === witnessed.size && present.size === 0) {
    faults.push({
      kind: "emptied-log",
      stream: gone[0] ?? "",
      reason: `the log holds no events, but the witness saw ${witnessed.size} stream(s) sealed (${describeWitnessed(gone, witnessed)}) — the log was truncated, emptied or deleted`,
    });
  } else {
    for (const stream of gone) {
      const seen = witnessed.get(stream);
      faults.push({ kind: "deleted-stream", stream, reason: `the witness saw stream ${stream} sealed at version ${seen?.version ?? "?"} (${seen?.sealedAt ?? "?"}); the log does not hold it` });
    }
  }

  const first = faults[0];
  const report: SealedVerifyReport = {
    ok: faults.length === 0,
    checked: chain.checked,
    faults,
    seals: { verified, sealedStreams, keyIds: [...keyIds].sort() },
    unsealed,
    witness: options.witness !== undefined && witnessed.size > 0 ? { file: options.witness.file, streams: witnessed.size } : null,
  };
  if (first !== undefined) {
    if (first.stream !== "") report.stream = first.stream;
    if (first.position !== undefined) report.firstBadPosition = first.position;
    report.reason = first.kind === "chain" ? first.reason : `${first.kind}: ${first.reason}`;
  }
  return report;
}

function describeWitnessed(streams: readonly string[], witnessed: ReadonlyMap<string, WitnessedSeal>): string {
  const shown = streams.slice(0, 3).map((stream) => `${stream} at version ${witnessed.get(stream)?.version ?? "?"}`);
  return shown.join(", ") + (streams.length > 3 ? `, and ${streams.length - 3} more` : "");
}

interface StreamSealsResult {
  faults: SealFault[];
  tail?: UnsealedTail;
  verified: number;
  sealCount: number;
  keyIds: string[];
}

/** Whether an event type records a person's answer to a held call. */
function isApproval(type: string): boolean {
  return type === "turn.approval.granted" || type === "turn.approval.denied";
}

async function verifyStreamSeals(log: EventLog, stream: string, keys: ReadonlyMap<string, SealKey>, witnessed: WitnessedSeal | undefined): Promise<StreamSealsResult> {
  const version = await log.streamVersion(stream);
  const sealEvents = await log.readStream(sealStreamOf(stream), { maxCount: Number.MAX_SAFE_INTEGER }).catch(() => [] as RecordedEvent[]);
  const result: StreamSealsResult = { faults: [], verified: 0, sealCount: sealEvents.length, keyIds: [] };
  const signatures = new Set<string>();
  let sealedVersion = 0;
  let previousSignature = "";
  for (const event of sealEvents) {
    const sealPosition = event.meta.streamPosition;
    const seal = event.type === sealEventType ? asSeal(event.data) : undefined;
    const fault = await findSealFault(log, stream, version, seal, { sealPosition, sealedVersion, previousSignature, keys });
    if (fault !== undefined) {
      result.faults.push(fault);
      // A seal after a bad one proves nothing about what the bad one covered: stop at the first.
      return result;
    }
    const good = seal as Seal;
    result.verified += 1;
    if (!result.keyIds.includes(good.keyId)) result.keyIds.push(good.keyId);
    signatures.add(good.signature);
    sealedVersion = good.version;
    previousSignature = good.signature;
  }
  if (version > sealedVersion) result.tail = { stream, from: sealedVersion + 1, to: version };
  if (witnessed !== undefined && !signatures.has(witnessed.signature)) {
    if (sealedVersion >= witnessed.version) {
      result.faults.push({ kind: "witness-mismatch", stream, position: witnessed.version, reason: `the witness saw stream ${stream} sealed at version ${witnessed.version} (${witnessed.sealedAt}); the log's seals go on to version ${sealedVersion} without that seal` });
    } else if (version < witnessed.version) {
      result.faults.push({
        kind: "dropped-tail",
        stream,
        position: version + 1,
        reason: `the witness saw stream ${stream} sealed at version ${witnessed.version} (${witnessed.sealedAt}); the log holds ${version} events, its last seal covers ${sealedVersion} — events ${version + 1}..${witnessed.version} were removed with their seals`,
      });
    } else {
      result.faults.push({ kind: "missing-seal", stream, position: witnessed.version, reason: `the witness saw stream ${stream} sealed at version ${witnessed.version} (${witnessed.sealedAt}); that seal is not in the log` });
    }
  }
  return result;
}

interface SealContext {
  sealPosition: number;
  sealedVersion: number;
  previousSignature: string;
  keys: ReadonlyMap<string, SealKey>;
}

async function findSealFault(log: EventLog, stream: string, version: number, seal: Seal | undefined, context: SealContext): Promise<SealFault | undefined> {
  const { sealPosition } = context;
  const at = { stream, sealPosition };
  if (seal === undefined || seal.stream !== stream) return { kind: "malformed-seal", ...at, reason: `seal #${sealPosition} of stream ${stream} is not a seal of that stream` };
  const key = context.keys.get(seal.keyId);
  if (key === undefined) {
    return { kind: "unknown-key", ...at, position: seal.version, reason: `seal #${sealPosition} (version ${seal.version}) is signed by key ${seal.keyId}, which this verifier does not hold` };
  }
  if (!sealSignatureValid(seal, key)) return { kind: "bad-signature", ...at, position: seal.version, reason: `seal #${sealPosition} (version ${seal.version}) does not carry a valid signature of key ${seal.keyId}` };
  const hashes = seal.hashes;
  if (
    seal.previousSignature !== context.previousSignature ||
    seal.from !== context.sealedVersion + 1 ||
    hashes.length !== seal.version - seal.from + 1 ||
    (hashes.length > 0 && hashes[hashes.length - 1] !== seal.hash)
  ) {
    return { kind: "seal-chain", ...at, position: seal.from, reason: `seal #${sealPosition} (version ${seal.version}) does not follow on from the seal before it: a seal was removed or the seals were reordered` };
  }
  const end = Math.min(seal.version, version);
  if (end >= seal.from) {
    let events: RecordedEvent[];
    try {
      events = await log.readStream(stream, { from: seal.from, to: end, maxCount: end - seal.from + 1 });
    } catch {
      return { kind: "rewritten", ...at, position: seal.from, reason: `events ${seal.from}..${end} under seal #${sealPosition} cannot be read` };
    }
    for (let offset = 0; offset <= end - seal.from; offset += 1) {
      const event = events[offset];
      const position = seal.from + offset;
      if (event !== undefined && event.meta.streamPosition === position && event.meta.hash === hashes[offset]) continue;
      if (event !== undefined && isApproval(event.type)) {
        const by = (event.data as { by?: unknown }).by;
        return {
          kind: "forged-approval",
          ...at,
          position,
          eventType: event.type,
          reason: `the approval answer at position ${position} (${event.type}, by ${JSON.stringify(by)}) is not the one seal #${sealPosition} signed — a forged approver or answer`,
        };
      }
      return {
        kind: "rewritten",
        ...at,
        position,
        ...(event !== undefined ? { eventType: event.type } : {}),
        reason: `the event at position ${position}${event !== undefined ? ` (${event.type})` : ""} is not the one seal #${sealPosition} signed: it was changed, removed or inserted${event !== undefined && event.meta.hash !== hashes[offset] ? ", and the chain re-computed or not" : ""}`,
      };
    }
  }
  if (seal.version > version) {
    return { kind: "truncated", ...at, position: version + 1, reason: `seal #${sealPosition} covers ${seal.version} events; the stream holds ${version} — events ${version + 1}..${seal.version} were removed` };
  }
  return undefined;
}
