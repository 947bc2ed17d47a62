import { isTurnEvent } from "../../contracts/events.js";
import type { RecordedTurnlogEvent } from "../../log/event-log.js";
import { turnPaths, type AuditRow, type CallState, type SessionStatus, type SessionView } from "../../reader/index.js";
import { findProviderFormat } from "../../providers/formats.js";
import { eventSummaries } from "../timeline.js";
import type { CallDecision, HeldCall, PositionState, SessionTimeline, TimelineAnswer, TimelineCall, TimelineTurn } from "./view-api.js";

/**
 * The colour of an audit row: the gate's decision, or `rejected` when the plan never reached the gate.
 *
 * @example
 * callDecision(row.decision); // "allow", "ask", "deny", "block" or "rejected"
 */
export function callDecision(decision: AuditRow["decision"]): CallDecision {
  return decision ?? "rejected";
}

/**
 * A session's turns and calls on a time axis (milliseconds since its first event), for `turnlog
 * view`'s timeline: per turn its provider attempts (failed ones kept: retries), how it ended, and
 * per call its decision (from the audit rows), the wait for a person and the run. Every audit row
 * becomes exactly one call, so every call of the session is drawn; a host-routed call goes to a
 * row of its own. `held` (the session's `pendingApprovals` at its end) become the calls the page
 * offers to answer.
 *
 * @example
 * const view = await reader.view(id);
 * const timeline = sessionTimeline(events, await reader.audit(id), view.status, view.pendingApprovals);
 * timeline.turns[0]?.calls.map((call) => call.decision); // ["allow", "ask", "rejected"]
 */
