import { eventCatalogue, eventTypes, TurnlogEventSchema, type TurnlogEvent, type TurnlogEventType } from "../contracts/events.js";
import type { RecordedTurnlogEvent } from "../log/event-log.js";
import { painter, type Paint, type Tone } from "./terminal-style.js";
import { terminalSafe } from "./terminal-text.js";

/** Options of {@link formatTimeline}. */
export interface TimelineOptions {
  /** ANSI colors (decide with `shouldColor`). Default false. */
  color?: boolean;
  /** Longest text preview, in characters. Default 60. */
  previewChars?: number;
  /** Time the offsets count from (ISO-8601). Default: the first event's `recordedAt`. */
  startedAt?: string;
}

/**
 * Formats a session's recorded events as a readable timeline: one line per event, in order,
 * with its stream position, the time since the session started, its type and a short summary
 * of what it says. Pure: the same events and options give the same lines, so a caller may print
 * a slice of them (line `i` is `events[i]`).
 *
 * @example
 * for (const line of formatTimeline(await runtime.events("s1"))) console.log(line);
 * //  #8  +0.021s  turn.tool_calls.gated  read_file allow (mode:ask) · write_file ask (mode:ask)
 */
export function formatTimeline(recorded: readonly RecordedTurnlogEvent[], options: TimelineOptions = {}): string[] {
  // What the log holds is printed with its terminal controls escaped (docs/security.md).
  const events = terminalSafe(recorded);
  const paint = painter(options.color ?? false);
  const context: SummaryContext = { paint, previewChars: options.previewChars ?? 60, toolOfCall: new Map() };
  const start = Date.parse(options.startedAt ?? events[0]?.meta.recordedAt ?? "");
  const rows = events.map((event) => ({
    position: `#${event.meta.streamPosition}`,
    offset: formatOffset(Date.parse(event.meta.recordedAt) - start),
    type: event.type,
    tone: toneOf(event.type),
    summary: summarize(event, context),
  }));
  // Minimum widths keep the columns of two slices of one session (the demo prints it in parts) aligned.
  const positionWidth = Math.max(3, ...rows.map((row) => row.position.length));
  const offsetWidth = Math.max(7, ...rows.map((row) => row.offset.length));
  const typeWidth = Math.max(longestCataloguedType, ...rows.map((row) => row.type.length));
  return rows.map((row) =>
    [
      paint("dim", row.position.padStart(positionWidth)),
      paint("dim", row.offset.padStart(offsetWidth)),
      paint(row.tone, row.type.padEnd(typeWidth)),
      row.summary,
    ]
      .join("  ")
      .trimEnd(),
  );
}

/**
 * The summary column of {@link formatTimeline} alone, uncolored: one string per event (`turnlog
 * view` shows it next to the event at a position).
 *
 * @example
 * eventSummaries(events)[10]; // "read_file allow (mode:ask) · write_file ask (mode:ask)"
 */
export function eventSummaries(events: readonly RecordedTurnlogEvent[], previewChars = 80): string[] {
  const context: SummaryContext = { paint: painter(false), previewChars, toolOfCall: new Map() };
  return terminalSafe(events).map((event) => summarize(event, context));
}

/**
 * Time since the session started: `+0.012s` under a minute, `+2m05.300s` under an hour,
 * `+3h07m` beyond (a session that waited overnight for an approval stays readable).
 */
export function formatOffset(milliseconds: number): string {
  if (!Number.isFinite(milliseconds)) return "+?";
  const sign = milliseconds < 0 ? "-" : "+";
  const ms = Math.abs(milliseconds);
  if (ms < 60_000) return `${sign}${(ms / 1000).toFixed(3)}s`;
  if (ms < 3_600_000) {
    const minutes = Math.floor(ms / 60_000);
    return `${sign}${minutes}m${((ms % 60_000) / 1000).toFixed(3).padStart(6, "0")}s`;
  }
  const hours = Math.floor(ms / 3_600_000);
  return `${sign}${hours}h${String(Math.floor((ms % 3_600_000) / 60_000)).padStart(2, "0")}m`;
}

/** A one-line preview of model or tool text: whitespace collapsed, cut with `…`, quoted. */
export function preview(text: string, maxChars: number): string {
  return `"${truncate(text.replace(/\s+/g, " ").trim(), maxChars)}"`;
}

/** `text` cut to `maxChars` characters, the last one `…` when anything was cut. */
export function truncate(text: string, maxChars: number): string {
  return text.length > maxChars ? `${text.slice(0, Math.max(1, maxChars - 1))}…` : text;
}

/** A call ID short enough for a timeline line; derived IDs are long hashes. */
export function shortCallId(callId: string): string {
  return callId.length > 16 ? `${callId.slice(0, 13)}…` : callId;
}

/** `1 tool call`, `5 tool calls`. */
export function plural(count: number, noun: string, pluralNoun = `${noun}s`): string {
  return `${count} ${count === 1 ? noun : pluralNoun}`;
}

/** `7ms`, `1.25s`. */
export function formatDuration(milliseconds: number): string {
  return milliseconds < 1000 ? `${Math.round(milliseconds)}ms` : `${(milliseconds / 1000).toFixed(2)}s`;
}

