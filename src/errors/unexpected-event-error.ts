import { hasCode, TurnlogError } from "./turnlog-error.js";

/** An event the turn machine does not accept in its current state: the log and the machine disagree. */
export class UnexpectedEventError extends TurnlogError {
  readonly code = "TURNLOG_UNEXPECTED_EVENT";

  constructor(
    readonly position: number,
    readonly type: string,
    readonly machineState: string,
  ) {
    super(`event ${type} at position ${position} is not accepted by the turn machine in state "${machineState}"`);
  }

  static isInstance(value: unknown): value is UnexpectedEventError {
    return hasCode(value, "TURNLOG_UNEXPECTED_EVENT");
  }
}
