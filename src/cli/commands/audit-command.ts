import type { ResolvedLogLocation } from "../../log/log-location.js";
import type { GateDecision } from "../../contracts/policy.js";
import { createLogReader, type AuditOutcome, type AuditRow } from "../../reader/index.js";
import { printJson, type CommandContext } from "../cli-io.js";
import { exitCodes } from "../../errors/cli-error.js";
import { readOnly, withLog } from "../log-directory.js";
import { forSession } from "../session-events.js";
import { outcomeTones, type Tone } from "../terminal-style.js";
import { terminalSafe } from "../terminal-text.js";

export interface AuditOptions {
  location: ResolvedLogLocation;
  json?: boolean;
  /** Filters; they combine with AND. Decision and outcome values are checked by commander. */
  decision?: GateDecision;
  tool?: string;
  outcome?: AuditOutcome;
}

/** The widest table the text output prints, to fit a 120-column terminal. */
export const auditTableWidth = 120;

/** `turnlog audit <session>`: one row per tool call, as a table or (with `--json`) the audit rows. */
export async function auditCommand(sessionId: string, options: AuditOptions, context: CommandContext): Promise<number> {
  const all = await withLog(options.location, readOnly(context.io), (log) => forSession(createLogReader(log).audit(sessionId), sessionId, options.location, context.io.env));
  const rows = all.filter(
    (row) =>
      (options.decision === undefined || row.decision === options.decision) &&
      (options.tool === undefined || row.tool === options.tool) &&
      (options.outcome === undefined || row.outcome === options.outcome),
  );
  if (options.json) {
    printJson(context, rows);
    return exitCodes.ok;
  }
  if (rows.length === 0) {
    context.print(`no tool calls match in session ${sessionId} (${all.length} in all)`);
    return exitCodes.ok;
  }
  for (const line of formatAuditTable(terminalSafe(rows), context)) context.print(line);
  context.print(context.paint("dim", `${rows.length} of ${all.length} tool calls · --json prints every field (full rules, notes, timings)`));
  return exitCodes.ok;
}

interface Column {
  header: string;
  cell(row: AuditRow): string;
  /** Narrowest the column is squeezed to when the table is too wide (0: never squeezed). */
  min: number;
  /** Squeezed in rounds: every column of round 1 down to its minimum before round 2 (the rule, which matters most). */
  round?: 1 | 2;
  align?: "right";
  tone?(row: AuditRow): Tone | undefined;
}

const columns: Column[] = [
  { header: "#pos", cell: (row) => `#${row.position}`, min: 0, align: "right" },
  { header: "turn", cell: (row) => (row.turn === null ? "host" : String(row.turn)), min: 0, align: "right" },
  { header: "tool", cell: (row) => row.tool, min: 11, round: 1 },
  { header: "call", cell: (row) => row.callId, min: 12, round: 1 },
  { header: "risk", cell: (row) => row.riskClass ?? "—", min: 12, round: 1 },
  { header: "decision", cell: (row) => row.decision ?? "—", min: 0 },
  { header: "rule", cell: (row) => row.rule || "—", min: 12, round: 2 },
  { header: "outcome", cell: (row) => row.outcome, min: 0, tone: (row) => outcomeTones[row.outcome] },
  {
    header: "approved by",
    // An edited approval says so; --json prints what was proposed and what ran.
    cell: (row) => (row.edited !== undefined ? `${row.edited.by} (edited)` : (row.approvedBy ?? (row.approval?.granted === false ? `✗ ${row.approval.by}` : "—"))),
    min: 11,
    round: 1,
  },
  { header: "duration", cell: (row) => (row.durationMs === undefined ? "—" : `${row.durationMs}ms`), min: 0, align: "right" },
];

const separator = "  ";

/** Shortens `text` to `width` characters, marking a cut with `…`. */
function truncate(text: string, width: number): string {
  const chars = [...text];
  return chars.length <= width ? text : `${chars.slice(0, Math.max(0, width - 1)).join("")}…`;
}

function pad(text: string, width: number, align: "right" | undefined): string {
  const gap = " ".repeat(Math.max(0, width - [...text].length));
  return align === "right" ? gap + text : text + gap;
}

/**
 * The audit rows as a table no wider than {@link auditTableWidth}: each column as wide as its
 * widest cell, then the widest squeezable column narrowed (its cells cut with `…`) until it fits —
 * tool, call, risk and approver first, the rule last.
 */
export function formatAuditTable(rows: readonly AuditRow[], context: Pick<CommandContext, "paint">): string[] {
  const cells = rows.map((row) => columns.map((column) => column.cell(row).replace(/\s+/g, " ")));
  const widths = columns.map((column, index) => Math.max([...column.header].length, ...cells.map((row) => [...(row[index] ?? "")].length)));
  const total = () => widths.reduce((sum, width) => sum + width, 0) + separator.length * (columns.length - 1);
  for (const round of [1, 2] as const) {
    while (total() > auditTableWidth) {
      let widest = -1;
      columns.forEach((column, index) => {
        if (column.round === round && (widths[index] ?? 0) > column.min && (widest === -1 || (widths[index] ?? 0) > (widths[widest] ?? 0))) widest = index;
      });
      if (widest === -1) break;
      widths[widest] = (widths[widest] ?? 0) - 1;
    }
  }
  const line = (values: readonly string[], tones: readonly (Tone | undefined)[] = []) =>
    values
      .map((value, index) => {
        const padded = pad(truncate(value, widths[index] ?? 0), widths[index] ?? 0, columns[index]?.align);
        const tone = tones[index];
        return tone === undefined ? padded : context.paint(tone, padded);
      })
      .join(separator)
      .trimEnd();
  return [
    line(columns.map((column) => column.header), columns.map(() => "bold")),
    ...rows.map((row, index) => line(cells[index] ?? [], columns.map((column) => column.tone?.(row)))),
  ];
}
