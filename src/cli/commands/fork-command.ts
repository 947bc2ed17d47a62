import type { ResolvedLogLocation } from "../../log/log-location.js";
import { ExpectedVersionConflictError } from "../../errors/expected-version-conflict-error.js";
import { UnknownSessionError } from "../../errors/unknown-session-error.js";
import { createLogReader, isValidSessionId, PositionOutOfRangeError } from "../../reader/index.js";
import type { CommandContext } from "../cli-io.js";
import { CliError, exitCodes } from "../../errors/cli-error.js";
import { describeLocation, logFlag, withLog } from "../log-directory.js";
import { userSeals } from "../../log/seal/user-seals.js";

/**
 * `turnlog fork <session> --at N --to NEW`: a new session whose log starts with a copy of the
 * session's events 1..N (its own hash chain; its `session.started` records where it came from).
 * Prints the new session's ID and the command that shows it. An existing `--to` exits 1. A
 * position inside a provider request's decision is moved back to before it, and the command says
 * so (docs/replay.md, "Fork").
 */
export async function forkCommand(sessionId: string, options: { location: ResolvedLogLocation; at: string; to: string }, context: CommandContext): Promise<number> {
  const at = /^\d+$/.test(options.at) ? Number(options.at) : Number.NaN;
  if (!Number.isSafeInteger(at) || at < 1) throw new CliError(`--at must be a stream position ≥ 1 (got "${options.at}")`, { exitCode: exitCodes.usage });
  if (!isValidSessionId(options.to)) throw new CliError(`--to "${options.to}" is not a valid session ID (letters, digits, ".", "_", "-"; at most 128)`, { exitCode: exitCodes.usage });
  if (options.to === sessionId) throw new CliError(`--to must name a new session, not "${sessionId}" itself`, { exitCode: exitCodes.usage });
  const env = context.io.env;
  const result = await withLog(options.location, {}, async (log) => {
    try {
      // The new session is sealed at once, as the runtime seals a fork.
      return await createLogReader(log, { seals: await userSeals(options.location, env) }).fork(sessionId, { at, to: options.to });
    } catch (error) {
      if (ExpectedVersionConflictError.isInstance(error)) throw new CliError(`session "${options.to}" already exists in ${describeLocation(options.location)} — pick another --to`, { cause: error });
      if (UnknownSessionError.isInstance(error)) {
        throw new CliError(`no session "${sessionId}" in ${describeLocation(options.location)} — "npx turnlog sessions${logFlag(options.location, env)}" lists them`, { cause: error });
      }
      if (error instanceof PositionOutOfRangeError) throw new CliError(error.message, { cause: error });
      throw error;
    }
  });
  const { print, paint } = context;
  print(`${paint("good", "forked")} ${result.sessionId} ${paint("dim", `from ${sessionId} at #${result.forkedFrom.position} (${result.copied} events copied, with a hash chain of its own)`)}`);
  if (result.movedFrom !== undefined) {
    print(paint("dim", `#${result.movedFrom} is inside a provider request's decision (its history decisions are written with the request): the copy ends before it, at #${result.forkedFrom.position}`));
  }
  print(`${paint("dim", "show it:")} npx turnlog show ${result.sessionId}${logFlag(options.location, env)}`);
  return exitCodes.ok;
}
