import { describeCommandScope } from "../policy/command-prefix.js";
import type { EventOf, TurnlogEvent } from "../contracts/events.js";
import type { RecordedEvent } from "../log/event-log.js";
import { readEvent } from "../core/read-events.js";
import { defaultSecretRedactor, type SecretRedactor } from "../policy/secrets/secret-detector.js";
import { findProviderFormat } from "../providers/formats.js";

/*
 * Spans derived from a session's log (docs/observability.md, "Spans"), following the OpenTelemetry
 * GenAI semantic conventions: an `invoke_agent` span per send, a `chat {model}` span per provider
 * attempt and an `execute_tool {name}` span per tool call, each with `turnlog.*` attributes. The
 * derivation is a pure step, `deriveSpans(state, event) → { state, changes }`: the live emitter
 * (span-emitter.ts) and `turnlog otel` feed it the same recorded events, so a span exported live
 * equals one derived after the fact. Every time comes from `meta.recordedAt`, never the clock.
 */

/** An attribute value as OpenTelemetry takes it. */
export type SpanAttributeValue = string | number | boolean | readonly string[];
export type SpanAttributes = Readonly<Record<string, SpanAttributeValue>>;

/** A point in a span's life (`turnlog.approval.requested`, `turnlog.tool.started`, …), at its recorded time. */
export interface DerivedSpanEvent {
  name: string;
  timeMs: number;
  attributes: SpanAttributes;
}

/** OpenTelemetry's span kinds turnlog uses: INTERNAL for the agent and its tools, CLIENT for a provider call. */
export type DerivedSpanKind = "internal" | "client";

/**
 * One span derived from the log. `key` names it within its session (`send:<position>`,
 * `chat:<turnId>:<attempt>`, `tool:<callId>`, `native:<callId>`), `parentKey` its parent, and
 * `traceKey` the root span of its trace: IDs after the fact are hashes of the session ID and these.
 */
export interface DerivedSpan {
  key: string;
  parentKey: string | undefined;
  traceKey: string;
  name: string;
  kind: DerivedSpanKind;
  /** Milliseconds since the epoch, from the `recordedAt` of the event that opened it. */
  startTimeMs: number;
  /** From the event that closed it; `undefined` while it is open. */
  endTimeMs: number | undefined;
  attributes: SpanAttributes;
  events: readonly DerivedSpanEvent[];
  /** `error` for a failed attempt, a call that was not run or failed, a failed send; `unset` otherwise. */
  status: { code: "unset" | "error"; message?: string };
}

/** What one event did to the spans: one opened, one was told of a moment, one closed. */
export type SpanChange =
  | { type: "started"; span: DerivedSpan }
  | { type: "event"; key: string; event: DerivedSpanEvent }
  /** The span as it ends, with every attribute, event and its status. */
  | { type: "ended"; span: DerivedSpan };

export interface SpanDerivationOptions {
  /**
   * Export tool arguments (`gen_ai.tool.call.arguments`) and results (`gen_ai.tool.call.result`).
   * Default false. The log holds them redacted already; they are scanned for secrets once more.
   */
  includeContent?: boolean;
  /**
   * What opted-in content passes before it is exported: default the secret detector; a runtime
   * passes its own, which also knows the host's secrets (`createRuntime({ secrets })`).
   */
  redactor?: Pick<SecretRedactor, "redactText" | "redactJsonText">;
}

interface NormalizedCallInfo {
  name: string;
  turnId: string;
  argumentsText: string | undefined;
}

interface NativeRequest {
  tool: string;
  input: unknown;
  by: string;
  approvedBy: string | undefined;
}

/**
 * Where the derivation stands after some events of one session: the spans still open and what
 * later events need to know (the provider in force, turn numbers, calls not yet gated). Small —
 * it holds only what is open — and never mutated: `deriveSpans` returns a new one.
 */