const longestCataloguedType = Math.max(...eventTypes.map((type) => type.length));

interface SummaryContext {
  paint: Paint;
  previewChars: number;
  /** Tool names by call ID, learned from `turn.tool_calls.normalized` as the timeline goes. */
  toolOfCall: Map<string, string>;
}

/** The tone of the events that stand out; every other event is painted by its kind (decision or input). */
const tones: Partial<Record<TurnlogEventType, Tone>> = {
  "turn.completed": "good",
  "turn.tool.succeeded": "good",
  "turn.approval.granted": "good",
  "turn.failed": "bad",
  "turn.tool.failed": "bad",
  "turn.approval.denied": "bad",
  "turn.stopped": "warn",
  "turn.cancel.requested": "warn",
  "turn.tool.interrupted": "warn",
  "turn.provider.failed": "warn",
};

function toneOf(type: string): Tone {
  if (!isCatalogued(type)) return "input";
  return tones[type] ?? (eventCatalogue[type].kind === "decision" ? "decision" : "input");
}

function isCatalogued(type: string): type is TurnlogEventType {
  return Object.hasOwn(eventCatalogue, type);
}

/**
 * Validates the event against its catalogue schema before describing it: a log written by another
 * version, or tampered with, must not crash the timeline — it gets a plain note instead.
 */
function summarize(recorded: RecordedTurnlogEvent, context: SummaryContext): string {
  if (!isCatalogued(recorded.type)) return context.paint("dim", "(not in this turnlog's event catalogue)");
  const parsed = TurnlogEventSchema.safeParse({ type: recorded.type, data: recorded.data });
  if (!parsed.success) return context.paint("warn", "(data does not match the event catalogue)");
  return summarizeEvent(parsed.data, context);
}

