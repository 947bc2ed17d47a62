import { hasCode, TurnlogError } from "./turnlog-error.js";

/**
 * The log is damaged: an event its index promises is missing or unreadable, a stream's head cannot
 * be read, or events do not chain on from their last seal. Nothing is repaired silently; the
 * message says where, and `verify()` (or `turnlog verify`) finds the first bad position.
 *
 * @example
 * try { for await (const event of log.readAll()) show(event); }
 * catch (error) { if (LogCorruptedError.isInstance(error)) console.error(await log.verify()); }
 */
export class LogCorruptedError extends TurnlogError {
  readonly code = "TURNLOG_LOG_CORRUPTED";
  /**
   * The LevelDB file that is damaged (`000005.log`, `000007.ldb`, `MANIFEST-000004`), when the
   * damage was found in a file rather than in an event's content.
   */
  readonly file: string | undefined;

  constructor(message: string, options?: { cause?: unknown; file?: string }) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.file = options?.file;
  }

  static isInstance(value: unknown): value is LogCorruptedError {
    return hasCode(value, "TURNLOG_LOG_CORRUPTED");
  }
}