export interface SpanDerivationState {
  readonly sessionId: string;
  readonly provider: { readonly id: string; readonly format: string } | undefined;
  /** The stream position of the last event applied (0: none). */
  readonly position: number;
  /** The `recordedAt` of the last event applied, in ms. */
  readonly lastTimeMs: number;
  /** Open spans by key, in the order they opened. */
  readonly open: Readonly<Record<string, DerivedSpan>>;
  /** The open send's span key. */
  readonly send: string | undefined;
  readonly turnSeqs: Readonly<Record<string, number>>;
  readonly calls: Readonly<Record<string, NormalizedCallInfo>>;
  readonly natives: Readonly<Record<string, NativeRequest>>;
  /** `tool`-scope approvals, for the approver of a call an earlier approval allowed. */
  readonly toolApprovals: readonly { tool: string; by: string; commandPrefix: string | undefined; commandScope?: string | undefined }[];
}

/**
 * The state before a session's first event.
 *
 * @example
 * let state = initialSpanState("s1");
 * for (const event of events) ({ state } = deriveSpans(state, event));
 */
export function initialSpanState(sessionId: string): SpanDerivationState {
  return { sessionId, provider: undefined, position: 0, lastTimeMs: 0, open: {}, send: undefined, turnSeqs: {}, calls: {}, natives: {}, toolApprovals: [] };
}

/**
 * The provider name the GenAI conventions know for a recorded request format: what its adapter
 * (src/providers/formats.ts) reads from the provider ID (`ai-sdk:openai.responses:gpt-5` is
 * `openai`), else the adapter's own, or the format's own name for one turnlog has no adapter for.
 *
 * @example
 * providerName("anthropic-messages"); // "anthropic"
 * providerName("ai-sdk", "ai-sdk:google.generative-ai:gemini-3-pro"); // "gcp.gemini"
 */
export function providerName(format: string, providerId?: string): string {
  const adapter = findProviderFormat(format);
  if (adapter === undefined) return format;
  return (providerId !== undefined ? adapter.otel.providerNameOf?.(providerId) : undefined) ?? adapter.otel.providerName;
}

/**
 * The model a request went to. The log records no model name of its own: a real adapter's
 * provider ID is `<format>:<model>` (`openai-chat:gpt-4o`), so the model is what follows the
 * format, unless the format's adapter reads its IDs itself (`otel.requestModel`); any other
 * provider ID (a host's own, `scripted`) is used as it is.
 *
 * @example
 * requestModel("openai-chat:gpt-4o", "openai-chat"); // "gpt-4o"
 * requestModel("scripted", "openai-chat"); // "scripted"
 */
export function requestModel(providerId: string, format: string): string {
  const own = findProviderFormat(format)?.otel.requestModel?.(providerId);
  if (own !== undefined) return own;
  return providerId.startsWith(`${format}:`) && providerId.length > format.length + 1 ? providerId.slice(format.length + 1) : providerId;
}

/** A working copy of the state for one step; `deriveSpans` never changes the state it is given. */
class Step {
  readonly changes: SpanChange[] = [];
  open: Record<string, DerivedSpan>;
  calls: Record<string, NormalizedCallInfo>;
  natives: Record<string, NativeRequest>;
  turnSeqs: Record<string, number>;
  toolApprovals: SpanDerivationState["toolApprovals"];
  send: string | undefined;
  provider: SpanDerivationState["provider"];
  sessionId: string;

  constructor(
    state: SpanDerivationState,
    readonly timeMs: number,
    readonly position: number,
    readonly options: SpanDerivationOptions,
  ) {
    this.open = { ...state.open };
    this.calls = state.calls;
    this.natives = state.natives;
    this.turnSeqs = state.turnSeqs;
    this.toolApprovals = state.toolApprovals;
    this.send = state.send;
    this.provider = state.provider;
    this.sessionId = state.sessionId;
  }

  start(span: Omit<DerivedSpan, "startTimeMs" | "endTimeMs" | "events" | "status">, events: DerivedSpanEvent[] = []): DerivedSpan {
    const opened: DerivedSpan = { ...span, startTimeMs: this.timeMs, endTimeMs: undefined, events, status: { code: "unset" } };
    this.open[span.key] = opened;
    this.changes.push({ type: "started", span: opened });
    return opened;
  }

  event(key: string, name: string, attributes: SpanAttributes = {}): void {
    const span = this.open[key];
    if (span === undefined) return;
    const event: DerivedSpanEvent = { name, timeMs: this.timeMs, attributes };
    this.open[key] = { ...span, events: [...span.events, event] };
    this.changes.push({ type: "event", key, event });
  }

