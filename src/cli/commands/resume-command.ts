import type { ResolvedLogLocation } from "../../log/log-location.js";
import { terminalText } from "../terminal-text.js";
import { approverName, type CommandContext } from "../cli-io.js";
import { exitCodes } from "../../errors/cli-error.js";
import { withRecordedSession, type OpenedSession } from "../open-recorded-session.js";
import { answeringFor, cancelOnInterrupt, driveSession, printRunEnding } from "../run/run-driver.js";
import { RunPresenter } from "../run/run-presenter.js";
import { answerCommands, commandLines, heldCallLines, outcomeLines, TimelinePrinter } from "../session-narrative.js";
import type { SendOutcome } from "../../runtime/provider-turn-loop.js";
import { readEvent, sessionStream } from "../../reader/index.js";

/**
 * The exit code for how a turn loop ended (docs/cli-run.md#exit-codes).
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
    // A turn left unfinished (it owes work that a later `resume` does) ended this command as a stop does.
    case "needs-resume":
      return exitCodes.stopped;
    case "failed":
      return exitCodes.failure;
    // Nothing was asked yet: nothing to continue, and nothing went wrong.
    case "idle":
      return exitCodes.ok;
  }
}

/**
 * `turnlog resume <session>`: continues the unfinished turn of a session the CLI recorded — the
 * calls a person approved run, denied ones are reported to the model. A demo session continues
 * with the demo script where it left it, and prints its timeline from there; a `turnlog run`
 * session calls its recorded provider again and shows the turn as `run` does (on a terminal, a
 * call held again is asked about there). Prints how it ended and any calls still held. Exits 0
 * completed, 3 awaiting approval, 4 stopped, 1 failed.
 */
export async function resumeCommand(sessionId: string, options: { location: ResolvedLogLocation }, context: CommandContext): Promise<number> {
  const presenter = new RunPresenter({ out: context.io.stdout, paint: context.paint, live: context.io.stdout.isTTY === true, modelLabel: "the model" });
  return withRecordedSession(options.location, sessionId, { env: context.io.env, command: "resume", onDelta: presenter.onDelta, onAttemptDiscarded: presenter.onAttemptDiscarded }, async (opened) => {
    if (opened.run !== undefined) {
      if (opened.redact !== undefined) presenter.redactWith(opened.redact);
      return resumeRunSession(opened, presenter, options.location, context);
    }
    const { runtime, session, recorded } = opened;
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
    const lostSecrets = events.slice(recorded.length).filter((event) => event.type === "turn.tool.failed" && event.data.code === "arguments-unavailable");
    if (outcome.status === "completed" && lostSecrets.length > 0) {
      print();
      print(paint("dim", "(the demo's model is scripted: its answer was written for an uninterrupted run and does not read the results — a real model would be told which call did not run)"));
    }
    if (outcome.status === "awaiting-approval") {
      print();
      for (const pending of outcome.pendingApprovals) for (const line of heldCallLines(pending, paint)) print(line);
      print();
      print(paint("bold", outcome.pendingApprovals.length > 1 ? "Answer them, then continue the turn:" : "Answer it, then continue the turn:"));
      for (const line of commandLines(answerCommands(sessionId, outcome.pendingApprovals, options.location, context.io.env), paint, options.location, context.io.env)) print(line);
    }
    return exitCodeOf(outcome);
  });
}

/** The run-session half of `turnlog resume`: the turn goes on against the recorded provider, shown live. */
async function resumeRunSession(opened: OpenedSession, presenter: RunPresenter, location: ResolvedLogLocation, context: CommandContext): Promise<number> {
  const { runtime, session, recorded, run } = opened;
  const { print, paint, io } = context;
  const sessionId = session.id;
  presenter.modelLabel = run?.model ?? "the model";
  presenter.remember(recorded);
  print(`${paint("accent", "resumed")} ${sessionId} ${paint("dim", `· ${terminalText(session.state().provider?.id ?? run?.model ?? "")} · what happens from here on`)}`);
  const unsubscribe = runtime.log.subscribe((event) => presenter.onEvent(readEvent(event)), { stream: sessionStream(sessionId) });
  const interrupt = cancelOnInterrupt(presenter);
  let outcome: SendOutcome;
  try {
    outcome = await driveSession(() => session.resume({ signal: interrupt.signal }), {
      session,
      presenter,
      answering: answeringFor(io, false),
      by: approverName(io.env),
      signal: interrupt.signal,
      paint,
    });
  } finally {
    interrupt.dispose();
    unsubscribe();
    presenter.stop();
  }
  const events = await runtime.events(sessionId);
  if (events.length === recorded.length) print(paint("dim", `nothing to resume: session ${sessionId} has no unfinished turn that can go on`));
  printRunEnding(outcome, session.state(), events.length, { sessionId, location, env: io.env, print, paint });
  return exitCodeOf(outcome);
}
