import type { ResolvedLogLocation } from "../log/log-location.js";
import type { RecordedTurnlogEvent } from "../log/event-log.js";
import type { SessionState } from "../reader/index.js";
import type { PendingApproval } from "../reader/index.js";
import type { SendOutcome } from "../runtime/provider-turn-loop.js";
import { concurrentRuns, describeConcurrentRun } from "./concurrent-runs.js";
import { logFlag, passwordNote } from "./log-directory.js";
import type { Paint } from "./terminal-style.js";
import { formatTimeline, plural, truncate } from "./timeline.js";
import { terminalSafe } from "./terminal-text.js";

/** Writes one line. */
export type PrintLine = (line?: string) => void;

/**
 * Prints a session's timeline in parts as the session grows (the demo and `resume` print one part
 * after each pause), each part followed by what it shows that a reader could miss: calls that ran
 * side by side, calls that could not run because their secret arguments were gone.
 *
 * @example
 * const timeline = new TimelinePrinter(print, paint, false);
 * timeline.printNew(await runtime.events(id)); // everything so far
 * timeline.printNew(await runtime.events(id)); // only what was appended since
 */
export class TimelinePrinter {
  #printed: number;

  /** `alreadyPrinted`: how many of the session's first events count as shown (`resume` shows only the new ones). */
  constructor(
    private readonly print: PrintLine,
    private readonly paint: Paint,
    private readonly color: boolean,
    alreadyPrinted = 0,
  ) {
    this.#printed = alreadyPrinted;
  }

  /** How many events have been shown. */
  get printed(): number {
    return this.#printed;
  }

  /**
   * Prints the lines of the events not shown yet, each followed by what it completes: `↳ read_file
   * and list_dir ran side by side (group 0)` after the event that ended the last of them.
   */
  printNew(events: readonly RecordedTurnlogEvent[]): void {
    const from = this.#printed;
    const notes = narrativeNotes(terminalSafe(events));
    // Formatting every event keeps the offsets and the column widths of all parts the same.
    const lines = formatTimeline(events, { color: this.color });
    for (let index = from; index < events.length; index += 1) {
      this.print(`  ${lines[index] ?? ""}`);
      const position = events[index]?.meta.streamPosition ?? 0;
      for (const note of notes.get(position) ?? []) this.print(`  ${this.paint("accent", "↳")} ${note}`);
    }
    this.#printed = Math.max(from, events.length);
  }
}

/**
 * What a reader of a timeline could miss, by the stream position of the event after which to say
 * it: calls that ran side by side, and calls that could not run because their secret arguments
 * were gone.
 *
 * @example
 * narrativeNotes(events).get(13); // ["read_file and list_dir ran side by side (group 0)"]
 */
export function narrativeNotes(events: readonly RecordedTurnlogEvent[]): Map<number, string[]> {
  const notes = new Map<number, string[]>();
  const add = (position: number, note: string) => notes.set(position, [...(notes.get(position) ?? []), note]);
  const lastPosition = events.at(-1)?.meta.streamPosition ?? 0;
  for (const run of concurrentRuns(events)) add(run.endPosition ?? lastPosition, describeConcurrentRun(run));
  const toolOf = new Map<string, string>();
  for (const event of events) {
    if (event.type === "turn.tool.started") toolOf.set(event.data.callId, event.data.tool);
    if (event.type === "turn.tool.failed" && event.data.code === "arguments-unavailable") {
      const { callId } = event.data;
      add(
        event.meta.streamPosition,
        `${toolOf.get(callId) ?? "call"} ${callId} could not run: its arguments held a secret, which only the process that received them kept, in memory — the log has the redacted form`,
      );
    }
  }
  return notes;
}

/**
 * `⏸  held for approval: write_file call_save_summary · risk workspace-write · rule mode:ask` and its input.
 *
 * @example
 * for (const pending of outcome.pendingApprovals) for (const line of heldCallLines(pending, paint)) print(line);
 */
export function heldCallLines(held: PendingApproval, paint: Paint): string[] {
  const pending = terminalSafe(held);
  return [
    `${paint("warn", "⏸  held for approval:")} ${pending.tool} ${paint("dim", `${pending.callId} · risk ${pending.riskClass ?? "unknown"} · rule ${pending.rule}`)}`,
    `   ${paint("dim", "input")} ${truncate(JSON.stringify(pending.input) ?? "", 100)}`,
  ];
}

/**
 * Commands with a comment each, the comments aligned.
 *
 * @example
 * commandLines([["npx turnlog verify", "check the hash chains"]], paint); // ["  npx turnlog verify  # check the hash chains"]
 */
