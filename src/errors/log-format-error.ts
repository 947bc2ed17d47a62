import { hasCode, TurnlogError } from "./turnlog-error.js";

/**
 * The log directory was written in a storage layout this turnlog does not read (by another
 * version of turnlog). Nothing is changed in it; open it with the turnlog that wrote it.
 *
 * @example
 * try { await LevelEventLog.open(".turnlog"); }
 * catch (error) { if (LogFormatError.isInstance(error)) console.error(`${error.directory}: layout ${error.found}`); }
 */
export class LogFormatError extends TurnlogError {
  readonly code = "TURNLOG_LOG_FORMAT";

  constructor(
    readonly directory: string,
    readonly found: string,
    readonly expected: string,
  ) {
    super(`${directory} holds a log in layout ${JSON.stringify(found)}; this turnlog reads ${expected}`);
  }

  static isInstance(value: unknown): value is LogFormatError {
    return hasCode(value, "TURNLOG_LOG_FORMAT");
  }
}
