import { UnknownSessionError } from "../errors/session-state-error.js";
import type { RecordedEvent } from "../log/event-log.js";
import type { LogReader } from "../reader/index.js";
import { CliError } from "./cli-error.js";
import { dirFlag } from "./log-directory.js";

/**
 * What a reader returns for one session. An unknown session is the user's mistake: a one-line
 * {@link CliError} that says where to look.
 *
 * @example
 * const state = await forSession(reader.state(id), id, options.dir, context.io.env);
 */
export async function forSession<T>(read: Promise<T>, sessionId: string, directory: string, env: NodeJS.ProcessEnv): Promise<T> {
  try {
    return await read;
  } catch (error) {
    if (UnknownSessionError.isInstance(error)) {
      throw new CliError(`no session "${sessionId}" in ${directory} — "npx turnlog sessions${dirFlag(directory, env)}" lists them`, { cause: error });
    }
    throw error;
  }
}

/** Every recorded event of a session, in stream order; an unknown session is a one-line {@link CliError}. */
export function readSessionEvents(reader: LogReader, sessionId: string, directory: string, env: NodeJS.ProcessEnv): Promise<RecordedEvent[]> {
  return forSession(reader.events(sessionId), sessionId, directory, env);
}
