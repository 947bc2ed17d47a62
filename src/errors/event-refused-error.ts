import { hasCode, TurnlogError } from "./turnlog-error.js";

/**
 * The log refused an event a session built: its data cannot be stored as JSON, or holds a string
 * that is not valid Unicode. Values handed in from outside — tool output, user text, approval
 * notes, provider errors — are repaired or refused where they enter (docs/log.md, "Event data"),
 * so this names a value that reached an event some other way. Nothing of the append was written;
 * the session's state is again what its log holds, and `resume()` continues it.
 *
 * @example
 * try { await session.send(text); }
 * catch (error) { if (EventRefusedError.isInstance(error)) await session.resume(); }
 */
export class EventRefusedError extends TurnlogError {
  readonly code = "TURNLOG_EVENT_REFUSED";

  constructor(
    /** The session whose append was refused. */
    readonly sessionId: string,
    /** Why, as the log said it (the refused event's type and what is wrong with its data). */
    readonly reason: string,
    options?: { cause?: unknown },
  ) {
    super(`session ${sessionId}: the log refused an event: ${reason}; nothing of that append was written, and resume() continues from what the log holds`, options);
  }

  static isInstance(value: unknown): value is EventRefusedError {
    return hasCode(value, "TURNLOG_EVENT_REFUSED");
  }
}