export function sessionTimeline(events: readonly RecordedTurnlogEvent[], audit: readonly AuditRow[], status: SessionStatus, held: readonly CallState[] = []): SessionTimeline {
  const first = events[0];
  if (first === undefined) throw new TypeError("sessionTimeline: a session has at least one event");
  const start = Date.parse(first.meta.recordedAt);
  const at = (event: RecordedTurnlogEvent) => Math.max(0, Date.parse(event.meta.recordedAt) - start);
  const turns = new Map<string, TimelineTurn>();
  const calls = new Map<string, Partial<TimelineCall> & { callId: string }>();
  const call = (callId: string) => {
    let found = calls.get(callId);
    if (found === undefined) {
      found = { callId };
      calls.set(callId, found);
    }
    return found;
  };
  const userMessages: SessionTimeline["userMessages"] = [];
  let provider: SessionTimeline["provider"] = { id: "", format: "" };

  for (const event of events) {
    const ms = at(event);
    const turn = isTurnEvent(event) ? turns.get(event.data.turnId) : undefined;
    switch (event.type) {
      case "session.user_message.added":
        userMessages.push({ position: event.meta.streamPosition, atMs: ms, text: event.data.content });
        break;
      case "turn.started": {
        const { turnId, turnSeq, iteration } = event.data;
        turns.set(turnId, { turnId, turnSeq, iteration, startMs: ms, status: "active", attempts: [], calls: [] });
        break;
      }
      case "turn.provider.requested":
        turn?.attempts.push({ attempt: event.data.attempt, requestedMs: ms });
        break;
      case "turn.provider.responded":
      case "turn.provider.failed": {
        if (turn !== undefined && event.type === "turn.provider.responded") turn.answer = timelineAnswer(event, provider.format);
        const attempt = turn?.attempts.at(-1);
        if (attempt === undefined) break;
        attempt.endMs = ms;
        if (event.type === "turn.provider.failed") {
          const { kind, retryable, message } = event.data;
          attempt.failed = { kind, retryable, ...(message !== undefined ? { message } : {}) };
        }
        break;
      }
      case "turn.tool_calls.planned":
        for (const plan of event.data.plans) {
          if (plan.status === "rejected") call(plan.callId).decidedMs = ms;
        }
        break;
      case "turn.tool_calls.gated":
        for (const decision of event.data.decisions) {
          const entry = call(decision.callId);
          entry.decidedMs = ms;
          if (decision.decision === "ask") entry.wait = { fromMs: ms };
        }
        break;
      case "turn.approval.granted":
      case "turn.approval.denied": {
        const { callId, by, note } = event.data;
        const entry = call(callId);
        entry.wait = {
          fromMs: entry.wait?.fromMs ?? ms,
          toMs: ms,
          by,
          granted: event.type === "turn.approval.granted",
          ...(note !== undefined ? { note } : {}),
        };
        break;
      }
      case "turn.tool.started":
        call(event.data.callId).run = { fromMs: ms };
        break;
      case "turn.tool.succeeded":
      case "turn.tool.failed":
      case "turn.tool.interrupted": {
        const entry = call(event.data.callId);
        entry.run = { fromMs: entry.run?.fromMs ?? ms, toMs: ms, ok: event.type === "turn.tool.succeeded" };
        break;
      }
      case "turn.completed":
        if (turn === undefined) break;
        turn.endMs = ms;
        turn.status = "completed";
        break;
      case "turn.continued":
      case "turn.stopped":
      case "turn.failed":
        if (turn === undefined) break;
        turn.endMs = ms;
        turn.status = event.type === "turn.continued" ? "continued" : event.type === "turn.stopped" ? "stopped" : "failed";
        turn.reason = event.data.reason;
        break;
      case "session.started":
        provider = { id: event.data.provider.id, format: event.data.provider.format };
        break;
      case "session.config.changed":
        if (event.data.provider !== undefined) provider = { id: event.data.provider.id, format: event.data.provider.format };
        break;
      case "session.decisions.upgraded":
      case "session.tools.changed":
      case "session.environment.observed":
      case "turn.tool_calls.normalized":
      case "turn.results.packetized":
      case "turn.cancel.requested":
      case "session.native_tool.requested":
      case "session.native_tool.decided":
      case "session.native_tool.completed":
      case "session.history.compacted":
      case "session.diagnostic.recorded":
        // Not drawn on the turn rows: host-routed calls come from the audit below.
        break;
      default:
        event satisfies never;
    }
  }

  // One call per audit row, in the audit's order: the audit is the list of every call.
  const byPosition = new Map(events.map((event) => [event.meta.streamPosition, event]));
  const host: TimelineTurn = { turnId: "host", turnSeq: 0, iteration: 0, startMs: Number.POSITIVE_INFINITY, status: "host", attempts: [], calls: [] };
  for (const row of audit) {
    const timing = calls.get(row.callId) ?? { callId: row.callId };
    const last = byPosition.get(row.position);
    const decidedMs = timing.decidedMs ?? (last !== undefined ? at(last) : 0);
    const endMs = Math.max(decidedMs, timing.wait?.toMs ?? 0, timing.run?.toMs ?? timing.run?.fromMs ?? 0, last !== undefined && row.source === "host" ? at(last) : 0);
    const entry: TimelineCall = {
      callId: row.callId,
      tool: row.tool,
      decision: callDecision(row.decision),
      rule: row.rule,
      outcome: row.outcome,
      decidedMs,
      ...(timing.wait !== undefined ? { wait: timing.wait } : {}),
      ...(timing.run !== undefined ? { run: timing.run } : {}),
      endMs,
      position: row.position,
    };
    const owner = row.turnId !== null ? turns.get(row.turnId) : undefined;
    if (owner !== undefined) {
      owner.calls.push(entry);
    } else {
      host.calls.push(entry);
      host.startMs = Math.min(host.startMs, decidedMs);
      host.endMs = Math.max(host.endMs ?? 0, endMs);
    }
  }
  const rows = [...turns.values()];
  if (host.calls.length > 0) rows.push(host);
  const last = events.at(-1) ?? first;
  return {
    sessionId: sessionIdOf(first),
    length: events.length,
    status,
    startedAt: first.meta.recordedAt,
    durationMs: at(last),
    provider,
    turns: rows,
    userMessages,
    audit: [...audit],
    paths: turnPaths(events),
    held: held.map(heldCall),
  };
}

