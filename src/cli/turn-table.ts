import { isTurnEvent } from "../contracts/events.js";
import type { RecordedTurnlogEvent } from "../log/event-log.js";
import { auditRows, turnEndings, type AuditRow, type SessionState, type TurnState } from "../reader/index.js";
import { outcomeTones, painter, type Tone } from "./terminal-style.js";
import { formatDuration, formatOffset, shortCallId, truncate } from "./timeline.js";
import { terminalSafe } from "./terminal-text.js";

/** Options of {@link formatTurnTable}. */
export interface TurnTableOptions {
  /** ANSI colors. Default false. */
  color?: boolean;
  /** Terminal width: no line is longer. Default 120. */
  width?: number;
  /** The active turn's machine state (e.g. `awaitingApproval`), shown on its line. */
  machineState?: string;
}

const decisionTones: Record<NonNullable<AuditRow["decision"]>, Tone> = { allow: "good", ask: "warn", deny: "bad", block: "bad" };

const statusTones: Record<TurnState["status"], Tone> = { active: "warn", completed: "good", continued: "dim", stopped: "warn", failed: "bad" };

/**
 * A session turn by turn, to fit a terminal (`turnlog show`): one line per turn — its number,
 * where its machine ended (or stands, for the open turn), why, when it started, how long it took,
 * how many provider attempts it needed, and what the model said — then one line per tool call
 * with the gate's decision and rule, who approved it, its outcome and its duration. Host-routed
 * calls follow under "host". Pure: the same events and state give the same lines.
 *
 * @example
 * formatTurnTable(events, state, { width: process.stdout.columns });
 * // turn 1  continued            +0.002s  31ms  1 attempt  "let me look"
 * //   read_file   call_a  allow mode:ask                    succeeded  4ms
 */
export function formatTurnTable(events: readonly RecordedTurnlogEvent[], recordedState: SessionState, options: TurnTableOptions = {}): string[] {
  // What the log holds is printed with its terminal controls escaped (docs/security.md).
  const state = terminalSafe(recordedState);
  const paint = painter(options.color ?? false);
  const width = Math.max(60, options.width ?? 120);
  const start = Date.parse(events[0]?.meta.recordedAt ?? "");
  const times = turnTimes(events);
  const rows = auditRows(state);
  const byTurn = new Map<string, AuditRow[]>();
  for (const row of rows) {
    if (row.turnId === null) continue;
    const list = byTurn.get(row.turnId) ?? [];
    list.push(row);
    byTurn.set(row.turnId, list);
  }
  const toolWidth = Math.min(24, Math.max(4, ...rows.map((row) => row.tool.length)));
  const ruleOf = (row: AuditRow) =>
    row.rule +
    (row.edited !== undefined
      ? ` · approved by ${row.edited.by} with edited arguments`
      : row.approvedBy !== undefined
        ? ` · approved by ${row.approvedBy}`
        : row.approval?.granted === false
          ? ` · denied by ${row.approval.by}`
          : "");
  const outcomeOf = (row: AuditRow) => row.outcome + (row.errorCode !== undefined && row.outcome === "failed" ? ` (${row.errorCode})` : "");
  // The rule column gets what the other columns leave of the width, and no more than it needs.
  const outcomeWidth = Math.max(9, ...rows.map((row) => outcomeOf(row).length));
  const ruleWidth = Math.max(12, Math.min(Math.max(0, ...rows.map((row) => ruleOf(row).length)), width - (1 + toolWidth + 2 + 16 + 2 + 6 + 2 + outcomeWidth + 2 + 7)));
  const lines: string[] = [];
  const callLine = (row: AuditRow) => {
    const decision = row.decision === null ? "—" : row.decision;
    const outcome = outcomeOf(row).padEnd(outcomeWidth);
    const duration = row.durationMs !== undefined ? formatDuration(row.durationMs) : "";
    const rule = truncate(ruleOf(row), ruleWidth).padEnd(ruleWidth);
    return [
      ` ${paint("bold", truncate(row.tool, toolWidth).padEnd(toolWidth))}`,
      paint("dim", shortCallId(row.callId).padEnd(16)),
      `${paint(row.decision === null ? "dim" : decisionTones[row.decision], decision.padEnd(5))} ${rule}`,
      paint(outcomeTones[row.outcome], outcome),
      paint("dim", duration),
    ]
      .join("  ")
      .trimEnd();
  };

  for (const turn of state.turns) {
    const time = times.get(turn.turnId);
    const attempts = turn.attempt === 0 ? "no request" : `${turn.attempt} attempt${turn.attempt === 1 ? "" : "s"}`;
    const where = turn.status === "active" ? `active · ${options.machineState ?? "?"}` : turn.reason !== undefined ? `${turn.status}: ${turn.reason}` : turn.status;
    const said = turn.response?.content ?? turn.text ?? "";
    const allCells: [Tone | undefined, string][] = [
      ["bold", `turn ${turn.turnSeq}`],
      [statusTones[turn.status], where.padEnd(20)],
      ["dim", time === undefined ? "" : formatOffset(time.start - start)],
      [undefined, time?.end === undefined ? "" : formatDuration(time.end - time.start)],
      ["dim", attempts],
    ];
    const cells = allCells.filter(([, text]) => text !== "");
    const head = cells.map(([tone, text]) => (tone === undefined ? text : paint(tone, text))).join("  ");
    const room = width - cells.map(([, text]) => text).join("  ").length - 4;
    lines.push(said.trim() === "" || room < 8 ? head : `${head}  ${paint("dim", `"${truncate(said.replace(/\s+/g, " ").trim(), room)}"`)}`);
    for (const row of byTurn.get(turn.turnId) ?? []) lines.push(callLine(row));
  }
  const host = rows.filter((row) => row.turnId === null);
  if (host.length > 0) {
    lines.push(paint("bold", "host"));
    for (const row of host) lines.push(callLine(row));
  }
  return lines;
}

/** When each turn started and (if it has) ended, in epoch milliseconds. */
function turnTimes(events: readonly RecordedTurnlogEvent[]): Map<string, { start: number; end?: number }> {
  const times = new Map<string, { start: number; end?: number }>();
  for (const event of events) {
    if (!isTurnEvent(event)) continue;
    const turnId = event.data.turnId;
    const at = Date.parse(event.meta.recordedAt);
    const time = times.get(turnId);
    if (time === undefined) times.set(turnId, { start: at });
    else if (turnEndings.has(event.type)) time.end = at;
  }
  return times;
}
