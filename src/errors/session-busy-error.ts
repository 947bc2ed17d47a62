import { hasCode, TurnlogError } from "./turnlog-error.js";

/**
 * Another writer is driving the session, and nothing was appended. `holder` says how this process
 * knows:
 * - `"lease"`: another process holds the session's lease (`sessionLease: "fail"`, on a log that
 *   grants leases such as `PostgresEventLog`);
 * - `"writer"`: a `send` found the session in the middle of a turn whose latest events another
 *   writer on the log appended (another runtime, or a host racing without the lease): it is taken
 *   to be performing the turn, as a process without the lease cannot tell it from one that died.
 *
 * @example
 * try { await session.resume(); }
 * catch (error) { if (SessionBusyError.isInstance(error)) showBusy(error.sessionId); else throw error; }
 */
export class SessionBusyError extends TurnlogError {
  readonly code = "TURNLOG_SESSION_BUSY";

  constructor(
    readonly sessionId: string,
    readonly holder: "lease" | "writer" = "lease",
  ) {
    super(
      holder === "lease"
        ? `session ${sessionId} is being driven by another process (it holds the session's lease): let it finish — follow it with session.events(), or await session.waitForAnswers() when it parks for approval — then resume() it here; nothing was appended`
        : `session ${sessionId} is in the middle of a turn another writer on this log is performing (it appended the turn's latest events, not this runtime): let it finish — follow it with session.events() — then send again; nothing was appended`,
    );
  }

  static isInstance(value: unknown): value is SessionBusyError {
    return hasCode(value, "TURNLOG_SESSION_BUSY");
  }
}
