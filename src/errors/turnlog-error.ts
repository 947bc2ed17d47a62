/**
 * Base of every typed turnlog error: a stable `code` that hosts can switch on, and a
 * `Symbol.for` marker so that `isInstance` works across duplicated copies of the package
 * (where `instanceof` would not).
 */
const marker = Symbol.for("turnlog.error");

export abstract class TurnlogError extends Error {
  abstract readonly code: string;
  readonly [marker] = true;

  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
  }

  /** True for any turnlog error, from any copy of the package. */
  static isTurnlogError(value: unknown): value is TurnlogError {
    return typeof value === "object" && value !== null && (value as Record<symbol, unknown>)[marker] === true;
  }
}

/** Builds the `isInstance` guard for one error code. */
export function hasCode<T extends TurnlogError>(value: unknown, code: string): value is T {
  return TurnlogError.isTurnlogError(value) && value.code === code;
}
