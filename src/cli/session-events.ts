import type { ResolvedLogLocation } from "../log/log-location.js";
import { UnknownSessionError } from "../errors/unknown-session-error.js";
import type { RecordedTurnlogEvent } from "../log/event-log.js";
import type { LogReader } from "../reader/index.js";
import { CliError } from "../errors/cli-error.js";
import { describeLocation, logFlag } from "./log-directory.js";

/**
 * What a reader returns for one session. An unknown session is the user's mistake: a one-line
 * {@link CliError} that says where to look.
 *
 * @example
 * const state = await forSession(reader.state(id), id, options.location, context.io.env);
 */
export async function forSession<T>(read: Promise<T>, sessionId: string, location: ResolvedLogLocation, env: NodeJS.ProcessEnv): Promise<T> {
  try {
    return await read;
  } catch (error) {
    if (UnknownSessionError.isInstance(error)) {
      throw new CliError(`no session "${sessionId}" in ${describeLocation(location)} — "npx turnlog sessions${logFlag(location, env)}" lists them`, { cause: error });
    }
    throw error;
  }
}

/** Every recorded event of a session, in stream order; an unknown session is a one-line {@link CliError}. */
export function readSessionEvents(reader: LogReader, sessionId: string, location: ResolvedLogLocation, env: NodeJS.ProcessEnv): Promise<RecordedTurnlogEvent[]> {
  return forSession(reader.events(sessionId), sessionId, location, env);
}
