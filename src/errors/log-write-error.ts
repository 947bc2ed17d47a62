import { hasCode, TurnlogError } from "./turnlog-error.js";
import { describeThrown } from "../util/json-value.js";

/**
 * The disk refused a write of the LevelDB log: no space left on device (`ENOSPC`), or an I/O
 * error of a write or of its `fsync`. The append that met it was not acknowledged. After it, the
 * log refuses every append until it is reopened: LevelDB may have left a torn record in its
 * write-ahead file, and after a failed `fsync` the kernel's page cache can no longer be trusted to
 * reach the disk (PostgreSQL's "fsyncgate"), so carrying on could acknowledge events a crash then
 * loses. Reopening recovers the log to its last whole, acknowledged append.
 *
 * @example
 * try { await log.appendToStream(stream, events); }
 * catch (error) { if (LogWriteError.isInstance(error) && error.errno === "ENOSPC") await freeSpaceThenReopen(error.directory); }
 */
export class LogWriteError extends TurnlogError {
  readonly code = "TURNLOG_LOG_WRITE";

  constructor(
    /** The log directory. */
    readonly directory: string,
    /** `ENOSPC` (no space left on device), `EIO` (an I/O error), or `undefined` when the storage did not say. */
    readonly errno: "ENOSPC" | "EIO" | undefined,
    options?: { cause?: unknown },
  ) {
    const what = errno === "ENOSPC" ? "no space left on device (ENOSPC)" : errno === "EIO" ? "an I/O error (EIO) — a failed write or fsync" : `a storage error (${causeText(options?.cause)})`;
    super(
      `cannot write the log at ${directory}: ${what}; the append was not acknowledged, and this log refuses further appends until it is reopened${errno === "ENOSPC" ? " (free space first)" : ""}`,
      options,
    );
  }

  static isInstance(value: unknown): value is LogWriteError {
    return hasCode(value, "TURNLOG_LOG_WRITE");
  }
}

function causeText(cause: unknown): string {
  return describeThrown(cause);
}
