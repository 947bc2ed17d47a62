import { hasCode, TurnlogError } from "./turnlog-error.js";

/**
 * A seal file cannot be used: the seal key can be read by others (as ssh refuses such a key: it
 * would let anyone forge seals), or the seal witness is not in its format. Names the `file`; the
 * message says what to do (`chmod 600 …`).
 *
 * @example
 * try { await loadSealKey(sealKeyDirectory()); }
 * catch (error) { if (SealFileError.isInstance(error)) console.error(error.file, error.message); }
 */
export class SealFileError extends TurnlogError {
  readonly code = "TURNLOG_SEAL_FILE";

  constructor(
    readonly file: string,
    message: string,
  ) {
    super(message);
  }

  static isInstance(value: unknown): value is SealFileError {
    return hasCode(value, "TURNLOG_SEAL_FILE");
  }
}