  set(key: string, attributes: SpanAttributes): void {
    const span = this.open[key];
    if (span !== undefined) this.open[key] = { ...span, attributes: { ...span.attributes, ...attributes } };
  }

  end(key: string, attributes: SpanAttributes = {}, error?: string): void {
    const span = this.open[key];
    if (span === undefined) return;
    delete this.open[key];
    const ended: DerivedSpan = {
      ...span,
      endTimeMs: this.timeMs,
      attributes: { ...span.attributes, ...attributes, ...(error !== undefined ? { "error.type": error } : {}) },
      status: error !== undefined ? { code: "error", message: error } : span.status,
    };
    this.changes.push({ type: "ended", span: ended });
  }

  content(text: string, json: boolean): string {
    const redactor = this.options.redactor ?? defaultSecretRedactor;
    return (json ? redactor.redactJsonText(text) : redactor.redactText(text)).text;
  }

  /** The open send, opened at this event if there is none (a turn that has no user message before it). */
  sendKey(): string {
    if (this.send !== undefined && this.open[this.send] !== undefined) return this.send;
    const key = `send:${this.position}`;
    const provider = this.provider;
    this.start({
      key,
      parentKey: undefined,
      traceKey: key,
      name: "invoke_agent",
      kind: "internal",
      attributes: {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.conversation.id": this.sessionId,
        ...(provider !== undefined ? { "gen_ai.provider.name": providerName(provider.format, provider.id), "gen_ai.request.model": requestModel(provider.id, provider.format) } : {}),
        "turnlog.session.id": this.sessionId,
        "turnlog.stream_position": this.position,
      },
    });
    this.send = key;
    return key;
  }

  /** Ends the open send and everything still open under it. */
  endSend(attributes: SpanAttributes, error?: string): void {
    const send = this.send;
    if (send === undefined) return;
    for (const span of Object.values(this.open)) {
      if (span.parentKey === send) this.end(span.key, span.attributes["gen_ai.operation.name"] === "execute_tool" ? { "turnlog.outcome": "pending" } : {});
    }
    this.end(send, attributes, error);
    this.send = undefined;
    this.turnSeqs = {};
    this.calls = {};
  }

  state(previous: SpanDerivationState): SpanDerivationState {
    return {
      sessionId: this.sessionId,
      provider: this.provider,
      position: Math.max(previous.position, this.position),
      lastTimeMs: Math.max(previous.lastTimeMs, this.timeMs),
      open: this.open,
      send: this.send,
      turnSeqs: this.turnSeqs,
      calls: this.calls,
      natives: this.natives,
      toolApprovals: this.toolApprovals,
    };
  }
}

/**
 * Applies one recorded event of the session: the spans it opens, the moments it adds to open
 * spans, and the spans it closes, with the state after it. Pure: the same state and event give
 * the same result; events of other types (diagnostics, history) change nothing. An event at or
 * before the state's position was applied already and changes nothing. The event is read as every
 * reader reads it (`readEvent`: upcast, checked — one not of the catalogue throws
 * `UnexpectedEventError`).
 *
 * @example
 * const { state: next, changes } = deriveSpans(state, recorded);
 * for (const change of changes) if (change.type === "ended") export(change.span);
 */
export function deriveSpans(
  state: SpanDerivationState,
  recorded: RecordedEvent,
  options: SpanDerivationOptions = {},
): { state: SpanDerivationState; changes: SpanChange[] } {
  if (recorded.meta.streamPosition <= state.position) return { state, changes: [] };
  const step = new Step(state, Date.parse(recorded.meta.recordedAt), recorded.meta.streamPosition, options);
  apply(step, readEvent(recorded));
  return { state: step.state(state), changes: step.changes };
}

