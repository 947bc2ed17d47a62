import type { ResolvedLogLocation } from "../../log/log-location.js";
import type { SessionState } from "../../reader/index.js";
import type { PendingApproval } from "../../reader/index.js";
import type { SendOutcome } from "../../runtime/provider-turn-loop.js";
import type { Session } from "../../runtime/session.js";
import type { CliIo } from "../cli-io.js";
import { logFlag } from "../log-directory.js";
import { answerCommands, commandLines, heldCallLines, outcomeLines, type PrintLine } from "../session-narrative.js";
import type { Paint } from "../terminal-style.js";
import type { RunPresenter } from "./run-presenter.js";
import { askInTerminal } from "./terminal-question.js";
import { terminalSafe } from "../terminal-text.js";

/**
 * Who answers the calls the gate holds while `turnlog run` (or `resume` of a run session) drives a
 * turn:
 * - `yes`: `--yes`, every held call approved, the note saying so;
 * - `terminal`: the person at the terminal, call by call: yes, no, or always (this tool for the
 *   rest of the session);
 * - `leave`: nobody here (stdin is not a terminal): the turn is left awaiting approval, for
 *   `turnlog approve` / `deny` / `resume`.
 */
export type ApprovalAnswering =
  | { kind: "yes" }
  | { kind: "terminal"; input: NodeJS.ReadableStream; output: NodeJS.WritableStream }
  | { kind: "leave" };

/** What {@link driveSession} needs. */
export interface DriveOptions {
  session: Session;
  presenter: RunPresenter;
  answering: ApprovalAnswering;
  /** Who the log says answered (`$USER`, else `cli`). */
  by: string;
  signal: AbortSignal;
  paint: Paint;
}

/**
 * Runs `start` (a `send` or a `resume`), then, while the turn waits for approvals that can be
 * answered here, answers them and resumes the turn — until it completes, stops, fails, or is left
 * awaiting approval (nobody to answer, or the person stopped answering).
 *
 * @example
 * const outcome = await driveSession(() => session.send(prompt, { signal }), { session, presenter, answering: { kind: "yes" }, by: "alice", signal, paint });
 */
export async function driveSession(start: () => Promise<SendOutcome>, options: DriveOptions): Promise<SendOutcome> {
  let outcome = await start();
  while (outcome.status === "awaiting-approval" && options.answering.kind !== "leave" && !options.signal.aborted) {
    const answeredAll = await answerHeldCalls(outcome.pendingApprovals, options);
    if (!answeredAll) break;
    outcome = await options.session.resume({ signal: options.signal });
  }
  options.presenter.stop();
  return outcome;
}

/** Answers each held call; false when the person stopped answering (the rest stay held). */
async function answerHeldCalls(pending: readonly PendingApproval[], options: DriveOptions): Promise<boolean> {
  const { session, answering, by } = options;
  // "always" covers the tool's later calls via the session; its calls already held in this batch are approved here.
  const alwaysTools = new Set<string>();
  for (const call of pending) {
    // Bound to what was shown: a changed call is not covered by this answer.
    const reviewed = { by, fingerprint: call.fingerprint };
    if (answering.kind === "yes") {
      await session.approve(call.callId, { ...reviewed, note: "approved by --yes (turnlog run)" });
      continue;
    }
    if (answering.kind === "leave") return false;
    if (alwaysTools.has(call.tool)) {
      await session.approve(call.callId, { ...reviewed, note: `covered by "always" for ${call.tool} at the terminal` });
      continue;
    }
    options.presenter.stop();
    const answer = await askAbout(call, answering, options.paint);
    if (answer === undefined) return false;
    if (answer === "no") {
      await session.deny(call.callId, { ...reviewed, note: "denied at the terminal" });
    } else {
      await session.approve(call.callId, { ...reviewed, note: "approved at the terminal", ...(answer === "always" ? { scope: "tool" as const } : {}) });
      if (answer === "always") alwaysTools.add(call.tool);
    }
  }
  return true;
}

const answers: Record<string, "yes" | "no" | "always"> = { y: "yes", yes: "yes", n: "no", no: "no", a: "always", always: "always" };

