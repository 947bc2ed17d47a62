import type { ResolvedLogLocation } from "../../log/log-location.js";
import { createLogReader, PositionOutOfRangeError, type SessionView } from "../../reader/index.js";
import { CliError } from "../../errors/cli-error.js";
import { type CommandContext } from "../cli-io.js";
import { exitCodes } from "../../errors/cli-error.js";
import { readOnly, withLog } from "../log-directory.js";
import { forSession } from "../session-events.js";
import { formatTimeline, plural, truncate } from "../timeline.js";
import { formatTurnTable } from "../turn-table.js";
import { terminalSafe } from "../terminal-text.js";

/** `turnlog show <session>`: who and what the session ran with, its timeline, and where it stands. */
export async function showCommand(sessionId: string, options: { location: ResolvedLogLocation; at?: string; events?: boolean }, context: CommandContext): Promise<number> {
  // A bad --at is reported after an unknown session, as it always was: the session is read first.
  const position = options.at === undefined ? undefined : /^\d+$/.test(options.at) ? Number(options.at) : Number.NaN;
  const valid = position !== undefined && Number.isSafeInteger(position) && position >= 1;
  const recorded = await withLog(options.location, readOnly(context.io), async (log) => {
    try {
      return await forSession(createLogReader(log).view(sessionId, valid ? { at: position } : {}), sessionId, options.location, context.io.env);
    } catch (error) {
      if (error instanceof PositionOutOfRangeError) throw new CliError(error.message, { cause: error });
      throw error;
    }
  });
  // Everything shown comes from the log: its terminal controls are printed escaped (docs/security.md).
  const view = terminalSafe(recorded);
  const { print, paint } = context;
  if (options.at !== undefined) {
    if (!valid) throw new CliError(`--at must be a stream position ≥ 1 (got "${options.at}")`, { exitCode: exitCodes.usage });
    return showAt(view, context);
  }
  const { events, state } = view;
  print(`${paint("bold", "session ")} ${sessionId}`);
  if (state.provider !== null) print(`${paint("dim", "provider")} ${state.provider.id} (${state.provider.format})`);
  if (state.policy !== null) {
    const { approvalMode, workspace } = state.policy;
    print(`${paint("dim", "policy  ")} mode ${approvalMode} · workspace ${workspace.root} (${workspace.trusted ? "trusted" : "untrusted"})`);
  }
  const width = (context.io.stdout as { columns?: number }).columns ?? 120;
  const toolLines = wrap(state.tools.map((tool) => `${tool.name} (${tool.riskClass})`), width - 9);
  toolLines.forEach((line, index) => print(`${paint("dim", index === 0 ? "tools   " : "        ")} ${line}`));
  print();
  const machineState = view.machineState;
  for (const line of formatTurnTable(events, state, { color: context.color, width, ...(machineState !== undefined ? { machineState } : {}) })) print(line);
  if (options.events) {
    print();
    for (const line of formatTimeline(events, { color: context.color })) print(`  ${line}`);
  }
  print();
  for (const line of describeStatus(view, context)) print(line);
  if (!options.events) print(paint("dim", `--events: all ${events.length} events, one per line`));
  return exitCodes.ok;
}

/**
 * `turnlog show <session> --at N`: time travel — the timeline up to stream position N and where the
 * session stood right after it: turn, machine state of the active turn, and each call's status.
 */
function showAt(view: SessionView, context: CommandContext): number {
  const { print, paint } = context;
  const { sessionId, position, state, events: prefix } = view;
  print(`${paint("bold", "session ")} ${sessionId} ${paint("dim", `· at #${position} of ${view.length}`)}`);
  print();
  for (const line of formatTimeline(prefix, { color: context.color })) print(`  ${line}`);
  print();
  const turn = state.turns.at(-1);
  const machine = view.machineState;
  print(
    `${paint("bold", "state at")} #${position}: ${view.status} · ${plural(state.messages.filter((message) => message.role === "user").length, "user message")}, ${plural(state.totals.turns, "turn")}` +
      (turn === undefined ? "" : ` · turn ${turn.turnSeq} (${turn.turnId}, iteration ${turn.iteration}) ${turn.status}${machine !== undefined ? `, machine state ${machine}` : ""}`),
  );
  for (const call of state.calls.values()) print(`  ${call.name} ${paint("dim", call.callId)} ${call.status}`);
  return exitCodes.ok;
}

function describeStatus(view: SessionView, { paint }: CommandContext): string[] {
  const { state, status } = view;
  const calls = [...state.calls.values()];
  const facts = paint("dim", `· ${plural(state.totals.turns, "turn")}, ${plural(calls.length, "tool call")}`);
  switch (status) {
    case "completed":
      return [`${paint("good", "completed")} ${facts}`, "", `${paint("bold", "final answer ›")} ${state.lastOutcome?.text ?? ""}`];
    case "awaiting-approval":
      return [
        `${paint("warn", "awaiting approval")} ${facts}`,
        ...view.pendingApprovals.map(
          (call) => `  ${call.name} ${paint("dim", call.callId)} ${truncate(JSON.stringify(call.input) ?? "", 80)} ${paint("dim", `(rule ${call.decision?.rule ?? "?"})`)}`,
        ),
      ];
    case "stopped":
    case "failed":
      return [`${paint(status === "failed" ? "bad" : "warn", status)}: ${state.lastOutcome?.reason ?? "no reason recorded"} ${facts}`];
    default:
      return [`${paint("dim", status)} ${facts}`];
  }
}

/** Joins items with ", " into lines of at most `width` characters (an item longer than that gets its own line). */
function wrap(items: readonly string[], width: number): string[] {
  if (items.length === 0) return ["none"];
  const lines: string[] = [];
  let line = "";
  for (const [index, item] of items.entries()) {
    const piece = index < items.length - 1 ? `${item},` : item;
    if (line !== "" && line.length + 1 + piece.length > width) {
      lines.push(line);
      line = piece;
    } else line = line === "" ? piece : `${line} ${piece}`;
  }
  lines.push(line);
  return lines;
}
