/**
 * The read-side API (layer 6): what a host — and the CLI, which is just another host — uses to
 * read a log without a provider. Besides the reader itself it re-exports the types and the few pure
 * helpers a reader's results are read with, so that nothing above this layer reaches into
 * projections/, replay/ or core/.
 */
export { createLogReader } from "./log-reader.js";
export type {
  LogReader,
  LogReaderOptions,
  ReaderReplayOptions,
  ReaderVerifyOptions,
  SessionEventsOptions,
  SessionHistoryView,
  SessionListing,
  SessionView,
} from "./log-reader.js";
export type { ApproveAnswer, DenyAnswer, HeldCallAnswer, RecordedAnswer } from "./held-call-answer.js";
export type { PendingApproval } from "../core/held-calls.js";
export { answerHeldCall } from "./answer-held-call.js";
export type { AnswerHeldCallOptions } from "./answer-held-call.js";
export { openLog } from "./open-log.js";
export type { OpenLogOptions } from "./open-log.js";
export { sessionStatus } from "./session-status.js";
export type { SessionStatus } from "./session-status.js";

export { readEvent, readEvents } from "../core/read-events.js";
export { isValidSessionId, sessionIdOfStream, sessionIdPattern, sessionStream } from "../core/session-stream.js";
export { isKnownDecisionsVersion, latestDecisionsVersion, resolveDecisionsVersion } from "../core/decision-versions.js";
export { turnEndings } from "../core/session-fold.js";
export { turnMachineGraph, turnPaths } from "../core/turn-paths.js";
export type { TurnMachineGraph, TurnMachineState, TurnMachineTransition, TurnPath, TurnPathStep } from "../core/turn-paths.js";
export { activeTurn, pendingApprovals } from "../projections/session-state.js";
export { approvalDeadlines, expiredApprovals } from "../core/approval-deadlines.js";
export type { ApprovalDeadline } from "../core/approval-deadlines.js";
export { auditDecisions, auditOutcomes, auditRows } from "../projections/audit.js";
export type { CallState, SessionMessage, SessionState, TurnState } from "../projections/session-state.js";
export type { AuditOutcome, AuditRow } from "../projections/audit.js";
export type { Divergence, ReplayReport, SchemaLevelCheck, Unverifiable } from "../replay/replay-verifier.js";
export { formatDecisionChange } from "../replay/what-if.js";
export type { DecisionAndRule, DecisionChange } from "../replay/what-if.js";
export type { ForkResult } from "../replay/fork.js";
export { PositionOutOfRangeError } from "../errors/position-out-of-range-error.js";
export type { SnapshotCacheOptions } from "../replay/snapshot-cache.js";
