import { isPostgresLocation, type ResolvedLogLocation } from "../../log/log-location.js";
import { isValidSessionId } from "../../reader/index.js";
import type { CommandContext } from "../cli-io.js";
import { untilInterrupted } from "../cli-io.js";
import { CliError, exitCodes } from "../../errors/cli-error.js";
import { describeLocation, logExists, withLog } from "../log-directory.js";
import { forSession } from "../session-events.js";
import { loadViewAssets } from "../view/view-assets.js";
import { startViewServer } from "../view/view-server.js";
import { directoryViewSource, postgresViewSource, type ViewSource } from "../view/view-source.js";
import { directoryAnswers, postgresAnswers, type ViewAnswers } from "../view/view-answers.js";
import { userSeals } from "../../log/seal/user-seals.js";
import { describeThrown } from "../../util/json-value.js";

/** Options of `turnlog view`. */
export interface ViewOptions {
  location: ResolvedLogLocation;
  port?: string;
  interval?: string;
}

/**
 * `turnlog view [session]`: serves a page showing the log's sessions (and `session`'s held calls
 * with Approve / Deny / Edit, timeline, turn machine, audit, state at any position and replay
 * verdict) on 127.0.0.1, prints its URL with a one-time token, and serves until SIGINT (exit 0).
 * It reads without taking a LevelDB log's lock (from copies, as `events --follow` reads it); a
 * PostgreSQL log is opened directly, as every reader may. An answer is the one thing it writes:
 * appended directly on PostgreSQL, and on LevelDB recorded by the process that holds the log (or,
 * when none does, by opening the log for that one append). docs/observability.md ("Browser view")
 * says what the page shows and how it is kept safe.
 */
export async function viewCommand(sessionId: string | undefined, options: ViewOptions, context: CommandContext): Promise<number> {
  const port = options.port === undefined ? 0 : Number(options.port);
  if (!Number.isSafeInteger(port) || port < 0 || port > 65_535) throw new CliError(`--port takes a TCP port, 1–65535 (or 0: any free one; got ${options.port})`, { exitCode: exitCodes.usage });
  const intervalMs = options.interval === undefined ? 500 : Number(options.interval);
  if (!Number.isSafeInteger(intervalMs) || intervalMs < 10) throw new CliError(`--interval takes milliseconds, at least 10 (got ${options.interval})`, { exitCode: exitCodes.usage });
  if (sessionId !== undefined && !isValidSessionId(sessionId)) throw new CliError(`"${sessionId}" is not a session ID`, { exitCode: exitCodes.usage });
  const assets = await loadViewAssets();
  const { location } = options;
  if (isPostgresLocation(location)) {
    return withLog(location, {}, (log) => serve(postgresViewSource(log), sessionId, { port, assets, location, answers: postgresAnswers(log, () => userSeals(location, context.io.env)) }, context));
  }
  if (!logExists(location.dir)) throw new CliError(`no log at ${location.dir} — run "npx turnlog demo" first or pass --log`);
  let source: ViewSource;
  try {
    source = await directoryViewSource(location.dir, { intervalMs });
  } catch (error) {
    throw new CliError(`cannot read the log at ${location.dir}: ${describeThrown(error)}`, { cause: error });
  }
  return serve(source, sessionId, { port, assets, location, answers: directoryAnswers(location.dir, () => userSeals(location, context.io.env)) }, context);
}

async function serve(
  source: ViewSource,
  sessionId: string | undefined,
  settings: { port: number; assets: Awaited<ReturnType<typeof loadViewAssets>>; location: ResolvedLogLocation; answers: ViewAnswers },
  context: CommandContext,
): Promise<number> {
  try {
    // A session named on the command line must exist: a typo is one line, not an empty page.
    if (sessionId !== undefined) await source.read((reader) => forSession(reader.events(sessionId, { from: 1, to: 1 }), sessionId, settings.location, context.io.env));
    let server;
    try {
      server = await startViewServer({ source, assets: settings.assets, port: settings.port, answers: settings.answers });
    } catch (error) {
      const code = (error as { code?: string }).code;
      if (code === "EADDRINUSE") throw new CliError(`port ${settings.port} on 127.0.0.1 is in use — pick another with --port, or leave it out for any free one`, { cause: error });
      if (code === "EACCES") throw new CliError(`port ${settings.port} on 127.0.0.1 is not allowed for this user — pick another with --port`, { cause: error });
      throw error;
    }
    const url = sessionId === undefined ? server.url : `${server.url}#/session/${encodeURIComponent(sessionId)}`;
    // Listening for Ctrl-C before the URL is out: whoever reads the URL may stop the server at once.
    const interrupted = untilInterrupted();
    context.print(`turnlog view — ${describeLocation(settings.location)}, on 127.0.0.1 (Ctrl-C stops it); answers to held calls are ${settings.answers.description}`);
    context.print(`  ${url}`);
    context.print(context.paint("dim", "  the token in the URL is this server's only key: open the URL in your browser, and do not share it"));
    await interrupted;
    await server.close();
    return exitCodes.ok;
  } finally {
    await source.close();
  }
}