export function commandLines(commands: readonly (readonly [command: string, what: string])[], paint: Paint, location?: ResolvedLogLocation, env?: NodeJS.ProcessEnv): string[] {
  const width = Math.max(...commands.map(([command]) => command.length));
  const lines = commands.map(([command, what]) => `  ${command.padEnd(width)}  ${paint("dim", `# ${what}`)}`);
  // A --log URL is printed without its password: say where libpq finds it.
  const note = location === undefined ? undefined : passwordNote(location, env);
  return note === undefined ? lines : [...lines, `  ${paint("dim", note)}`];
}

/**
 * The commands that answer held calls and then continue the turn, ready to paste (with `--dir` or
 * `--log` when the log is not the default one).
 *
 * @example
 * answerCommands("demo-1", outcome.pendingApprovals, { dir: ".turnlog" }, process.env);
 * // [["npx turnlog approve demo-1 call_save_summary", "let write_file run …"], [… deny …], ["npx turnlog resume demo-1", "then continue the turn"]]
 */
export function answerCommands(sessionId: string, held: readonly PendingApproval[], location: ResolvedLogLocation, env: NodeJS.ProcessEnv): [string, string][] {
  // A call ID and a tool name come from the model: printed escaped (docs/security.md).
  const pending = terminalSafe(held);
  const flag = logFlag(location, env);
  const commands: [string, string][] = [];
  for (const call of pending) {
    commands.push([`npx turnlog approve ${sessionId} ${call.callId}${flag}`, `let ${call.tool} run (options: --by, --note, --scope tool)`]);
    commands.push([`npx turnlog deny ${sessionId} ${call.callId}${flag}`, "or refuse it: the model is told it did not run"]);
  }
  const resume = pending.length === 0 ? "run what was approved and continue the turn" : pending.length > 1 ? "once every held call is answered, continue the turn" : "then continue the turn";
  commands.push([`npx turnlog resume ${sessionId}${flag}`, resume]);
  return commands;
}

/**
 * How a user message ended, in a line or two: the outcome, the counts that explain it, and the
 * final answer when there is one.
 *
 * @example
 * outcomeLines(outcome, session.state(), events.length, paint);
 * // ["■ stopped: budget:max-iterations — the loop ends itself; every call is still logged", "  4 provider iterations and …"]
 */
export function outcomeLines(ended: SendOutcome, recordedState: SessionState, eventCount: number, paint: Paint): string[] {
  // The final answer and the reasons come from the model and the log: printed escaped (docs/security.md).
  const outcome = terminalSafe(ended);
  const state = terminalSafe(recordedState);
  const logged = `${plural(eventCount, "event")}, durably logged`;
  switch (outcome.status) {
    case "completed":
      return [`${paint("good", "✓ completed")} ${paint("dim", `· ${callFacts(state)} · ${logged}`)}`, "", `${paint("bold", "assistant ›")} ${outcome.text ?? ""}`];
    case "stopped": {
      const reason = outcome.reason ?? "no reason recorded";
      const budget = reason.startsWith("budget:");
      return [
        `${paint("warn", "■ stopped:")} ${reason}${budget ? " — the loop ends itself; every call is still logged" : ""}`,
        paint("dim", `  ${plural(state.current.iterations, "provider iteration")} and ${plural(state.current.toolCalls, "tool call")} for this message${budgetFact(reason, state)} · ${logged}`),
      ];
    }
    case "failed":
      return [`${paint("bad", "✗ failed:")} ${outcome.reason ?? "no reason recorded"} ${paint("dim", `· ${logged}`)}`];
    case "awaiting-approval":
      return [`${paint("warn", "⏸  awaiting approval")} ${paint("dim", `· ${plural(outcome.pendingApprovals.length, "held call")} · ${logged}`)}`];
    case "needs-resume":
      return [`${paint("warn", "⏸  needs resume:")} ${outcome.reason ?? "unfinished-turn"} ${paint("dim", `· ${logged}`)}`];
    case "idle":
      return [`${paint("dim", `idle: nothing asked yet · ${logged}`)}`];
  }
}

/** ` (budgets.maxIterations is 4)` for the budget that stopped the loop. */
function budgetFact(reason: string, state: SessionState): string {
  const budgets = state.budgets;
  if (budgets === null) return "";
  switch (reason) {
    case "budget:max-iterations":
      return ` (budgets.maxIterations is ${budgets.maxIterations})`;
    case "budget:max-tool-calls":
      return ` (budgets.maxToolCalls is ${budgets.maxToolCalls})`;
    case "budget:repeated-failures":
      return ` (budgets.maxRepeatedFailures is ${budgets.maxRepeatedFailures})`;
    case "budget:wall-clock":
      return ` (budgets.wallClockMs is ${budgets.wallClockMs})`;
    default:
      return "";
  }
}

/**
 * What happened to a session's tool calls, in one phrase.
 *
 * @example
 * callFacts(session.state()); // "8 tool calls: 4 ran, 2 rejected (malformed-arguments, unknown-tool), 1 denied, 1 blocked, …"
 */
export function callFacts(state: SessionState): string {
  const all = [...state.calls.values()];
  const ran = all.filter((call) => call.status === "succeeded").length;
  const failed = all.filter((call) => call.status === "failed" || call.status === "interrupted");
  const rejected = all.filter((call) => call.status === "rejected");
  const denied = all.filter((call) => call.status === "denied").length;
  const blocked = all.filter((call) => call.status === "blocked").length;
  const redacted = all.filter((call) => call.argumentsRedacted).length;
  const summary = [
    `${ran} ran`,
    failed.length > 0 ? `${failed.length} failed (${failed.map((call) => (call.result?.kind === "failed" ? call.result.code : call.status)).join(", ")})` : "",
    rejected.length > 0 ? `${rejected.length} rejected (${rejected.map((call) => call.rejection?.reason ?? "rejected").join(", ")})` : "",
    denied > 0 ? `${denied} denied` : "",
    blocked > 0 ? `${blocked} blocked` : "",
    redacted > 0 ? `${redacted} with a secret logged redacted` : "",
  ]
    .filter(Boolean)
    .join(", ");
  return `${plural(all.length, "tool call")}: ${summary}`;
}
