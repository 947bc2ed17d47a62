import type { CommandContext } from "../cli-io.js";
import { exitCodes } from "../cli-error.js";
import { withDemoSession } from "../demo/open-demo-session.js";
import { answerCommands, commandLines, heldCallLines, outcomeLines, TimelinePrinter } from "../session-narrative.js";
import type { SendOutcome } from "../../runtime/provider-turn-loop.js";

/**
 * The exit code for how a turn loop ended (DESIGN.md §12).
 *
 * @example
 * exitCodeOf(await session.resume()); // 3 while calls are held
 */
export function exitCodeOf(outcome: SendOutcome): number {
  switch (outcome.status) {
    case "completed":
      return exitCodes.ok;
    case "awaiting-approval":
      return exitCodes.awaitingApproval;
    case "stopped":
      return exitCodes.stopped;
    case "failed":
      return exitCodes.failure;
  }
}

/**
 * `turnlog resume <session>`: continues the unfinished turn of a demo session — the calls a person
 * approved run, denied ones are reported to the model — with the demo script picking up where the
 * session left it. Prints the timeline from where it stood, how it ended, and any calls still
 * held. Exits 0 completed, 3 awaiting approval, 4 stopped, 1 failed.
 */
export async function resumeCommand(sessionId: string, options: { dir: string }, context: CommandContext): Promise<number> {
  return withDemoSession(options.dir, sessionId, context.io.env, "resume", async ({ runtime, session, recorded }) => {
    const { print, paint } = context;
    const outcome = await session.resume();
    const events = await runtime.events(sessionId);
    if (events.length === recorded.length) {
      print(paint("dim", `nothing to resume: session ${sessionId} has no unfinished turn that can go on`));
    } else {
      print(`${paint("accent", "resumed")} ${sessionId} ${paint("dim", `· its timeline from #${recorded.length + 1} on`)}`);
      print();
      new TimelinePrinter(print, paint, context.color, recorded.length).printNew(events);
    }
    print();
    for (const line of outcomeLines(outcome, session.state(), events.length, paint)) print(line);
    const lostSecrets = events.slice(recorded.length).filter((event) => event.type === "turn.tool.failed" && (event.data as { code?: unknown }).code === "arguments-unavailable");
    if (outcome.status === "completed" && lostSecrets.length > 0) {
      print();
      print(paint("dim", "(the demo's model is scripted: its answer was written for an uninterrupted run and does not read the results — a real model would be told which call did not run)"));
    }
    if (outcome.status === "awaiting-approval") {
      print();
      for (const pending of outcome.pendingApprovals) for (const line of heldCallLines(pending, paint)) print(line);
      print();
      print(paint("bold", outcome.pendingApprovals.length > 1 ? "Answer them, then continue the turn:" : "Answer it, then continue the turn:"));
      for (const line of commandLines(answerCommands(sessionId, outcome.pendingApprovals, options.dir, context.io.env), paint)) print(line);
    }
    return exitCodeOf(outcome);
  });
}
