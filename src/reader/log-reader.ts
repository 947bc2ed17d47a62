import type { PolicyInput, PolicySnapshot } from "../contracts/policy.js";
import type { ProviderFormat } from "../contracts/provider.js";
import { resolveDecisionsVersion } from "../core/decision-versions.js";
import { readEvents } from "../core/read-events.js";
import { SessionFold } from "../core/session-fold.js";
import { isValidSessionId, sessionIdOfStream, sessionIdPattern, sessionStream } from "../core/session-stream.js";
import { LogClosedError } from "../errors/log-closed-error.js";
import { LogCorruptedError } from "../errors/log-corrupted-error.js";
import { findChangedEvent } from "../log/hash-chain.js";
import { UnknownSessionError } from "../errors/unknown-session-error.js";
import type { HistoryCompressor } from "../history/history-compressor.js";
import type { DiagnosticRecord } from "../history/session-history.js";
import { sessionHistory } from "../providers/format-history.js";
import type { EventLog, RecordedEvent, RecordedTurnlogEvent } from "../log/event-log.js";
import type { SealKey } from "../log/seal/seal-key.js";
import { verifySealedLog, type SealedVerifyReport } from "../log/seal/seal-verifier.js";
import type { SealWitnessStore } from "../log/seal/seal-witness.js";
import type { SealedLogEntry } from "../log/seal/sealed-log-record.js";
import { StreamSealer, type SealOptions } from "../log/seal/stream-sealer.js";
import { resolvePolicy } from "../policy/default-policy.js";
import type { GateEnvironment } from "../policy/gate.js";
import { auditRows, type AuditRow } from "../projections/audit.js";
import { foldEvents } from "../projections/projection.js";
import { pendingApprovals, sessionStateProjection, type CallState, type SessionState } from "../projections/session-state.js";
import type { ForkResult } from "../replay/fork.js";
import type { ReplayReport } from "../replay/replay-verifier.js";
import { PositionOutOfRangeError } from "../errors/position-out-of-range-error.js";
import { SnapshotCache, type SnapshotCacheOptions } from "../replay/snapshot-cache.js";
import type { ToolDefinition } from "../tools/define-tool.js";
import { ToolRegistry } from "../tools/tool-registry.js";
import { resolveRealPath } from "../util/real-path.js";
import { sessionStatus, type SessionStatus } from "./session-status.js";
import { recordAnswer, type ApproveAnswer, type DenyAnswer, type HeldCallAnswer, type RecordedAnswer } from "./held-call-answer.js";

/** What a {@link LogReader} needs besides the log. Every option has a default; none needs a provider. */
export interface LogReaderOptions {
  /**
   * The host's tools. `replay` judges each decision with the host's definition of a tool the
   * session recorded unchanged, and rebuilds every other tool from the definition the log recorded
   * (name, risk class, flags, JSON Schema: checked at schema level). A `ToolRegistry` is followed
   * as it changes (a runtime's, with MCP servers). Default: none — every tool from the log.
   */
  tools?: readonly ToolDefinition[] | ToolRegistry;
  /** How the gate resolves paths when replay recomputes its decisions. Default: through symlinks (`resolveRealPath`), as the live runtime does. */
  gate?: GateEnvironment;
  /** The history compressor the sessions were recorded with, for `replay` and `history`. Default: the deterministic one. */
  compressor?: HistoryCompressor;
  /**
   * The log's seals: `fork` seals the new session with this key and witness, and `verify` trusts
   * this key and compares the log with this witness (unless its own options say otherwise).
   * Default: none — `fork` seals nothing, and `verify` trusts no key (a sealed log then fails).
   */
  seals?: SealOptions;
  /** The bounded, in-memory snapshot cache behind `stateAt`. */
  snapshots?: SnapshotCacheOptions;
}

