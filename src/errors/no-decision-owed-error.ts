import { hasCode, TurnlogError } from "./turnlog-error.js";

/**
 * Nothing of that kind is owed at this point: the log holds a decision the machine did not ask
 * for. The decider throws it; replay reports it as a divergence (`no decision owed: …`).
 *
 * @example
 * try { decideAll("startTool", inputs); }
 * catch (error) { if (NoDecisionOwedError.isInstance(error)) console.log("the log decided out of turn"); }
 */
export class NoDecisionOwedError extends TurnlogError {
  readonly code = "TURNLOG_NO_DECISION_OWED";

  static isInstance(value: unknown): value is NoDecisionOwedError {
    return hasCode(value, "TURNLOG_NO_DECISION_OWED");
  }
}
