import { createLogReader } from "../../reader/index.js";
import { printJson, type CommandContext } from "../cli-io.js";
import { CliError, exitCodes } from "../cli-error.js";
import { followLogDirectory, logDirectoryState } from "../follow-log-directory.js";
import { readOnly, withCopyOfLogDirectory, withLog } from "../log-directory.js";
import { readSessionEvents } from "../session-events.js";
import { formatTimeline } from "../timeline.js";
import type { RecordedEvent } from "../../log/event-log.js";

/** `turnlog events <session>`: the timeline, or the recorded events as JSON. */
export async function eventsCommand(sessionId: string, options: { dir: string; json?: boolean; follow?: boolean; interval?: string }, context: CommandContext): Promise<number> {
  if (options.follow) return followEvents(sessionId, options, context);
  const events = await withLog(options.dir, readOnly(context.io), (log) => readSessionEvents(createLogReader(log), sessionId, options.dir, context.io.env));
  if (options.json) {
    printJson(context, events);
  } else {
    for (const line of formatTimeline(events, { color: context.color })) context.print(line);
  }
  return exitCodes.ok;
}

/**
 * `turnlog events <session> --follow`: the recorded events, then each new one as another process
 * appends it, until SIGINT (exit 0). With `--json`, one JSON object per line. It reads copies of
 * the log and never takes its lock (see `followLogDirectory` and docs/cli-run.md).
 */
async function followEvents(sessionId: string, options: { dir: string; json?: boolean; interval?: string }, context: CommandContext): Promise<number> {
  const intervalMs = options.interval === undefined ? 500 : Number(options.interval);
  if (!Number.isSafeInteger(intervalMs) || intervalMs < 10) throw new CliError(`--interval takes milliseconds, at least 10 (got ${options.interval})`, { exitCode: exitCodes.usage });
  const controller = new AbortController();
  const stop = () => controller.abort();
  process.on("SIGINT", stop);
  try {
    const seen = await logDirectoryState(options.dir).catch(() => "");
    const recorded = await withCopyOfLogDirectory(options.dir, (log) => readSessionEvents(createLogReader(log), sessionId, options.dir, context.io.env));
    // The timeline is computed over every event seen (a tool's name comes from an earlier event),
    // and only the lines not printed yet are printed.
    const all: RecordedEvent[] = [];
    let printed = 0;
    const print = (events: RecordedEvent[]) => {
      if (options.json) {
        for (const event of events) context.print(JSON.stringify(event));
        return;
      }
      all.push(...events);
      const lines = formatTimeline(all, { color: context.color });
      for (const line of lines.slice(printed)) context.print(line);
      printed = lines.length;
    };
    print(recorded);
    await followLogDirectory(options.dir, sessionId, { after: recorded.at(-1)?.meta.streamPosition ?? 0, seen, signal: controller.signal, intervalMs, onEvents: print });
    return exitCodes.ok;
  } finally {
    process.off("SIGINT", stop);
  }
}
