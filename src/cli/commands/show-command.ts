import { foldEvents } from "../../projections/projection.js";
import { pendingApprovals, sessionStateProjection, type SessionState } from "../../projections/session-state.js";
import { type CommandContext } from "../cli-io.js";
import { exitCodes } from "../cli-error.js";
import { withLog } from "../log-directory.js";
import { readSessionEvents } from "../session-events.js";
import { sessionStatus } from "../session-status.js";
import { formatTimeline, plural, truncate } from "../timeline.js";

/** `turnlog show <session>`: who and what the session ran with, its timeline, and where it stands. */
export async function showCommand(sessionId: string, options: { dir: string }, context: CommandContext): Promise<number> {
  const events = await withLog(options.dir, {}, (log) => readSessionEvents(log, sessionId, options.dir, context.io.env));
  const { print, paint } = context;
  const state = foldEvents(sessionStateProjection, events);
  print(`${paint("bold", "session ")} ${sessionId}`);
  if (state.provider !== null) print(`${paint("dim", "provider")} ${state.provider.id} (${state.provider.format})`);
  if (state.policy !== null) {
    const { approvalMode, workspace } = state.policy;
    print(`${paint("dim", "policy  ")} mode ${approvalMode} · workspace ${workspace.root} (${workspace.trusted ? "trusted" : "untrusted"})`);
  }
  print(`${paint("dim", "tools   ")} ${state.tools.map((tool) => `${tool.name} (${tool.riskClass})`).join(", ") || "none"}`);
  print();
  for (const line of formatTimeline(events, { color: context.color })) print(`  ${line}`);
  print();
  for (const line of describeStatus(state, context)) print(line);
  return exitCodes.ok;
}

function describeStatus(state: SessionState, { paint }: CommandContext): string[] {
  const status = sessionStatus(state);
  const calls = [...state.calls.values()];
  const facts = paint("dim", `· ${plural(state.totals.turns, "turn")}, ${plural(calls.length, "tool call")}`);
  switch (status) {
    case "completed":
      return [`${paint("good", "completed")} ${facts}`, "", `${paint("bold", "final answer ›")} ${state.lastOutcome?.text ?? ""}`];
    case "awaiting-approval":
      return [
        `${paint("warn", "awaiting approval")} ${facts}`,
        ...pendingApprovals(state).map(
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
