import { hasCode, TurnlogError } from "./turnlog-error.js";

/**
 * The runtime was closed (`runtime.close()`): what was waiting on it — `session.waitForAnswers()`
 * — ends with this error, and so does every runtime or session operation asked for afterwards.
 * A `send` or `resume` under way when it closed is cancelled instead (it resolves `stopped` /
 * `cancelled`, as the log records it).
 *
 * @example
 * try { await session.waitForAnswers(); }
 * catch (error) { if (!RuntimeClosedError.isInstance(error)) throw error; }   // shutting down
 */
export class RuntimeClosedError extends TurnlogError {
  readonly code = "TURNLOG_RUNTIME_CLOSED";

  constructor() {
    super("the turnlog runtime is closed (runtime.close()): create a new runtime to go on");
  }

  static isInstance(value: unknown): value is RuntimeClosedError {
    return hasCode(value, "TURNLOG_RUNTIME_CLOSED");
  }
}
