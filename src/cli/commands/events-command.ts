import { isPostgresLocation, type ResolvedLogLocation } from "../../log/log-location.js";
import { createLogReader, readEvent, sessionStream } from "../../reader/index.js";
import { followStream } from "../../log/follow-stream.js";
import { printJson, type CommandContext } from "../cli-io.js";
import { CliError, exitCodes } from "../../errors/cli-error.js";
import { followLogDirectory, logDirectoryState } from "../follow-log-directory.js";
import { readOnly, withCopyOfLogDirectory, withLog } from "../log-directory.js";
import { readSessionEvents } from "../session-events.js";
import { formatTimeline } from "../timeline.js";
import { jsonText } from "../terminal-text.js";
import type { RecordedTurnlogEvent } from "../../log/event-log.js";

/** `turnlog events <session>`: the timeline, or the recorded events as JSON. */
export async function eventsCommand(sessionId: string, options: { location: ResolvedLogLocation; json?: boolean; follow?: boolean; interval?: string }, context: CommandContext): Promise<number> {
  if (options.follow) return followEvents(sessionId, options, context);
  const events = await withLog(options.location, readOnly(context.io), (log) => readSessionEvents(createLogReader(log), sessionId, options.location, context.io.env));
  if (options.json) {
    printJson(context, events);
  } else {
    for (const line of formatTimeline(events, { color: context.color })) context.print(line);
  }
  return exitCodes.ok;
}

/**
 * `turnlog events <session> --follow`: the recorded events, then each new one as another process
 * appends it, until SIGINT (exit 0). With `--json`, one JSON object per line. On a LevelDB
 * directory it reads copies of the log and never takes its lock (see `followLogDirectory` and
 * docs/cli-run.md); on PostgreSQL it follows the log itself (`followStream`: LISTEN/NOTIFY, with
 * polling as the fallback), as every process may.
 */
async function followEvents(sessionId: string, options: { location: ResolvedLogLocation; json?: boolean; interval?: string }, context: CommandContext): Promise<number> {
  const intervalMs = options.interval === undefined ? 500 : Number(options.interval);
  if (!Number.isSafeInteger(intervalMs) || intervalMs < 10) throw new CliError(`--interval takes milliseconds, at least 10 (got ${options.interval})`, { exitCode: exitCodes.usage });
  const controller = new AbortController();
  const stop = () => controller.abort();
  process.on("SIGINT", stop);
  try {
    // The timeline is computed over every event seen (a tool's name comes from an earlier event),
    // and only the lines not printed yet are printed.
    const all: RecordedTurnlogEvent[] = [];
    let printed = 0;
    const print = (events: RecordedTurnlogEvent[]) => {
      if (options.json) {
        for (const event of events) context.print(jsonText(event));
        return;
      }
      all.push(...events);
      const lines = formatTimeline(all, { color: context.color });
      for (const line of lines.slice(printed)) context.print(line);
      printed = lines.length;
    };
    const { location } = options;
    if (isPostgresLocation(location)) {
      await withLog(location, {}, async (log) => {
        const recorded = await readSessionEvents(createLogReader(log), sessionId, location, context.io.env);
        print(recorded);
        for await (const event of followStream(log, sessionStream(sessionId), { after: recorded.at(-1)?.meta.streamPosition ?? 0, signal: controller.signal })) print([readEvent(event)]);
      });
      return exitCodes.ok;
    }
    const seen = await logDirectoryState(location.dir).catch(() => "");
    const recorded = await withCopyOfLogDirectory(location.dir, (log) => readSessionEvents(createLogReader(log), sessionId, location, context.io.env));
    print(recorded);
    await followLogDirectory(location.dir, sessionId, { after: recorded.at(-1)?.meta.streamPosition ?? 0, seen, signal: controller.signal, intervalMs, onEvents: print });
    return exitCodes.ok;
  } finally {
    process.off("SIGINT", stop);
  }
}
