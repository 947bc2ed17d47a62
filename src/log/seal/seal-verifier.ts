import type { EventLog, RecordedEvent, VerifyReport } from "../event-log.js";
import { announcedEventOf, asSeal, isAlwaysSealed, isSealStream, sealEventType, sealSignatureValid, sealStreamOf, sealStreamPrefix, type Seal } from "./seal-record.js";
import type { SealKey } from "./seal-key.js";
import type { SealWitnessStore, WitnessedSeal } from "./seal-witness.js";
import type { SealedLogEntry } from "./sealed-log-record.js";
import { describeThrown, memberOf } from "../../util/json-value.js";

/**
 * What is wrong, named:
 * - `chain`: a hash chain is broken (the fault `log.verify()` reports);
 * - `truncated`: a stream holds fewer events than a seal in the log covers;
 * - `deleted-stream`: a stream that a seal or the witness vouches for is not in the log;
 * - `emptied-log`: the log holds none of the streams the witness saw sealed, or none at all where
 *   the seal key's record says it sealed a log (the log truncated to nothing, emptied, or its
 *   directory deleted);
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
 * - `witness-unreadable`: the witness file exists but cannot be read;
 * - `no-witness`: the seals (or the seal key's record) say the log was witnessed, and the witness
 *   is gone or was not given — deleted, or the log moved away from it;
 * - `unsealed-approval`, `unsealed-turn-end`: a person's answer or a turn's end after the last
 *   seal of a stream sealed in format 2, which no seal announced — appended by something other
 *   than the runtime (format 2 announces each before appending it, so a crash never leaves one);
 * - `unsealed-stream`: a session (a stream that begins with `session.started`) with no seal at
 *   all, begun after the log's first format 2 seal — in a log that seals, every session is
 *   announced before its first event.
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
  | "witness-unreadable"
  | "no-witness"
  | "unsealed-approval"
  | "unsealed-turn-end"
  | "unsealed-stream";

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
  witness?: SealWitnessStore;
  /**
   * The seal key's record of this log (`SealedLogRecord.read()`): with it, a log that is gone or
   * holds nothing is `emptied-log` even without a witness, and a witness it names must exist.
   */
  record?: SealedLogEntry;
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
      faults.push({ kind: "witness-unreadable", stream: "", reason: describeThrown(error) });
    }
  }

  const streams = log === undefined ? [] : await log.listStreams();
  const present = new Set(streams.filter((stream) => !isSealStream(stream)));
  for (const stream of streams) {
    if (!isSealStream(stream) || log === undefined) continue;
    const sealed = stream.slice(sealStreamPrefix.length);
    if (present.has(sealed)) continue;
    // Seals at version 0 only announce a stream's first events: a crash before they were appended.
    const seals = await log.readStream(stream, { maxCount: Number.MAX_SAFE_INTEGER }).catch(() => [] as RecordedEvent[]);
    if (seals.every((event) => asSeal(event.data)?.version === 0)) continue;
    faults.push({ kind: "deleted-stream", stream: sealed, reason: `the log holds seals of stream ${sealed}, but not the stream` });
  }

  let firstFormat2Seal = Number.POSITIVE_INFINITY;
  let witnessNamed: { stream: string; witness: string } | undefined;
  const neverSealed: string[] = [];
  for (const stream of present) {
    if (log === undefined) break;
    const result = await verifyStreamSeals(log, stream, keys, witnessed.get(stream));
    faults.push(...result.faults);
    if (result.tail !== undefined) unsealed.push(result.tail);
    verified += result.verified;
    if (result.sealCount > 0) sealedStreams += 1;
    else neverSealed.push(stream);
    for (const keyId of result.keyIds) keyIds.add(keyId);
    firstFormat2Seal = Math.min(firstFormat2Seal, result.firstFormat2Seal);
    if (witnessNamed === undefined && result.witness !== undefined) witnessNamed = { stream, witness: result.witness };
  }

  // A session begun after the log started announcing sessions, yet never announced nor sealed.
  for (const stream of neverSealed) {
    if (log === undefined || firstFormat2Seal === Number.POSITIVE_INFINITY) continue;
    const [first] = await log.readStream(stream, { maxCount: 1 }).catch(() => [] as RecordedEvent[]);
    // A session is a stream that begins with session.started; other streams (a host's own, a run record) may go unsealed.
    if (first === undefined || first.type !== "session.started" || first.meta.globalPosition < firstFormat2Seal) continue;
    faults.push({
      kind: "unsealed-stream",
      stream,
      position: 1,
      eventType: first.type,
      reason: `stream ${stream} was never sealed, though it began (global position ${first.meta.globalPosition}) after this log's sessions were sealed and announced (from global position ${firstFormat2Seal}) — it was not written by a sealing turnlog`,
    });
    const index = unsealed.findIndex((tail) => tail.stream === stream);
    if (index >= 0) unsealed.splice(index, 1);
  }

  const expectedWitness = witnessNamed?.witness ?? options.record?.witness ?? undefined;
  if (expectedWitness !== undefined && !faults.some((fault) => fault.kind === "witness-unreadable")) {
    const witness = options.witness;
    const where = witnessNamed !== undefined ? `the seals of ${witnessNamed.stream} say` : "the seal key's record says";
    if (witness === undefined) {
      faults.push({ kind: "no-witness", stream: witnessNamed?.stream ?? "", reason: `${where} the log was witnessed at ${expectedWitness}, and no witness was given to compare it with (pass --witness ${expectedWitness})` });
    } else {
      const exists = witness.exists !== undefined ? await witness.exists().catch(() => true) : witnessed.size > 0;
      if (!exists) {
        faults.push({
          kind: "no-witness",
          stream: witnessNamed?.stream ?? "",
          reason: `no witness at ${witness.file}, though ${where} the log was witnessed at ${expectedWitness} — the witness was deleted or moved`,
        });
      }
    }
  }

  const gone = [...witnessed.keys()].filter((stream) => !present.has(stream) && !streams.includes(sealStreamOf(stream)));
  if (gone.length > 0 && gone.length === witnessed.size && present.size === 0) {
    faults.push({
      kind: "emptied-log",
      stream: gone[0] ?? "",
      reason: `the log holds no events, but the witness saw ${witnessed.size} stream(s) sealed (${describeWitnessed(gone, witnessed)}) — the log was truncated, emptied or deleted`,
    });
  } else if (options.record !== undefined && streams.length === 0) {
    faults.push({
      kind: "emptied-log",
      stream: "",
      reason: `the log holds no events, but the seal key's record says it sealed this log from ${options.record.firstSealedAt} on${options.record.witness !== null ? ` (witnessed at ${options.record.witness})` : ""} — the log was truncated, emptied or deleted`,
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

/**
 * Where the log's seals say its witness is kept (the `witness` of a stream's last format 2 seal),
 * or `undefined` when none says: so a log copied or moved elsewhere is still compared with the
 * witness it was sealed with.
 *
 * @example
 * await witnessNamedBy(log); // "/home/ada/.config/turnlog/witness/turnlog-3f2a….json"
 */
export async function witnessNamedBy(log: EventLog): Promise<string | undefined> {
  for (const stream of await log.listStreams()) {
    if (!isSealStream(stream)) continue;
    const [last] = await log.readStream(stream, { direction: "backwards", maxCount: 1 }).catch(() => [] as RecordedEvent[]);
    const witness = last !== undefined ? asSeal(last.data)?.witness : undefined;
    if (witness !== undefined) return witness;
  }
  return undefined;
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
  /** The global position of the stream's first good format 2 seal (infinity: none). */
  firstFormat2Seal: number;
  /** The witness its last good format 2 seal names, if any. */
  witness?: string;
}

/** Whether an event type records a person's answer to a held call. */
function isApproval(type: string): boolean {
  return type === "turn.approval.granted" || type === "turn.approval.denied";
}

async function verifyStreamSeals(log: EventLog, stream: string, keys: ReadonlyMap<string, SealKey>, witnessed: WitnessedSeal | undefined): Promise<StreamSealsResult> {
  const version = await log.streamVersion(stream);
  const sealEvents = await log.readStream(sealStreamOf(stream), { maxCount: Number.MAX_SAFE_INTEGER }).catch(() => [] as RecordedEvent[]);
  const result: StreamSealsResult = { faults: [], verified: 0, sealCount: sealEvents.length, keyIds: [], firstFormat2Seal: Number.POSITIVE_INFINITY };
  const signatures = new Set<string>();
  let sealedVersion = 0;
  let sealedHash = "";
  let previousSignature = "";
  let last: Seal | undefined;
  for (const event of sealEvents) {
    const sealPosition = event.meta.streamPosition;
    const seal = event.type === sealEventType ? asSeal(event.data) : undefined;
    const fault = await findSealFault(log, stream, version, seal, { sealPosition, sealedVersion, sealedHash, previousSignature, keys });
    if (fault !== undefined) {
      result.faults.push(fault);
      // A seal after a bad one proves nothing about what the bad one covered: stop at the first.
      return result;
    }
    const good = seal as Seal;
    result.verified += 1;
    if (!result.keyIds.includes(good.keyId)) result.keyIds.push(good.keyId);
    if (good.format !== undefined) {
      result.firstFormat2Seal = Math.min(result.firstFormat2Seal, event.meta.globalPosition);
      if (good.witness !== undefined) result.witness = good.witness;
    }
    signatures.add(good.signature);
    sealedVersion = good.version;
    sealedHash = good.hash;
    previousSignature = good.signature;
    last = good;
  }
  if (version > sealedVersion) {
    result.tail = { stream, from: sealedVersion + 1, to: version };
    if (last?.format !== undefined) result.faults.push(...(await findUnannounced(log, stream, last, version)));
  }
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

/**
 * The always-sealed events after `last` (a format 2 seal) that it does not announce: those at
 * `last.version + i` must be the `i`-th event of `last.next`, type and digest alike.
 */
async function findUnannounced(log: EventLog, stream: string, last: Seal, version: number): Promise<SealFault[]> {
  const faults: SealFault[] = [];
  const announced = last.next ?? [];
  const from = last.version + 1;
  const events = await log.readStream(stream, { from, to: version, maxCount: version - from + 1 }).catch(() => [] as RecordedEvent[]);
  for (const event of events) {
    if (!isAlwaysSealed(event.type)) continue;
    const position = event.meta.streamPosition;
    const expected = announced[position - from];
    if (expected !== undefined) {
      const actual = announcedEventOf(event);
      if (actual.type === expected.type && actual.digest === expected.digest) continue;
    }
    const approval = isApproval(event.type);
    const by = approval ? ` by ${JSON.stringify(memberOf(event.data, "by"))}` : "";
    faults.push({
      kind: approval ? "unsealed-approval" : "unsealed-turn-end",
      stream,
      position,
      eventType: event.type,
      reason: `${approval ? "the approval answer" : "the turn end"} at position ${position} (${event.type}${by}) follows the stream's last seal (version ${last.version}) and no seal announced it — the runtime announces every ${approval ? "answer" : "turn end"} before appending it, so this one was appended by something else`,
    });
  }
  return faults;
}

interface SealContext {
  sealPosition: number;
  sealedVersion: number;
  sealedHash: string;
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
    (hashes.length > 0 && hashes[hashes.length - 1] !== seal.hash) ||
    (hashes.length === 0 && seal.hash !== context.sealedHash)
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
        const by = memberOf(event.data, "by");
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
