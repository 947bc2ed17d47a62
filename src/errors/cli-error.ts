import { hasCode, TurnlogError } from "./turnlog-error.js";

/** The CLI's exit codes (docs/cli-run.md, "Exit codes"). They live with {@link CliError}, which carries one. */
export const exitCodes = {
  ok: 0,
  /** A divergence, a broken chain, a failed turn, or a user mistake such as an unknown session. */
  failure: 1,
  /** The command line itself is wrong: an unknown command or option, a missing argument. */
  usage: 2,
  /** A turn was left with calls held for approval. */
  awaitingApproval: 3,
  /** A turn was stopped: a budget, a cancel, a refusal. */
  stopped: 4,
  /**
   * `turnlog replay` could not replay the session at all — tools the CLI does not have, a
   * decisions version this turnlog does not know, no such session or log — so it says nothing
   * about divergence: a script must not read it as 1, "diverged".
   */
  cannotReplay: 5,
} as const;

/**
 * A mistake of the CLI's user (an unknown session, a missing log directory, a log in use) or a
 * failure the command reports on purpose. The CLI prints its message as one line, without a
 * stack trace, and exits with `exitCode`.
 *
 * @example
 * throw new CliError(`no session "${id}" in ${dir}`);
 */
export class CliError extends TurnlogError {
  readonly code = "TURNLOG_CLI";
  readonly exitCode: number;

  constructor(message: string, options: { exitCode?: number; cause?: unknown } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.exitCode = options.exitCode ?? exitCodes.failure;
  }

  static isInstance(value: unknown): value is CliError {
    return hasCode(value, "TURNLOG_CLI");
  }
}