/** One row of {@link LogReader.sessions} (and of `turnlog sessions --json`). */
export interface SessionListing {
  id: string;
  /** Number of events in the session's stream. */
  events: number;
  /** When its last event was recorded, or `null` when it could not be read. */
  lastRecordedAt: string | null;
  /** `unreadable` when the stream cannot be folded (a damaged log: `verify()` says what is wrong). */
  status: SessionStatus | "unreadable";
}

/** Which of a session's events {@link LogReader.events} returns: stream positions, inclusive, 1-based. */
export interface SessionEventsOptions {
  /** Default 1. */
  from?: number;
  /** Default: the last event. */
  to?: number;
}

/** What {@link LogReader.replay} may judge a session under instead of what it recorded. */
export interface ReaderReplayOptions {
  /** A partial policy merged over the recorded one (its `workspace` merged field by field): a what-if. */
  policy?: PolicyInput;
  /** These tools instead of the ones the session offered: a what-if. */
  tools?: readonly ToolDefinition[];
  /** Compute every decision under this decisions version (`"latest"`: the newest) instead of the session's own: an upgrade preview. */
  decisionsVersion?: number | "latest";
}

/** What {@link LogReader.verify} checks seals against. */
export interface ReaderVerifyOptions {
  /** The keys whose seals are trusted (public keys suffice). Default: the reader's `seals` key, or none. */
  keys?: readonly SealKey[];
  /** Default: the reader's `seals` witness, or none. */
  witness?: SealWitnessStore;
  /** The seal key's record of the log. Default: what the reader's `seals` record holds, or none. */
  record?: SealedLogEntry;
}

/** The provider-native history of a session, as a next request would carry it. */
export interface SessionHistoryView {
  messages: unknown[];
  system?: string;
  diagnostics: DiagnosticRecord[];
}

/** A session as it stood right after one position: what `turnlog show` draws. */
export interface SessionView {
  sessionId: string;
  /** The session's events 1..`position`. */
  events: RecordedTurnlogEvent[];
  /** The position viewed (the last event, unless `at` asked for an earlier one). */
  position: number;
  /** Events in the session's stream now. */
  length: number;
  state: SessionState;
  status: SessionStatus;
  /** The open turn's machine state (e.g. `"awaitingApproval"`), or undefined between turns. */
  machineState?: string;
  /** One row per tool call, as `audit` gives them. */
  audit: AuditRow[];
  /** Calls held for a person's answer. */
  pendingApprovals: CallState[];
}

/**
 * The read side of a turnlog log: sessions, their events, state, audit trail, history, replay,
 * fork and verification — everything but running a turn, so it needs no provider. An unknown
 * session throws `UnknownSessionError`. `createRuntime` reads through one of these.
 */
