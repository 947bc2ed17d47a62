import { createLogReader } from "../../reader/index.js";
import { printJson, type CommandContext } from "../cli-io.js";
import { exitCodes } from "../cli-error.js";
import { readOnly, withLog } from "../log-directory.js";
import { readSessionEvents } from "../session-events.js";
import { formatTimeline } from "../timeline.js";

/** `turnlog events <session>`: the timeline, or the recorded events as JSON. */
export async function eventsCommand(sessionId: string, options: { dir: string; json?: boolean }, context: CommandContext): Promise<number> {
  const events = await withLog(options.dir, readOnly(context.io), (log) => readSessionEvents(createLogReader(log), sessionId, options.dir, context.io.env));
  if (options.json) {
    printJson(context, events);
  } else {
    for (const line of formatTimeline(events, { color: context.color })) context.print(line);
  }
  return exitCodes.ok;
}
