import type { ResolvedLogLocation } from "../../log/log-location.js";
import { terminalText } from "../terminal-text.js";
import { SessionStateError } from "../../errors/session-state-error.js";
import { UnknownSessionError } from "../../errors/unknown-session-error.js";
import { LogNotFoundError } from "../../errors/log-not-found-error.js";
import { OwnerChannelError } from "../../errors/owner-channel-error.js";
import { answerHeldCall, createLogReader, type HeldCallAnswer, type RecordedAnswer } from "../../reader/index.js";
import { userSeals } from "../../log/seal/user-seals.js";
import type { ToolDefinition } from "../../tools/define-tool.js";
import { workspaceTools } from "../../tools/workspace/workspace-tools.js";
import { describeThrown, isRecord } from "../../util/json-value.js";
import type { CommandContext } from "../cli-io.js";
import { CliError, exitCodes } from "../../errors/cli-error.js";
import { describeLocation, logFlag, withLog } from "../log-directory.js";
import { demoTools, notADemoSession } from "../demo/demo-runtime.js";
import { findRunRecord } from "../run/run-record.js";
import { answerCommands, commandLines, heldCallLines } from "../session-narrative.js";
import { preview } from "../timeline.js";

/** Options of `turnlog approve` and `turnlog deny`. */
export interface AnswerOptions {
  location: ResolvedLogLocation;
  by: string;
  note?: string;
  /** `approve` only: `tool` also approves the tool for the rest of the session. */
  scope?: "call" | "tool";
  /** `approve` only: edited arguments, as JSON text (an object). */
  arguments?: string;
}

/**
 * `turnlog approve <session> <callId>`: approves a held call of any session — a demo's, a `turnlog
 * run` session's or a host's — on either backend, as `--by` (`answerHeldCall`: on a LevelDB log
 * another process holds, that process records it). Only the answer is logged; whoever owns the
 * session continues the turn (`turnlog resume` for the CLI's own). Exits 1, in one line, for an
 * unknown session or a call that is not awaiting approval; 2 for `--arguments` that are not a JSON object.
 */
export function approveCommand(sessionId: string, callId: string, options: AnswerOptions, context: CommandContext): Promise<number> {
  return answer(sessionId, callId, options, context, true);
}

/** `turnlog deny <session> <callId>`: denies a held call; after `resume` the model is told it did not run. */
export function denyCommand(sessionId: string, callId: string, options: AnswerOptions, context: CommandContext): Promise<number> {
  return answer(sessionId, callId, options, context, false);
}

async function answer(sessionId: string, callId: string, options: AnswerOptions, context: CommandContext, granted: boolean): Promise<number> {
  if (options.by.trim() === "") throw new CliError("--by needs a name: who answers", { exitCode: exitCodes.usage });
  const edited = granted && options.arguments !== undefined ? editedArguments(options.arguments) : undefined;
  const { location } = options;
  const env = context.io.env;
  const answered = { by: options.by, ...(options.note !== undefined ? { note: options.note } : {}) };
  const given: HeldCallAnswer = granted
    ? { decision: "approve", ...answered, ...(options.scope !== undefined ? { scope: options.scope } : {}), ...(edited !== undefined ? { arguments: edited } : {}) }
    : { decision: "deny", ...answered };
  let recorded: RecordedAnswer;
  try {
    // Recorded here (a log nobody holds, or PostgreSQL), the answer is sealed like the rest of what the CLI appends;
    // the holder of a LevelDB log records and seals it itself.
    const seals = await userSeals(location, env);
    const tools = granted && options.scope === "tool" ? await commandToolsOf(location, sessionId) : undefined;
    recorded = await answerHeldCall(location, sessionId, callId, given, { seals, ...(tools !== undefined ? { tools } : {}) });
  } catch (error) {
    if (SessionStateError.isInstance(error)) {
      throw new CliError(`${error.message} — "npx turnlog show ${sessionId}${logFlag(location, env)}" lists the held calls`, { cause: error });
    }
    if (UnknownSessionError.isInstance(error)) {
      throw new CliError(`no session "${sessionId}" in ${describeLocation(location)} — "npx turnlog sessions${logFlag(location, env)}" lists them`, { cause: error });
    }
    if (LogNotFoundError.isInstance(error)) throw new CliError(`no log at ${describeLocation(location)} — run "npx turnlog demo" first or pass --log`, { cause: error });
    if (OwnerChannelError.isInstance(error)) throw new CliError(error.message, { cause: error });
    throw error;
  }

  const { print, paint } = context;
  // The tool's name comes from the model: printed escaped (docs/security.md).
  const tool = terminalText(recorded.tool === "" ? "call" : recorded.tool);
  const forTool = granted && options.scope === "tool" ? `, and ${tool} for the rest of the session` : "";
  const withEdits = edited !== undefined ? " with edited arguments" : "";
  const note = options.note !== undefined ? paint("dim", ` · ${terminalText(preview(options.note, 80))}`) : "";
  const by = terminalText(options.by);
  print(granted ? `${paint("good", "✓ approved")} ${tool} ${terminalText(callId)} by ${by}${withEdits}${forTool}${note}` : `${paint("bad", "✗ denied")} ${tool} ${terminalText(callId)} by ${by}${note}`);
  print(paint("dim", granted ? "  logged; the call runs when the turn is resumed" : "  logged; once the turn is resumed, the model is told the call did not run"));

  const stillHeld = recorded.stillHeld;
  print();
  if (stillHeld.length > 0) {
    for (const pending of stillHeld) for (const line of heldCallLines(pending, paint)) print(line);
    print();
    print(paint("bold", stillHeld.length > 1 ? "Answer them, then continue the turn:" : "Answer it, then continue the turn:"));
    for (const line of commandLines(answerCommands(sessionId, stillHeld, location, env), paint, location, env)) print(line);
  } else {
    print(paint("bold", "Every held call is answered. Continue the turn:"));
    for (const line of commandLines(answerCommands(sessionId, [], location, env), paint, location, env)) print(line);
  }
  print(paint("dim", "  (a host's session is continued by its host: autoResume, waitForAnswers, or a worker)"));
  return exitCodes.ok;
}

/** `--arguments`: a JSON object, else a usage mistake. */
function editedArguments(text: string): Record<string, unknown> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    throw new CliError(`--arguments must be a JSON object: ${describeThrown(error)}`, { exitCode: exitCodes.usage, cause: error });
  }
  if (!isRecord(parsed)) throw new CliError("--arguments must be a JSON object, e.g. '{\"version\":\"v3\"}'", { exitCode: exitCodes.usage });
  return parsed;
}

/**
 * The tools a `tool`-scope approval of a command tool needs (its command is computed by the tool's
 * own `command()`): the CLI's own, for a session `turnlog demo` or `turnlog run` recorded. Another
 * program's session gets none — its host records the answer when it holds the log; otherwise the
 * approval is refused in one line. The log is read as the read commands read it (a copy when held).
 */
async function commandToolsOf(location: ResolvedLogLocation, sessionId: string): Promise<ToolDefinition[] | undefined> {
  return withLog(location, {}, async (log) => {
    const recorded = await createLogReader(log).events(sessionId).catch(() => undefined);
    if (recorded === undefined) return undefined;
    if (notADemoSession(recorded) === undefined) return demoTools();
    const run = await findRunRecord(log, sessionId, recorded);
    const root = (recorded.find((event) => event.type === "session.started")?.data as { policy?: { workspace?: { root?: string } } } | undefined)?.policy?.workspace?.root;
    return run !== undefined && root !== undefined ? workspaceTools({ root }) : undefined;
  }).catch(() => undefined);
}