export interface LogReader {
  /** The log read. */
  readonly log: EventLog;
  /** IDs of every session in the log, in the log's stream order, without reading them. */
  sessionIds(): Promise<string[]>;
  /**
   * Every session with its size, last activity and status, oldest activity first. A session whose
   * stream cannot be folded is listed as `unreadable` rather than hiding the others.
   */
  sessions(): Promise<SessionListing[]>;
  /** A session's recorded events, in stream order (all of them, or the positions `from`..`to`). */
  events(sessionId: string, options?: SessionEventsOptions): Promise<RecordedTurnlogEvent[]>;
  /** The session-state projection after the session's last event. */
  state(sessionId: string): Promise<SessionState>;
  /**
   * The session state right after the event at a stream position (1-based), from a bounded
   * in-memory snapshot cache. A position beyond the end throws `PositionOutOfRangeError`.
   */
  stateAt(sessionId: string, position: number): Promise<SessionState>;
  /** The session right after `at` (default: its last event): events, state, status, the open turn's machine state, audit rows and held calls. */
  view(sessionId: string, options?: { at?: number }): Promise<SessionView>;
  /** The audit trail: one row per tool call (docs/audit.md). */
  audit(sessionId: string): Promise<AuditRow[]>;
  /** The provider-native history in `format`, rebuilt from the log (a replay echo only for the session's own format). */
  history(sessionId: string, options: { format: ProviderFormat; maxTokens?: number }): Promise<SessionHistoryView>;
  /**
   * Recomputes every decision of a session and compares it with the log: `identical`, or the
   * divergences. `policy` / `tools` judge it under another configuration (what-if), and
   * `decisionsVersion` under other decisions (upgrade preview); `changes` lists every decision
   * that would come out differently. No provider and no tool is called.
   */
  replay(sessionId: string, options?: ReaderReplayOptions): Promise<ReplayReport>;
  /**
   * Creates session `to` from a copy of events 1..`at` of `sessionId` (its own hash chain;
   * `session.started` records `forkedFrom`), sealed when the reader has `seals`. `to` must be a
   * valid session ID (else TypeError) and must not exist (else `ExpectedVersionConflictError`).
   */
  fork(sessionId: string, options: { at: number; to: string }): Promise<ForkResult>;
  /**
   * Walks every hash chain and checks every seal against the trusted keys and the witness: names
   * truncation, deleted streams, dropped tails, rewritten events and forged approvals, and lists
   * unsealed tails (normal after a crash) apart from faults.
   */
  verify(options?: ReaderVerifyOptions): Promise<SealedVerifyReport>;
  /**
   * Records a person's approval of a held call: a checked append (the call is held; `fingerprint`,
   * when given, is its fingerprint), with no provider and no tool — nothing else is written. The
   * host that owns the session continues the turn (`autoResume`, `waitForAnswers`, a worker).
   * Resolves with the answer as recorded; a call that is not held throws `SessionStateError`.
   * Sealed with the reader's `seals`, when it has them. On a LevelDB log another process holds,
   * answer through that process instead: `answerHeldCall` (docs/embedding.md, "Answering from anywhere").
   *
   * @example
   * const reader = await openLog({ url: process.env.TURNLOG_LOG! });
   * const { event } = await reader.approve("s1", "call-1", { by: "ana", note: "looks right" });
   * await reader.close();
   */
  approve(sessionId: string, callId: string, answer: ApproveAnswer): Promise<RecordedAnswer>;
  /** Records a person's refusal of a held call, as {@link LogReader.approve} records an approval; the model is told the call did not run. */
  deny(sessionId: string, callId: string, answer: DenyAnswer): Promise<RecordedAnswer>;
  /** Closes the reader; closes the log only when the reader opened it (`openLog`). */
  close(): Promise<void>;
}

/**
 * A {@link LogReader} over a log the caller owns: its `close()` leaves that log open.
 *
 * @example
 * const reader = createLogReader(runtime.log);
 * const report = await reader.replay("s1", { policy: { approvalMode: "read-only" } });
 * console.log(report.changes.length, "decisions would change");
 */
export function createLogReader(log: EventLog, options: LogReaderOptions = {}): LogReader {
  return readerOver(log, options, async () => undefined);
}

