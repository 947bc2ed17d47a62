import type { EventLog, RecordedEvent } from "../log/event-log.js";
import { sessionStream } from "../runtime/session-store.js";
import { CliError } from "./cli-error.js";
import { dirFlag } from "./log-directory.js";

/**
 * Every recorded event of a session, in stream order. An unknown session is the user's mistake:
 * a one-line {@link CliError} that says where to look.
 */
export async function readSessionEvents(log: EventLog, sessionId: string, directory: string, env: NodeJS.ProcessEnv): Promise<RecordedEvent[]> {
  const events = await log.readStream(sessionStream(sessionId), { maxCount: Number.MAX_SAFE_INTEGER });
  if (events.length === 0) {
    throw new CliError(`no session "${sessionId}" in ${directory} — "npx turnlog sessions${dirFlag(directory, env)}" lists them`);
  }
  return events;
}