/** Asks until the answer is one of yes, no, always — or input ends (`undefined`). */
async function askAbout(held: PendingApproval, terminal: { input: NodeJS.ReadableStream; output: NodeJS.WritableStream }, paint: Paint): Promise<"yes" | "no" | "always" | undefined> {
  // The tool's name and the call's ID come from the model: shown escaped (docs/security.md).
  const call = terminalSafe(held);
  const prompt = `  ${paint("warn", "?")} approve ${paint("bold", call.tool)} ${paint("dim", call.callId)}  ${paint("bold", "[y]es")} · ${paint("bold", "[n]o")} · ${paint("bold", "[a]lways")} ${paint("dim", `(${call.tool} for the rest of the session; Ctrl-D leaves it held)`)} › `;
  for (;;) {
    const line = await askInTerminal(terminal.input, terminal.output, prompt);
    if (line === undefined) return undefined;
    const answer = answers[line.trim().toLowerCase()];
    if (answer !== undefined) return answer;
  }
}

/** Where a run's closing lines point. */
export interface RunEndingContext {
  sessionId: string;
  location: ResolvedLogLocation;
  env: NodeJS.ProcessEnv;
  print: PrintLine;
  paint: Paint;
}

/**
 * The closing lines of `turnlog run` and of `resume` for a run session: how the message ended (the
 * final text was already streamed), the calls still held and the commands that answer them, the
 * session ID, and the commands that replay, audit and show it.
 *
 * @example
 * printRunEnding(outcome, session.state(), events.length, { sessionId, location, env, print, paint });
 */
export function printRunEnding(outcome: SendOutcome, state: SessionState, eventCount: number, context: RunEndingContext): void {
  const { sessionId, location, env, print, paint } = context;
  print();
  const lines = outcomeLines(outcome, state, eventCount, paint);
  // The answer itself was streamed as it came.
  for (const line of outcome.status === "completed" ? lines.slice(0, 1) : lines) print(line);
  if (outcome.status === "awaiting-approval") {
    print();
    for (const pending of outcome.pendingApprovals) for (const line of heldCallLines(pending, paint)) print(line);
    print();
    print(paint("bold", outcome.pendingApprovals.length > 1 ? "The turn waits in the log. Answer them, then continue it:" : "The turn waits in the log. Answer it, then continue it:"));
    for (const line of commandLines(answerCommands(sessionId, outcome.pendingApprovals, location, env), paint, location, env)) print(line);
  }
  const flag = logFlag(location, env);
  print();
  print(`${paint("bold", "session")} ${sessionId}`);
  const commands: [string, string][] = [
    [`npx turnlog replay ${sessionId}${flag}`, "recompute every decision and compare with the log"],
    [`npx turnlog audit ${sessionId}${flag}`, "each tool call: decision, rule, who approved, outcome"],
    [`npx turnlog show ${sessionId}${flag}`, "turn by turn: each call's decision, outcome and duration"],
  ];
  if (outcome.status === "needs-resume") commands.push([`npx turnlog resume ${sessionId}${flag}`, "continue the unfinished turn"]);
  else if (outcome.status !== "awaiting-approval") commands.push([`npx turnlog run --session ${sessionId}${flag} "<message>"`, "say more in the same session"]);
  for (const line of commandLines(commands, paint, location, env)) print(line);
}

/**
 * Who answers held calls: `--yes` approves them all; a person at a terminal (stdin and stdout both
 * terminals) is asked; otherwise nobody, and the turn is left awaiting approval.
 *
 * @example
 * answeringFor(context.io, options.yes === true); // { kind: "leave" } when piped
 */
export function answeringFor(io: CliIo, yes: boolean): ApprovalAnswering {
  if (yes) return { kind: "yes" };
  if (io.stdin?.isTTY === true && io.stdout.isTTY === true) return { kind: "terminal", input: io.stdin, output: io.stdout as unknown as NodeJS.WritableStream };
  return { kind: "leave" };
}

const cancellingLine = "  ■ cancelling: the turn stops once the running step ends (Ctrl-C again quits at once)";

/**
 * Ctrl-C cancels the turn instead of killing the process: the signal reaches the runtime, the
 * running step ends, and the turn is recorded as stopped (`cancelled`, exit 4). A second Ctrl-C
 * quits at once; an unfinished step is then recovered the next time the session is opened.
 *
 * @example
 * const interrupt = cancelOnInterrupt(presenter);
 * try { await session.send(text, { signal: interrupt.signal }); } finally { interrupt.dispose(); }
 */
export function cancelOnInterrupt(presenter: RunPresenter): { signal: AbortSignal; dispose(): void } {
  const controller = new AbortController();
  const onInterrupt = () => {
    if (controller.signal.aborted) process.exit(130);
    controller.abort();
    presenter.line(cancellingLine);
  };
  process.on("SIGINT", onInterrupt);
  return { signal: controller.signal, dispose: () => process.off("SIGINT", onInterrupt) };
}