function summarizeEvent(event: TurnlogEvent, context: SummaryContext): string {
  const { paint } = context;
  const text = (value: string) => paint("dim", preview(value, context.previewChars));
  const toolOf = (callId: string) => context.toolOfCall.get(callId) ?? "call";
  const separator = paint("dim", " · ");
  const join = (...parts: (string | undefined | false)[]) => parts.filter((part): part is string => typeof part === "string" && part !== "").join(separator);
  switch (event.type) {
    case "session.started": {
      const { provider, policy, tools } = event.data;
      return join(
        `${provider.id} (${provider.format})`,
        `mode ${policy.approvalMode}`,
        `decisions v${event.data.decisionsVersion ?? 1}`,
        `tools: ${tools.map((tool) => tool.name).join(", ") || "none"}`,
      );
    }
    case "session.config.changed": {
      const { provider, policy, tools, budgets } = event.data;
      return join(provider && `provider ${provider.id} (${provider.format})`, policy && `policy (mode ${policy.approvalMode})`, tools && `tools: ${tools.map((tool) => tool.name).join(", ")}`, budgets && "budgets");
    }
    case "session.decisions.upgraded":
      return `decisions version ${event.data.from} → ${event.data.to}`;
    case "session.tools.changed": {
      const { tools } = event.data;
      return `tools: ${tools.map((tool) => tool.name).join(", ") || "none"}`;
    }
    case "session.environment.observed":
      return plural(event.data.realPaths.length, "real path");
    case "session.user_message.added":
      return text(event.data.content);
    case "turn.started":
      return join(event.data.turnId, `iteration ${event.data.iteration}`);
    case "turn.provider.requested": {
      const { attempt, providerId, messageCount, toolNames } = event.data;
      return join(`attempt ${attempt}`, providerId, plural(messageCount, "message"), plural(toolNames.length, "tool"));
    }
    case "turn.provider.responded": {
      const { finishReason, toolCalls, content, usage } = event.data;
      return join(
        finishReason,
        plural(toolCalls.length, "tool call"),
        usage && `${usage.inputTokens ?? 0}→${usage.outputTokens ?? 0} tokens`,
        content !== "" && text(content),
      );
    }
    case "turn.provider.failed": {
      const { kind, status, retryable, message } = event.data;
      return join(paint("warn", status === undefined ? kind : `${kind} ${status}`), retryable ? "retryable" : "not retryable", message && text(message));
    }
    case "turn.tool_calls.normalized": {
      const { calls, nativeReplaySafe, unsafeReasons } = event.data;
      for (const call of calls) context.toolOfCall.set(call.id, call.name || "(no name)");
      const derived = calls.filter((call) => call.idSource === "derived").length;
      const redacted = calls.filter((call) => call.argumentsRedacted).length;
      return join(
        `${plural(calls.length, "call")}: ${calls.map((call) => call.name || "(no name)").join(", ")}`,
        derived > 0 && `${plural(derived, "ID")} derived`,
        redacted > 0 && paint("warn", `${redacted} with redacted arguments`),
        !nativeReplaySafe && paint("warn", `not native-replay-safe (${unsafeReasons.join(", ")})`),
      );
    }
    case "turn.tool_calls.planned": {
      const { plans } = event.data;
      const planned = plans.filter((plan) => plan.status === "planned").length;
      const rejected = plans
        .filter((plan) => plan.status === "rejected")
        .map((plan) => `${plan.tool ?? toolOf(plan.callId)} ${paint("bad", plan.reason ?? "rejected")}`);
      return join(`${planned} planned`, rejected.length > 0 && `rejected: ${rejected.join(", ")}`);
    }
    case "turn.tool_calls.gated": {
      const { decisions } = event.data;
      if (decisions.length === 0) return paint("dim", "nothing to gate");
      const decisionTone = { allow: "good", ask: "warn", deny: "bad", block: "bad" } as const;
      return decisions
        .map(({ callId, decision, rule }) => `${toolOf(callId)} ${paint(decisionTone[decision], decision)} ${paint("dim", `(${rule})`)}`)
        .join(separator);
    }
    case "turn.approval.granted":
    case "turn.approval.denied": {
      const { callId, by, note } = event.data;
      if (event.type === "turn.approval.denied" && event.data.rule !== undefined) {
        return `${toolOf(callId)} ${shortCallId(callId)} denied ${paint("dim", `(${event.data.rule})`)}: nobody answered before its deadline`;
      }
      const verb = event.type === "turn.approval.granted" ? "approved" : "denied";
      return join(`${toolOf(callId)} ${shortCallId(callId)} ${verb} by ${paint("bold", by)}`, note !== undefined && text(note));
    }
    case "turn.tool.started":
      return join(`${event.data.tool} ${paint("dim", shortCallId(event.data.callId))}`, `group ${event.data.group}`);
    case "turn.tool.succeeded": {
      const { callId, durationMs, output } = event.data;
      return join(toolOf(callId), formatDuration(durationMs), text(output));
    }
    case "turn.tool.failed": {
      const { callId, durationMs, code, message } = event.data;
      return join(toolOf(callId), formatDuration(durationMs), `${paint("bad", code)}: ${preview(message, context.previewChars)}`);
    }
    case "turn.tool.interrupted":
      return join(`${toolOf(event.data.callId)} ${paint("dim", shortCallId(event.data.callId))}`, "the process stopped while it ran; not run again");
    case "turn.results.packetized": {
      const { packets } = event.data;
      const ok = packets.filter((packet) => packet.ok).length;
      const errors = packets.length - ok;
      const truncated = packets.filter((packet) => packet.truncated).length;
      return join(
        `${paint("good", `${ok} ok`)}, ${errors > 0 ? paint("bad", plural(errors, "error")) : "0 errors"}`,
        truncated > 0 && `${truncated} truncated`,
      );
    }
    case "turn.completed":
      return text(event.data.text);
    case "turn.continued":
      return event.data.reason;
    case "turn.stopped":
      return paint("warn", event.data.reason);
    case "turn.cancel.requested":
      return paint("warn", `${event.data.turnId} cancelled by the host`);
    case "turn.failed":
      return join(paint("bad", event.data.reason), event.data.message && text(event.data.message));
    case "session.native_tool.requested":
      return join(`${event.data.tool} ${event.data.callId}`, `asked by ${event.data.by}`, event.data.inputRedacted === true && paint("warn", "redacted input"));
    case "session.native_tool.decided":
      return join(
        event.data.decision === null ? `rejected: ${event.data.plan.reason ?? "invalid"}` : `${event.data.decision.decision} (${event.data.decision.rule})`,
        event.data.runs ? "runs" : "not run",
      );
    case "session.native_tool.completed":
      return join(event.data.ok ? "ok" : `failed: ${event.data.code ?? "error"}`, `${event.data.durationMs}ms`, event.data.output !== undefined && text(event.data.output));
    case "session.history.compacted":
      return `${plural(event.data.unitsSummarized, "unit")} before #${event.data.beforePosition} summarized`;
    case "session.diagnostic.recorded":
      return diagnosticSummary(event.data, join);
    default:
      return event satisfies never;
  }
}

/**
 * One short line per history diagnostic, so the timeline fits a terminal; every count is in
 * `turnlog events --json`.
 */
function diagnosticSummary(
  data: { name: string; counts: Record<string, number>; reasons: string[] },
  join: (...parts: (string | undefined | false)[]) => string,
): string {
  const count = (name: string) => data.counts[name] ?? 0;
  const kind = data.name.replace("structured-tool-history-", "history ");
  const reasons = data.reasons.length > 0 ? data.reasons.join(", ") : undefined;
  switch (data.name) {
    case "structured-tool-history-selected":
      return join(kind, `${count("units_selected")}/${count("history_units")} earlier units kept`, `${count("groups_native")} native, ${count("groups_flat")} flat`, `~${count("estimated_tokens")} tokens`, reasons);
    case "structured-tool-history-serialized":
      return join(kind, `${count("messages")} messages`, `${count("tool_calls")} tool calls`, `${count("tool_results")} results`, reasons);
    case "structured-tool-history-skipped":
      return join(kind, `${count("groups_flat")} group(s) sent as text`, reasons);
    default:
      return join(kind, reasons);
  }
}
