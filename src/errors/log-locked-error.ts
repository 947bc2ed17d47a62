import { hasCode, TurnlogError } from "./turnlog-error.js";

/**
 * A LevelDB log directory is already open: in another process, or (`inThisProcess`) through a
 * handle this process opened and has not closed — often a log passed to `createRuntime({ log })`,
 * which `runtime.close()` leaves open for its owner to close.
 */
export class LogLockedError extends TurnlogError {
  readonly code = "TURNLOG_LOG_LOCKED";

  constructor(
    readonly directory: string,
    options?: { cause?: unknown; inThisProcess?: boolean },
  ) {
    super(
      options?.inThisProcess
        ? `log is already open in this process: ${directory} (close that handle first; runtime.close() does not close a log passed to createRuntime)`
        : `log is locked by another process: ${directory}`,
      options,
    );
    this.inThisProcess = options?.inThisProcess ?? false;
  }

  /** The handle that holds it was opened by this process (and not closed). */
  readonly inThisProcess: boolean;

  static isInstance(value: unknown): value is LogLockedError {
    return hasCode(value, "TURNLOG_LOG_LOCKED");
  }
}
