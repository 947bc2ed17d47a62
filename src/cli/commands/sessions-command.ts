import type { ResolvedLogLocation } from "../../log/log-location.js";
import { terminalText } from "../terminal-text.js";
import { createLogReader, type SessionListing } from "../../reader/index.js";
import { printJson, type CommandContext } from "../cli-io.js";
import { exitCodes } from "../../errors/cli-error.js";
import { describeLocation, readOnly, withLog } from "../log-directory.js";
import type { Tone } from "../terminal-style.js";

const statusTone: Record<SessionListing["status"], Tone> = {
  completed: "good",
  "awaiting-approval": "warn",
  stopped: "warn",
  failed: "bad",
  active: "input",
  idle: "dim",
  unreadable: "bad",
};

/** `turnlog sessions`. */
export async function sessionsCommand(options: { location: ResolvedLogLocation; json?: boolean }, context: CommandContext): Promise<number> {
  const rows = await withLog(options.location, readOnly(context.io), (log) => createLogReader(log).sessions());
  if (options.json) {
    printJson(context, rows);
    return exitCodes.ok;
  }
  const { print, paint } = context;
  if (rows.length === 0) {
    print(`no sessions in ${describeLocation(options.location)} — run "npx turnlog demo" to record one`);
    return exitCodes.ok;
  }
  // A stream name comes from the log: printed escaped (docs/security.md).
  const table = rows.map((row) => [terminalText(row.id), String(row.events), formatTime(row.lastRecordedAt), row.status] as const);
  const header = ["SESSION", "EVENTS", "LAST EVENT", "STATUS"] as const;
  const widths = header.map((title, column) => Math.max(title.length, ...table.map((cells) => cells[column]?.length ?? 0)));
  const cell = (text: string, column: number) => (column === 1 ? text.padStart(widths[column] ?? 0) : text.padEnd(widths[column] ?? 0));
  print(paint("dim", header.map(cell).join("  ").trimEnd()));
  table.forEach((cells, index) => {
    const status = rows[index]?.status ?? "idle";
    print([cell(cells[0], 0), cell(cells[1], 1), cell(cells[2], 2), paint(statusTone[status], cells[3])].join("  "));
  });
  return exitCodes.ok;
}

/** `2025-06-12 11:59:59Z`: ISO-8601 made easier on the eye, still UTC and unambiguous. */
function formatTime(iso: string | null): string {
  if (iso === null) return "-";
  return iso.replace("T", " ").replace(/\.\d+Z$/, "Z");
}
