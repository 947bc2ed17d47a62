import { hasCode, TurnlogError } from "./turnlog-error.js";

/**
 * A reader of a PostgreSQL log's global order (`readAll`) waited for a transaction that is still
 * open on the server, older than the events it had to return next: it cannot return them without
 * risking to pass one that transaction may still commit below them (docs/log.md, "The global
 * order"). Nothing is wrong with the log; an open transaction elsewhere holds it back.
 *
 * @example
 * try { for await (const event of log.readAll()) show(event); }
 * catch (error) { if (LogStalledError.isInstance(error)) console.error(`blocked by ${error.blocker}`); else throw error; }
 */
export class LogStalledError extends TurnlogError {
  readonly code = "TURNLOG_LOG_STALLED";

  constructor(
    /** Where the log is (without credentials). */
    readonly location: string,
    /** The global position the reader had returned up to. */
    readonly position: number,
    /** What is known of the open transaction holding it back (a process id, its state, since when). */
    readonly blocker: string,
    readonly waitedMs: number,
  ) {
    super(
      `reading ${location} in global order stopped after position ${position}: for ${Math.round(waitedMs / 1000)} s a transaction left open on the server (${blocker}) ` +
        "has held back the events after it — end that transaction (or set idle_in_transaction_session_timeout) and read again",
    );
  }

  static isInstance(value: unknown): value is LogStalledError {
    return hasCode(value, "TURNLOG_LOG_STALLED");
  }
}
