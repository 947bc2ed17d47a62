import { hasCode, TurnlogError } from "./turnlog-error.js";

/**
 * An answer to a held call could not be handed to the process that holds a LevelDB log, through
 * that process's owner channel (docs/log.md, "The owner channel"): the channel refused it (a wrong
 * token, a malformed or oversized request, an owner that records no answers), or could not be
 * reached (its owner file or socket belongs to another user). `refusedCode` is the owner's code
 * for a refusal, when it gave one.
 */
export class OwnerChannelError extends TurnlogError {
  readonly code = "TURNLOG_OWNER_CHANNEL";

  constructor(
    message: string,
    options?: { cause?: unknown; refusedCode?: string },
  ) {
    super(message, options);
    this.refusedCode = options?.refusedCode;
  }

  /** The code the owner refused with (`TURNLOG_OWNER_CHANNEL` for the channel's own refusals), if it answered. */
  readonly refusedCode: string | undefined;

  static isInstance(value: unknown): value is OwnerChannelError {
    return hasCode(value, "TURNLOG_OWNER_CHANNEL");
  }
}
