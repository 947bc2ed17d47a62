import type { EventLog } from "../log/event-log.js";
import type { SessionState } from "../projections/session-state.js";
import { sessionIdOfStream, sessionStream } from "../core/session-stream.js";
import { SessionBusyError } from "../errors/session-busy-error.js";
import type { LogReader } from "../reader/log-reader.js";
import { inProgressElsewhere, outcomeOf, type SendOutcome } from "./provider-turn-loop.js";
import { continueLeftWork, pastDeadline, watchForAnswers, type Session } from "./session.js";

/** Options of `runtime.resumeAll`. */
export interface ResumeAllOptions {
  /**
   * Stops the sweep: sessions not yet started are left as they are (listed as `skipped`, reason
   * `aborted`), and the one under way is cancelled as `runtime.close()` cancels a `resume` (its
   * turn ends `stopped` / `cancelled`).
   */
  signal?: AbortSignal;
}

/** Why `runtime.resumeAll` left a session it had listed. */
export type ResumeAllSkipReason =
  /** Another process holds the session's lease (`SessionBusyError`): it is driving it. */
  | "busy"
  /** Confirmed under the lease, nothing was owed any more: another worker finished it first. */
  | "settled"
  /** Another writer on a log without leases is performing the turn's next effect. */
  | "in-progress-elsewhere"
  /** The sweep's signal aborted (or the runtime closed) before the session's turn came. */
  | "aborted";

/**
 * What `runtime.resumeAll` did, session by session: a report a host can log. Every session of the
 * log that owed work or waited for a person appears in exactly one list.
 *
 * @example
 * const report = await runtime.resumeAll();
 * for (const { sessionId, outcome } of report.continued) logger.info({ sessionId, status: outcome.status }, "resumed");
 */
export interface ResumeAllReport {
  /** Sessions this sweep continued, with how each `resume` ended. */
  continued: Array<{ sessionId: string; outcome: SendOutcome }>;
  /** Sessions still waiting for a person: left alone (with `autoResume`, waited on). */
  waiting: Array<{ sessionId: string; callIds: string[] }>;
  /** Sessions listed as owing work and left, with why; `error` is the `SessionBusyError` for `busy`. */
  skipped: Array<{ sessionId: string; reason: ResumeAllSkipReason; error?: unknown }>;
  /** Sessions that could not be continued (e.g. their held calls need tools this runtime lacks). */
  failed: Array<{ sessionId: string; error: unknown }>;
  /** Sessions in the log. */
  scanned: number;
  /** Of those, how many were read in full to tell where they stand (the others ended with a turn's end). */
  folded: number;
  /** The signal aborted (or the runtime closed) during the sweep. */
  aborted: boolean;
}

/** What a sweep needs from its runtime. */
export interface ResumeAllContext {
  log: EventLog;
  reader: LogReader;
  /**
   * `runtime.openSession(id, { create: false })`, except that on a log with leases a turn left in
   * flight is recovered by `continueLeftWork` under the lease, not on opening.
   */
  open: (sessionId: string) => Promise<Session>;
  /** `RuntimeOptions.autoResume` is on: sessions found waiting are opened and waited on. */
  autoResume: boolean;
}

/**
 * Events after which a session owes nothing: the last event of its stream says so without
 * reading the rest. A turn's end leaves no active turn and no held call (`outcomeOf` then gives
 * the recorded outcome); a session that only started has nothing to do. Any other last event
 * may belong to an unfinished turn, so that session is read in full.
 */
const settledBy: ReadonlySet<string> = new Set(["turn.completed", "turn.stopped", "turn.failed", "session.started", "session.native_tool.completed"]);

/** A session the scan found owing work or waiting for a person, as far as it could tell without the lease. */
type Listed = { sessionId: string; standing: "owed" } | { sessionId: string; standing: "waiting"; callIds: string[] };

