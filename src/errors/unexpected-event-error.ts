import { hasCode, TurnlogError } from "./turnlog-error.js";

/**
 * An event the log holds that turnlog cannot take where it is: the turn machine does not accept it
 * in its current state (the log and the machine disagree), or it was refused as it was read — a
 * type the event catalogue does not have, or data of the wrong shape (`problem` says which; then
 * `machineState` is `"unread"`). `position` is the event's stream position.
 *
 * @example
 * try { await reader.state("s1"); }
 * catch (error) { if (UnexpectedEventError.isInstance(error)) console.error(`position ${error.position}: ${error.message}`); }
 */
export class UnexpectedEventError extends TurnlogError {
  readonly code = "TURNLOG_UNEXPECTED_EVENT";

  constructor(
    readonly position: number,
    readonly type: string,
    readonly machineState: string,
    /** Why the event was refused as it was read (absent when the turn machine refused it). */
    readonly problem?: string,
  ) {
    super(
      problem === undefined
        ? `event ${type} at position ${position} is not accepted by the turn machine in state "${machineState}"`
        : `event ${JSON.stringify(type)} at position ${position} cannot be read: ${problem}`,
    );
  }

  static isInstance(value: unknown): value is UnexpectedEventError {
    return hasCode(value, "TURNLOG_UNEXPECTED_EVENT");
  }
}