/** A reader whose `close()` runs `release` (closing the log, for `openLog`). */
export function readerOver(log: EventLog, options: LogReaderOptions, release: () => Promise<void>): LogReader {
  const registry = options.tools instanceof ToolRegistry ? options.tools : new ToolRegistry(options.tools ?? []);
  const gate = options.gate ?? { realPath: resolveRealPath };
  const compressor = options.compressor;
  const seals = options.seals;
  // The log's own snapshots too, unless the options say otherwise.
  const snapshots = new SnapshotCache({ logSnapshots: true, ...options.snapshots });
  let closed = false;

  /**
   * A session's events as read, once each is checked against its hash and the one before it: a
   * byte changed under the log (which LevelDB, reading without checksums, may return as valid
   * JSON) fails the read instead of being shown, replayed or exported as recorded. Then each is
   * upcast and checked as an event of the catalogue (`readEvents`): one that is not throws
   * `UnexpectedEventError` with its position.
   */
  function intact(sessionId: string, events: RecordedEvent[]): RecordedTurnlogEvent[] {
    const fault = findChangedEvent(events);
    if (fault !== undefined) throw new LogCorruptedError(`session "${sessionId}": event ${fault.position}: ${fault.reason} — the log is damaged; run verify()`);
    return readEvents(events);
  }

  const open = () => {
    if (closed) throw new LogClosedError();
  };

  async function readSession(sessionId: string): Promise<RecordedTurnlogEvent[]> {
    open();
    const events = await log.readStream(sessionStream(sessionId), { maxCount: Number.MAX_SAFE_INTEGER });
    if (events.length === 0) throw new UnknownSessionError(sessionId);
    return intact(sessionId, events);
  }

  async function state(sessionId: string): Promise<SessionState> {
    return foldEvents(sessionStateProjection, await readSession(sessionId));
  }

  /** An answer, recorded like the runtime records one: announced and sealed when the reader has `seals`. */
  async function recordHeldCallAnswer(sessionId: string, callId: string, answer: HeldCallAnswer): Promise<RecordedAnswer> {
    open();
    if (seals === undefined) return recordAnswer(log, sessionId, callId, answer, { tools: registry });
    const sealer = new StreamSealer(log, seals);
    try {
      return await recordAnswer(log, sessionId, callId, answer, { tools: registry, sealer });
    } finally {
      sealer.dispose();
    }
  }

  return {
    log,
    async sessionIds() {
      open();
      return (await log.listStreams()).flatMap((stream) => sessionIdOfStream(stream) ?? []);
    },
    async sessions() {
      open();
      const ids = (await log.listStreams()).flatMap((stream) => sessionIdOfStream(stream) ?? []);
      const rows: SessionListing[] = [];
      for (const id of ids) {
        const version = await log.streamVersion(sessionStream(id));
        try {
          const events = await log.readStream(sessionStream(id), { maxCount: Number.MAX_SAFE_INTEGER });
          rows.push({ id, events: version, lastRecordedAt: events.at(-1)?.meta.recordedAt ?? null, status: sessionStatus(foldEvents(sessionStateProjection, readEvents(events))) });
        } catch {
          // One damaged session must not hide the others; `verify` says what is wrong with it.
          rows.push({ id, events: version, lastRecordedAt: null, status: "unreadable" });
        }
      }
      return rows.sort((a, b) => (a.lastRecordedAt ?? "").localeCompare(b.lastRecordedAt ?? "") || a.id.localeCompare(b.id));
    },
    async events(sessionId, range = {}) {
      if (range.from === undefined && range.to === undefined) return readSession(sessionId);
      open();
      const from = range.from ?? 1;
      if (!Number.isInteger(from) || from < 1) throw new TypeError(`from must be a stream position ≥ 1 (got ${String(range.from)})`);
      if (range.to !== undefined && (!Number.isInteger(range.to) || range.to < 1)) throw new TypeError(`to must be a stream position ≥ 1 (got ${String(range.to)})`);
      const stream = sessionStream(sessionId);
      const version = await log.streamVersion(stream);
      if (version === 0) throw new UnknownSessionError(sessionId);
      const to = Math.min(range.to ?? version, version);
      if (to < from) return [];
      return intact(sessionId, await log.readStream(stream, { from, to, maxCount: to - from + 1 }));
    },
    state,
    async stateAt(sessionId, position) {
      open();
      return snapshots.stateAt(log, sessionId, position);
    },
    async view(sessionId, viewOptions = {}) {
      const all = await readSession(sessionId);
      const at = viewOptions.at ?? all.length;
      if (!Number.isInteger(at) || at < 1) throw new TypeError(`position must be a stream position ≥ 1 (got ${String(viewOptions.at)})`);
      if (at > all.length) throw new PositionOutOfRangeError(sessionId, at, all.length);
      const events = at === all.length ? all : all.slice(0, at);
      // The fold the runtime keeps: the projection and the open turn's machine, run only over that turn.
      const fold = new SessionFold();
      fold.applyAll(events);
      const machineState = fold.turnState;
      return {
        sessionId,
        events,
        position: at,
        length: all.length,
        state: fold.state,
        status: sessionStatus(fold.state),
        ...(machineState !== undefined ? { machineState } : {}),
        audit: auditRows(fold.state),
        pendingApprovals: pendingApprovals(fold.state),
      };
    },
    async audit(sessionId) {
      return auditRows(await state(sessionId));
    },
    async history(sessionId, historyOptions) {
      return sessionHistory(await state(sessionId), historyOptions, compressor);
    },
    async replay(sessionId, replayOptions = {}) {
      const requested = replayOptions.decisionsVersion;
      const events = await readSession(sessionId);
      const whatIfPolicy = replayOptions.policy;
      // Replay (the deciders, the gate, the history) loads when a reader first replays: listing
      // sessions or showing one does not pay for it (docs/performance.md, "Start-up").
      const { verifyReplay } = await import("../replay/replay-verifier.js");
      return verifyReplay(events, {
        registry: replayOptions.tools ? new ToolRegistry(replayOptions.tools) : registry,
        // What-if tools replace the recorded set; otherwise the log says which tools were offered when.
        toolsInForce: replayOptions.tools ? "registry" : "log",
        gate,
        // An unknown version is a RangeError (resolveDecisionsVersion), after an unknown session.
        ...(requested !== undefined ? { decisionsVersion: resolveDecisionsVersion(requested) } : {}),
        ...(compressor ? { compressor } : {}),
        ...(whatIfPolicy ? { policy: (recorded: PolicySnapshot) => mergePolicy(recorded, whatIfPolicy) } : {}),
      });
    },
    async fork(sessionId, forkOptions) {
      open();
      if (!isValidSessionId(forkOptions.to)) throw new TypeError(`session ID "${forkOptions.to}" must match ${sessionIdPattern}`);
      const { forkSession } = await import("../replay/fork.js");
      if (seals === undefined) return forkSession(log, sessionId, forkOptions);
      // The new session is announced before its events and sealed at once, as a sealing runtime seals a fork.
      const sealer = new StreamSealer(log, seals);
      try {
        const forked = await forkSession(log, sessionId, { ...forkOptions, announce: (events) => sealer.announce(sessionStream(forkOptions.to), 0, events) });
        await sealer.seal(sessionStream(forkOptions.to));
        return forked;
      } finally {
        sealer.dispose();
      }
    },
    approve(sessionId, callId, answer) {
      return recordHeldCallAnswer(sessionId, callId, { ...answer, decision: "approve" });
    },
    deny(sessionId, callId, answer) {
      return recordHeldCallAnswer(sessionId, callId, { ...answer, decision: "deny" });
    },
    async verify(verifyOptions = {}) {
      open();
      const witness = verifyOptions.witness ?? seals?.witness;
      const record = verifyOptions.record ?? (await seals?.record?.read());
      return verifySealedLog(log, { keys: verifyOptions.keys ?? (seals !== undefined ? [seals.key] : []), ...(witness !== undefined ? { witness } : {}), ...(record !== undefined ? { record } : {}) });
    },
    async close() {
      if (closed) return;
      closed = true;
      snapshots.clear();
      await release();
    },
  };
}

/**
 * A what-if policy over the recorded one: the given fields replace the recorded ones, `workspace`
 * field by field, and the result is resolved against the recorded workspace root (so a relative
 * root in a what-if file means what it meant when the session ran).
 */
function mergePolicy(recorded: PolicySnapshot, whatIf: PolicyInput): PolicySnapshot {
  return resolvePolicy({ ...recorded, ...whatIf, workspace: { ...recorded.workspace, ...whatIf.workspace } }, recorded.workspace.root);
}