function apply(step: Step, event: TurnlogEvent): void {
  switch (event.type) {
    case "session.started":
      step.sessionId = step.sessionId === "" ? event.data.sessionId : step.sessionId;
      step.provider = { id: event.data.provider.id, format: event.data.provider.format };
      return;
    case "session.config.changed":
      if (event.data.provider !== undefined) step.provider = { id: event.data.provider.id, format: event.data.provider.format };
      return;
    case "session.user_message.added":
      // A send still open here never ended (the runtime refuses a send while a turn is unfinished).
      step.endSend({ "turnlog.outcome": "abandoned" });
      step.sendKey();
      return;
    case "turn.started":
      step.sendKey();
      step.turnSeqs = { ...step.turnSeqs, [event.data.turnId]: event.data.turnSeq };
      return;
    case "turn.provider.requested":
      return providerRequested(step, event);
    case "turn.provider.responded": {
      const usage = event.data.usage;
      step.end(`chat:${event.data.turnId}:${event.data.attempt}`, {
        "gen_ai.response.finish_reasons": [event.data.finishReason],
        ...(usage?.inputTokens !== undefined ? { "gen_ai.usage.input_tokens": usage.inputTokens } : {}),
        ...(usage?.outputTokens !== undefined ? { "gen_ai.usage.output_tokens": usage.outputTokens } : {}),
      });
      return;
    }
    case "turn.provider.failed":
      step.end(
        `chat:${event.data.turnId}:${event.data.attempt}`,
        { "turnlog.retryable": event.data.retryable, ...(event.data.status !== undefined ? { "http.response.status_code": event.data.status } : {}) },
        event.data.kind,
      );
      return;
    case "turn.tool_calls.normalized": {
      const calls = { ...step.calls };
      for (const call of event.data.calls) calls[call.id] = { name: call.name, turnId: event.data.turnId, argumentsText: call.argumentsText };
      step.calls = calls;
      return;
    }
    case "turn.tool_calls.planned":
      for (const plan of event.data.plans) {
        if (plan.status !== "rejected") continue;
        const reason = plan.reason ?? "schema-invalid";
        startCall(step, event.data.turnId, plan.callId, { "turnlog.decision": "rejected", "turnlog.rule": `rejected:${reason}` });
        step.end(`tool:${plan.callId}`, { "turnlog.outcome": "rejected" }, reason);
      }
      return;
    case "turn.tool_calls.gated":
      for (const decision of event.data.decisions) {
        const key = `tool:${decision.callId}`;
        const approver = decision.rule.startsWith("approval:tool=") || decision.rule.startsWith("approval:command=") ? earlierApprover(step, decision.callId, decision.rule) : undefined;
        startCall(step, event.data.turnId, decision.callId, {
          "turnlog.decision": decision.decision,
          "turnlog.rule": decision.rule,
          ...(decision.riskClass !== null ? { "turnlog.risk_class": decision.riskClass } : {}),
          ...(approver !== undefined ? { "turnlog.approver": approver } : {}),
        });
        if (decision.decision === "ask") step.event(key, "turnlog.approval.requested", { "turnlog.rule": decision.rule });
        else if (decision.decision === "deny") step.end(key, { "turnlog.outcome": "denied" }, "denied");
        else if (decision.decision === "block") step.end(key, { "turnlog.outcome": "blocked" }, "blocked");
      }
      return;
    case "turn.approval.granted": {
      const key = `tool:${event.data.callId}`;
      step.event(key, "turnlog.approval.granted", { "turnlog.approver": event.data.by, "turnlog.approval.scope": event.data.scope });
      step.set(key, { "turnlog.approver": event.data.by });
      const tool = step.open[key]?.attributes["gen_ai.tool.name"];
      if (event.data.scope === "tool" && typeof tool === "string") {
        step.toolApprovals = [...step.toolApprovals, { tool, by: event.data.by, commandPrefix: event.data.commandPrefix, commandScope: event.data.commandScope }];
      }
      return;
    }
    case "turn.approval.denied": {
      const key = `tool:${event.data.callId}`;
      step.event(key, "turnlog.approval.denied", { "turnlog.approver": event.data.by });
      step.end(key, { "turnlog.approver": event.data.by, "turnlog.outcome": "denied" }, event.data.rule === "approval:timeout" ? "approval-timeout" : "denied-by-user");
      return;
    }
    case "turn.tool.started":
      step.event(`tool:${event.data.callId}`, "turnlog.tool.started", { "turnlog.tool.group": event.data.group });
      return;
    case "turn.tool.succeeded":
      step.end(`tool:${event.data.callId}`, {
        "turnlog.outcome": "succeeded",
        "turnlog.tool.duration_ms": event.data.durationMs,
        ...(step.options.includeContent === true ? { "gen_ai.tool.call.result": step.content(event.data.output, false) } : {}),
      });
      return;
    case "turn.tool.failed":
      step.end(
        `tool:${event.data.callId}`,
        {
          "turnlog.outcome": "failed",
          "turnlog.tool.duration_ms": event.data.durationMs,
          ...(step.options.includeContent === true ? { "gen_ai.tool.call.result": step.content(event.data.message, false) } : {}),
        },
        event.data.code,
      );
      return;
    case "turn.tool.interrupted":
      step.end(`tool:${event.data.callId}`, { "turnlog.outcome": "interrupted" }, "interrupted");
      return;
    case "turn.completed":
      step.endSend({ "turnlog.outcome": "completed" });
      return;
    case "turn.stopped":
      step.endSend({ "turnlog.outcome": "stopped", "turnlog.reason": event.data.reason });
      return;
    case "turn.failed":
      step.endSend({ "turnlog.outcome": "failed", "turnlog.reason": event.data.reason }, event.data.reason);
      return;
    case "session.native_tool.requested":
      step.natives = {
        ...step.natives,
        [event.data.callId]: { tool: event.data.tool, input: event.data.input, by: event.data.by, approvedBy: event.data.approvedBy },
      };
      return;
    case "session.native_tool.decided":
      return nativeDecided(step, event);
    case "session.native_tool.completed": {
      const key = `native:${event.data.callId}`;
      const result = event.data.ok ? event.data.output : event.data.message;
      const content: SpanAttributes = step.options.includeContent === true && result !== undefined ? { "gen_ai.tool.call.result": step.content(result, false) } : {};
      const code = event.data.code ?? "failed";
      if (event.data.ok) step.end(key, { "turnlog.outcome": "succeeded", "turnlog.tool.duration_ms": event.data.durationMs, ...content });
      else step.end(key, { "turnlog.outcome": code === "interrupted" ? "interrupted" : "failed", "turnlog.tool.duration_ms": event.data.durationMs, ...content }, code);
      return;
    }
    case "session.decisions.upgraded":
    case "session.tools.changed":
    case "session.environment.observed":
    case "turn.results.packetized":
    case "turn.continued":
    case "turn.cancel.requested":
    case "session.history.compacted":
    case "session.diagnostic.recorded":
      // No span opens, closes or gains a moment: the state moves on to the next position only.
      return;
    default:
      event satisfies never;
  }
}

