import type { EventLog } from "../../log/event-log.js";
import { foldEvents } from "../../projections/projection.js";
import { sessionStateProjection } from "../../projections/session-state.js";
import { sessionStream } from "../../runtime/session-store.js";
import { printJson, type CommandContext } from "../cli-io.js";
import { exitCodes } from "../cli-error.js";
import { readOnly, withLog } from "../log-directory.js";
import { sessionStatus, type SessionStatus } from "../session-status.js";
import type { Tone } from "../terminal-style.js";

/** One row of `turnlog sessions --json`. */
export interface SessionListing {
  id: string;
  /** Number of events in the session's stream. */
  events: number;
  lastRecordedAt: string | null;
  /** `unreadable` when the stream cannot be folded (a damaged log: run `turnlog verify`). */
  status: SessionStatus | "unreadable";
}

const sessionPrefix = "session-";

/**
 * Lists the sessions of a log with their size, last activity and status, oldest activity first.
 *
 * @example
 * const rows = await listSessions(log); // [{ id: "demo-…", events: 19, lastRecordedAt: "…", status: "completed" }]
 */
export async function listSessions(log: EventLog): Promise<SessionListing[]> {
  const ids = (await log.listStreams()).filter((stream) => stream.startsWith(sessionPrefix)).map((stream) => stream.slice(sessionPrefix.length));
  const rows: SessionListing[] = [];
  for (const id of ids) {
    const version = await log.streamVersion(sessionStream(id));
    try {
      const events = await log.readStream(sessionStream(id), { maxCount: Number.MAX_SAFE_INTEGER });
      const state = foldEvents(sessionStateProjection, events);
      rows.push({ id, events: version, lastRecordedAt: events.at(-1)?.meta.recordedAt ?? null, status: sessionStatus(state) });
    } catch {
      // One damaged session must not hide the others; `verify` says what is wrong with it.
      rows.push({ id, events: version, lastRecordedAt: null, status: "unreadable" });
    }
  }
  return rows.sort((a, b) => (a.lastRecordedAt ?? "").localeCompare(b.lastRecordedAt ?? "") || a.id.localeCompare(b.id));
}

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
export async function sessionsCommand(options: { dir: string; json?: boolean }, context: CommandContext): Promise<number> {
  const rows = await withLog(options.dir, readOnly(context.io), listSessions);
  if (options.json) {
    printJson(context, rows);
    return exitCodes.ok;
  }
  const { print, paint } = context;
  if (rows.length === 0) {
    print(`no sessions in ${options.dir} — run "npx turnlog demo" to record one`);
    return exitCodes.ok;
  }
  const table = rows.map((row) => [row.id, String(row.events), formatTime(row.lastRecordedAt), row.status] as const);
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