/**
 * A held call as the page shows it: its arguments as the model wrote them (or their redaction) and,
 * when they parsed, as the gate judged them.
 *
 * @example
 * heldCall(view.pendingApprovals[0]); // { callId: "call_1", tool: "deploy", argumentsText: '{"version":"v2"}', … }
 */
export function heldCall(call: CallState): HeldCall {
  return {
    callId: call.callId,
    tool: call.name,
    turnId: call.turnId,
    ...(call.decision !== undefined ? { rule: call.decision.rule } : {}),
    ...(call.decision?.riskClass != null ? { riskClass: call.decision.riskClass } : {}),
    argumentsText: call.argumentsText ?? (call.input !== undefined ? JSON.stringify(call.input) : ""),
    argumentsRedacted: call.argumentsRedacted === true,
    ...(call.input !== undefined && call.argumentsRedacted !== true ? { input: call.input } : {}),
    ...(call.decision !== undefined ? { fingerprint: call.decision.fingerprint } : {}),
  };
}

/** A provider's answer as the page shows it; its echo's reasoning is read by the format it was recorded in. */
function timelineAnswer(event: Extract<RecordedTurnlogEvent, { type: "turn.provider.responded" }>, format: string): TimelineAnswer {
  const { content, finishReason, toolCalls, echo, echoDropped, usage } = event.data;
  return {
    position: event.meta.streamPosition,
    text: content,
    finishReason,
    toolCalls: toolCalls.length,
    reasoning: echo !== undefined ? (findProviderFormat(format)?.reasoningOf(echo) ?? []) : [],
    ...(echoDropped !== undefined ? { echoDropped } : {}),
    ...(usage !== undefined ? { usage: { ...(usage.inputTokens !== undefined ? { inputTokens: usage.inputTokens } : {}), ...(usage.outputTokens !== undefined ? { outputTokens: usage.outputTokens } : {}) } } : {}),
  };
}

function sessionIdOf(event: RecordedTurnlogEvent): string {
  return event.meta.stream.replace(/^session-/, "");
}

/**
 * The state at one position, as the page's position slider shows it: `LogReader.view`'s result
 * made plain JSON (the session state holds Maps), with the event at that position summarized.
 *
 * @example
 * positionState(await reader.view(id, { at: 12 }));
 */
export function positionState(view: SessionView): PositionState {
  const { state } = view;
  const event = view.events.at(-1);
  if (event === undefined) throw new TypeError("positionState: a view holds at least one event");
  const start = Date.parse(view.events[0]?.meta.recordedAt ?? event.meta.recordedAt);
  const summary = eventSummaries(view.events).at(-1) ?? "";
  const decisionOf = new Map(view.audit.map((row) => [row.callId, callDecision(row.decision)]));
  const open = state.turns.findLast((turn) => turn.status === "active");
  return {
    sessionId: view.sessionId,
    position: view.position,
    length: view.length,
    event: { type: event.type, summary, atMs: Math.max(0, Date.parse(event.meta.recordedAt) - start), recordedAt: event.meta.recordedAt },
    status: view.status,
    ...(view.machineState !== undefined ? { machineState: view.machineState } : {}),
    ...(open !== undefined ? { openTurn: { turnId: open.turnId, turnSeq: open.turnSeq } } : {}),
    messages: state.messages.length,
    turns: state.turns.map((turn) => ({ turnId: turn.turnId, turnSeq: turn.turnSeq, status: turn.status, ...(turn.reason !== undefined ? { reason: turn.reason } : {}) })),
    calls: [...state.calls.values()].map((entry) => {
      const decision = decisionOf.get(entry.callId);
      return { callId: entry.callId, tool: entry.name, status: entry.status, ...(decision !== undefined ? { decision } : {}) };
    }),
    pendingApprovals: view.pendingApprovals.map((entry) => ({ callId: entry.callId, tool: entry.name, ...(entry.decision !== undefined ? { rule: entry.decision.rule } : {}) })),
    totals: { ...state.totals },
    lastOutcome: state.lastOutcome === null ? null : { status: state.lastOutcome.status, ...(state.lastOutcome.reason !== undefined ? { reason: state.lastOutcome.reason } : {}) },
  };
}
