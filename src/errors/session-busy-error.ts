import { hasCode, TurnlogError } from "./turnlog-error.js";

/**
 * Another process is driving the session: it holds the session's lease (`sessionLease: "fail"`,
 * on a log that grants leases such as `PostgresEventLog`). Nothing was appended.
 *
 * @example
 * try { await session.resume(); }
 * catch (error) { if (SessionBusyError.isInstance(error)) showBusy(error.sessionId); else throw error; }
 */
export class SessionBusyError extends TurnlogError {
  readonly code = "TURNLOG_SESSION_BUSY";

  constructor(readonly sessionId: string) {
    super(
      `session ${sessionId} is being driven by another process (it holds the session's lease): let it finish — follow it with session.events(), or await session.waitForAnswers() when it parks for approval — then resume() it here; nothing was appended`,
    );
  }

  static isInstance(value: unknown): value is SessionBusyError {
    return hasCode(value, "TURNLOG_SESSION_BUSY");
  }
}
