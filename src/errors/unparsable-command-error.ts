import { hasCode, TurnlogError } from "./turnlog-error.js";

/**
 * Thrown by the command scanner for text a shell would reject: unbalanced quotes, an unclosed
 * substitution or heredoc operator. `classifyCommand` turns it into the `approval:unparsable`
 * rule, so it never reaches a host: the model's mistake is data (a call that asks first), not a
 * failure.
 *
 * @example
 * scanShellText("echo 'unbalanced") // throws UnparsableCommandError("an unbalanced single quote")
 */
export class UnparsableCommandError extends TurnlogError {
  readonly code = "TURNLOG_UNPARSABLE_COMMAND";

  static isInstance(value: unknown): value is UnparsableCommandError {
    return hasCode(value, "TURNLOG_UNPARSABLE_COMMAND");
  }
}