function providerRequested(step: Step, event: EventOf<"turn.provider.requested">): void {
  const send = step.sendKey();
  const model = requestModel(event.data.providerId, event.data.format);
  const operation = findProviderFormat(event.data.format)?.otel.operationName ?? "chat";
  const turnSeq = step.turnSeqs[event.data.turnId];
  const key = `chat:${event.data.turnId}:${event.data.attempt}`;
  step.start({
    key,
    parentKey: send,
    traceKey: step.open[send]?.traceKey ?? send,
    name: `${operation} ${model}`,
    kind: "client",
    attributes: {
      "gen_ai.operation.name": operation,
      "gen_ai.provider.name": providerName(event.data.format, event.data.providerId),
      "gen_ai.request.model": model,
      "gen_ai.conversation.id": step.sessionId,
      "turnlog.provider.id": event.data.providerId,
      "turnlog.turn.id": event.data.turnId,
      ...(turnSeq !== undefined ? { "turnlog.turn.seq": turnSeq } : {}),
      "turnlog.attempt": event.data.attempt,
      "turnlog.stream_position": step.position,
    },
  });
}

/** Opens a model call's execute_tool span under the send, with the attributes its decision gave. */
function startCall(step: Step, turnId: string, callId: string, decided: SpanAttributes): void {
  const send = step.sendKey();
  const call = step.calls[callId];
  const name = call?.name ?? "unknown";
  const turnSeq = step.turnSeqs[turnId];
  const argumentsText = call?.argumentsText;
  step.start({
    key: `tool:${callId}`,
    parentKey: send,
    traceKey: step.open[send]?.traceKey ?? send,
    name: `execute_tool ${name}`,
    kind: "internal",
    attributes: {
      "gen_ai.operation.name": "execute_tool",
      "gen_ai.tool.name": name,
      "gen_ai.tool.call.id": callId,
      "gen_ai.tool.type": "function",
      "gen_ai.conversation.id": step.sessionId,
      ...decided,
      "turnlog.turn.id": turnId,
      ...(turnSeq !== undefined ? { "turnlog.turn.seq": turnSeq } : {}),
      "turnlog.stream_position": step.position,
      ...(step.options.includeContent === true && argumentsText !== undefined ? { "gen_ai.tool.call.arguments": step.content(argumentsText, true) } : {}),
    },
  });
}