/**
 * Lists the sessions that may owe work (`needs-resume`: answers in, or a turn a crash cut off) or
 * wait for a person. Cheap first: one read of each stream's last event settles most sessions;
 * only the rest are folded (the reader's projection, as `reader.sessions()` derives its status).
 * What it lists is a hint: each session is confirmed on its own fold under the lease before
 * anything runs (`continueLeftWork`).
 */
async function listLeftSessions(context: ResumeAllContext, report: ResumeAllReport): Promise<Listed[]> {
  const listed: Listed[] = [];
  for (const stream of await context.log.listStreams()) {
    const sessionId = sessionIdOfStream(stream);
    if (sessionId === undefined) continue;
    const [last] = await context.log.readStream(sessionStream(sessionId), { direction: "backwards", maxCount: 1 });
    if (last === undefined) continue;
    report.scanned += 1;
    if (settledBy.has(last.type)) continue;
    report.folded += 1;
    let state: SessionState;
    try {
      state = await context.reader.state(sessionId);
    } catch (error) {
      // A damaged stream must not stop the sweep of the others; `verify()` says what is wrong.
      report.failed.push({ sessionId, error });
      continue;
    }
    const outcome = outcomeOf(state);
    // A held call past its approval deadline is work owed: its continuer records approval:timeout.
    if (outcome.status === "awaiting-approval" && pastDeadline(context.log, state)) listed.push({ sessionId, standing: "owed" });
    else if (outcome.status === "awaiting-approval") listed.push({ sessionId, standing: "waiting", callIds: outcome.pendingApprovals.map((call) => call.callId) });
    else if (outcome.status === "needs-resume") listed.push({ sessionId, standing: "owed" });
  }
  return listed;
}

/**
 * `runtime.resumeAll`: continues, one at a time, every session that owes work, each once and
 * under its lease, and reports what became of each (docs/embedding.md, "A worker that picks up
 * what was left"). `signal` is the host's signal linked with the runtime's close.
 */
export async function resumeAll(context: ResumeAllContext, signal: AbortSignal): Promise<ResumeAllReport> {
  const report: ResumeAllReport = { continued: [], waiting: [], skipped: [], failed: [], scanned: 0, folded: 0, aborted: false };
  signal.throwIfAborted();
  const listed = await listLeftSessions(context, report);
  for (const entry of listed) {
    const { sessionId } = entry;
    if (signal.aborted) {
      report.aborted = true;
      if (entry.standing === "waiting") report.waiting.push({ sessionId, callIds: entry.callIds });
      else report.skipped.push({ sessionId, reason: "aborted" });
      continue;
    }
    if (entry.standing === "waiting") {
      report.waiting.push({ sessionId, callIds: entry.callIds });
      if (!context.autoResume) continue;
      try {
        // Waited on like a session this runtime parked: its answers resume it (`autoResume`).
        watchForAnswers(await context.open(sessionId));
      } catch (error) {
        report.waiting.pop();
        report.failed.push({ sessionId, error });
      }
      continue;
    }
    try {
      const left = await continueLeftWork(await context.open(sessionId), signal);
      if (left.continued && !(left.outcome.status === "needs-resume" && left.outcome.reason === inProgressElsewhere)) report.continued.push({ sessionId, outcome: left.outcome });
      else if (left.outcome.status === "awaiting-approval") report.waiting.push({ sessionId, callIds: left.outcome.pendingApprovals.map((call) => call.callId) });
      else report.skipped.push({ sessionId, reason: left.outcome.reason === inProgressElsewhere ? "in-progress-elsewhere" : "settled" });
    } catch (error) {
      if (SessionBusyError.isInstance(error)) report.skipped.push({ sessionId, reason: "busy", error });
      else if (signal.aborted) report.skipped.push({ sessionId, reason: "aborted" });
      else report.failed.push({ sessionId, error });
    }
  }
  if (signal.aborted) report.aborted = true;
  return report;
}
