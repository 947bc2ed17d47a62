import { actorOf, type ErrorActor, type ErrorCode } from "./error-codes.js";

/**
 * Base of every typed turnlog error: a stable `code` that hosts can switch on, who must act on it
 * (`actor`, from the {@link errorCodes} table), and a `Symbol.for` marker so that `isInstance`
 * works across duplicated copies of the package (where `instanceof` would not).
 *
 * @example
 * catch (error) {
 *   if (TurnlogError.isTurnlogError(error) && error.actor === "provider") scheduleRetry();
 * }
 */
const marker = Symbol.for("turnlog.error");

export abstract class TurnlogError extends Error {
  abstract readonly code: ErrorCode;
  readonly [marker] = true;

  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
  }

  /**
   * Who must act: `configuration`, `model`, `provider`, `log`, `host` or `person` (see
   * {@link ErrorActor}). Read from the code table, so it is the same for every error of one code.
   */
  get actor(): ErrorActor {
    // Every subclass's code is in the table (a test checks it); the fallback only covers an error
    // built by a newer copy of the package whose code this copy does not know.
    return actorOf(this.code) ?? "host";
  }

  /** True for any turnlog error, from any copy of the package. */
  static isTurnlogError(value: unknown): value is TurnlogError {
    return typeof value === "object" && value !== null && (value as Record<symbol, unknown>)[marker] === true;
  }
}

/** Builds the `isInstance` guard for one error code. */
export function hasCode<T extends TurnlogError>(value: unknown, code: ErrorCode): value is T {
  return TurnlogError.isTurnlogError(value) && value.code === code;
}