/** Who allowed a call through an earlier `tool`-scope approval (the latest that matches its rule). */
function earlierApprover(step: Step, callId: string, rule: string): string | undefined {
  const tool = step.calls[callId]?.name;
  const prefix = rule.startsWith("approval:command=") ? rule.slice("approval:command=".length) : undefined;
  // Version 5 names the exact command in the rule (`approval:command=ls -la`), earlier versions the prefix.
  const matches = (approval: Step["toolApprovals"][number]) =>
    prefix === undefined || approval.commandPrefix === prefix || (approval.commandScope !== undefined && describeCommandScope(approval.commandScope) === prefix);
  return step.toolApprovals.filter((approval) => approval.tool === tool && matches(approval)).at(-1)?.by;
}

function nativeDecided(step: Step, event: EventOf<"session.native_tool.decided">): void {
  const callId = event.data.callId;
  const request = step.natives[callId];
  const natives = { ...step.natives };
  delete natives[callId];
  step.natives = natives;
  const key = `native:${callId}`;
  const tool = request?.tool ?? event.data.plan.tool ?? "unknown";
  const decision = event.data.decision;
  const rejected = event.data.plan.status === "rejected" ? (event.data.plan.reason ?? "schema-invalid") : undefined;
  const approver = decision?.decision === "ask" ? request?.approvedBy : undefined;
  step.start({
    key,
    parentKey: undefined,
    traceKey: key,
    name: `execute_tool ${tool}`,
    kind: "internal",
    attributes: {
      "gen_ai.operation.name": "execute_tool",
      "gen_ai.tool.name": tool,
      "gen_ai.tool.call.id": callId,
      "gen_ai.tool.type": "function",
      "gen_ai.conversation.id": step.sessionId,
      "turnlog.session.id": step.sessionId,
      "turnlog.decision": rejected !== undefined ? "rejected" : (decision?.decision ?? "rejected"),
      "turnlog.rule": rejected !== undefined ? `rejected:${rejected}` : (decision?.rule ?? ""),
      ...(decision !== null && decision.riskClass !== null ? { "turnlog.risk_class": decision.riskClass } : {}),
      ...(approver !== undefined ? { "turnlog.approver": approver } : {}),
      ...(request !== undefined ? { "turnlog.requested_by": request.by } : {}),
      "turnlog.stream_position": step.position,
      ...(step.options.includeContent === true && request !== undefined ? { "gen_ai.tool.call.arguments": step.content(JSON.stringify(request.input) ?? "null", true) } : {}),
    },
  });
  if (event.data.runs) return;
  if (rejected !== undefined) step.end(key, { "turnlog.outcome": "rejected" }, rejected);
  else if (decision?.decision === "block") step.end(key, { "turnlog.outcome": "blocked" }, "blocked");
  else if (decision?.decision === "ask") step.end(key, { "turnlog.outcome": "denied" }, "needs-approval");
  else step.end(key, { "turnlog.outcome": "denied" }, "denied");
}

/**
 * Every span of a session's events, in the order they ended. A span still open after the last
 * event (a send awaiting approval, a call running) is cut there: it ends at the last event's time
 * and carries `turnlog.open: true`.
 *
 * @example
 * const spans = sessionSpans(await reader.events("s1"), { includeContent: false });
 * spans.filter((span) => span.name.startsWith("execute_tool") && span.status.code === "error");
 */
export function sessionSpans(events: readonly RecordedEvent[], options: SpanDerivationOptions & { sessionId?: string } = {}): DerivedSpan[] {
  let state = initialSpanState(options.sessionId ?? "");
  const spans: DerivedSpan[] = [];
  for (const event of events) {
    const step = deriveSpans(state, event, options);
    state = step.state;
    for (const change of step.changes) if (change.type === "ended") spans.push(change.span);
  }
  for (const span of Object.values(state.open)) {
    spans.push({ ...span, endTimeMs: state.lastTimeMs, attributes: { ...span.attributes, "turnlog.open": true } });
  }
  return spans;
}
