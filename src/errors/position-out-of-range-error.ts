import { hasCode, TurnlogError } from "./turnlog-error.js";

/**
 * A stream position beyond the end of a session's stream (`stateAt`, `fork({ at })`). Carries the
 * stream's real `version`, so a caller can clamp and ask again.
 *
 * @example
 * try { await runtime.stateAt("s1", 999); }
 * catch (error) { if (PositionOutOfRangeError.isInstance(error)) await runtime.stateAt("s1", error.version); }
 */
export class PositionOutOfRangeError extends TurnlogError {
  readonly code = "TURNLOG_POSITION_OUT_OF_RANGE";

  constructor(
    readonly sessionId: string,
    readonly position: number,
    readonly version: number,
  ) {
    super(`session "${sessionId}" has ${version} event${version === 1 ? "" : "s"}; position ${position} is beyond its end`);
  }

  static isInstance(value: unknown): value is PositionOutOfRangeError {
    return hasCode(value, "TURNLOG_POSITION_OUT_OF_RANGE");
  }
}
