import type { ResolvedLogLocation } from "../../log/log-location.js";
import { terminalText } from "../terminal-text.js";
import { SessionStateError } from "../../errors/session-state-error.js";
import { pendingApprovals } from "../../reader/index.js";
import { outcomeOf } from "../../runtime/provider-turn-loop.js";
import type { CommandContext } from "../cli-io.js";
import { CliError, exitCodes } from "../../errors/cli-error.js";
import { logFlag } from "../log-directory.js";
import { withRecordedSession } from "../open-recorded-session.js";
import { answerCommands, commandLines, heldCallLines } from "../session-narrative.js";
import { preview } from "../timeline.js";

/** Options of `turnlog approve` and `turnlog deny`. */
export interface AnswerOptions {
  location: ResolvedLogLocation;
  by: string;
  note?: string;
  /** `approve` only: `tool` also approves the tool for the rest of the session. */
  scope?: "call" | "tool";
}

/**
 * `turnlog approve <session> <callId>`: approves a call a demo or `turnlog run` session holds, as
 * `--by`. Only the answer is logged; `turnlog resume` then runs the call and continues the turn.
 * Exits 1, in one line, for an unknown session or a call that is not awaiting approval.
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
  const command = granted ? "approve" : "deny";
  return withRecordedSession(options.location, sessionId, { env: context.io.env, command }, async ({ session }) => {
    const held = pendingApprovals(session.state()).find((call) => call.callId === callId);
    const answer = { by: options.by, ...(options.note !== undefined ? { note: options.note } : {}), ...(granted && options.scope !== undefined ? { scope: options.scope } : {}) };
    try {
      if (granted) await session.approve(callId, answer);
      else await session.deny(callId, answer);
    } catch (error) {
      if (SessionStateError.isInstance(error)) {
        throw new CliError(`${error.message} — "npx turnlog show ${sessionId}${logFlag(options.location, context.io.env)}" lists the held calls`, { cause: error });
      }
      throw error;
    }

    const { print, paint } = context;
    // The tool's name comes from the model: printed escaped (docs/security.md).
    const tool = terminalText(held?.name ?? "call");
    const forTool = granted && options.scope === "tool" ? `, and ${tool} for the rest of the session` : "";
    const note = options.note !== undefined ? paint("dim", ` · ${terminalText(preview(options.note, 80))}`) : "";
    const by = terminalText(options.by);
    print(granted ? `${paint("good", "✓ approved")} ${tool} ${terminalText(callId)} by ${by}${forTool}${note}` : `${paint("bad", "✗ denied")} ${tool} ${terminalText(callId)} by ${by}${note}`);
    print(paint("dim", granted ? "  logged; the call runs when the turn is resumed" : "  logged; once the turn is resumed, the model is told the call did not run"));

    const stillHeld = outcomeOf(session.state()).pendingApprovals;
    print();
    if (stillHeld.length > 0) {
      for (const pending of stillHeld) for (const line of heldCallLines(pending, paint)) print(line);
      print();
      print(paint("bold", stillHeld.length > 1 ? "Answer them, then continue the turn:" : "Answer it, then continue the turn:"));
      for (const line of commandLines(answerCommands(sessionId, stillHeld, options.location, context.io.env), paint, options.location, context.io.env)) print(line);
    } else {
      print(paint("bold", "Every held call is answered. Continue the turn:"));
      for (const line of commandLines(answerCommands(sessionId, [], options.location, context.io.env), paint, options.location, context.io.env)) print(line);
    }
    return exitCodes.ok;
  });
}
