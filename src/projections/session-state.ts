import { enableMapSet, freeze, isDraft, original } from "immer";
import type { Budgets } from "../contracts/budgets.js";
import type { EventOf, Packet, RejectionReason, StoredCut } from "../contracts/events.js";
import type { GateDecision, PolicySnapshot } from "../contracts/policy.js";
import type { ProviderFormat } from "../contracts/provider.js";
import type { RiskClass } from "../contracts/risk.js";
import type { ToolSnapshot } from "../contracts/tools.js";
import type { RecordedTurnlogEvent } from "../log/event-log.js";
import { canonicalJson } from "../util/digest.js";
import { CallMap } from "./call-map.js";
import type { Projection } from "./projection.js";

// Calls and counters live in Maps: keys come from models and providers, and a Map never lets
// `__proto__` reach a prototype.
enableMapSet();

/**
 * A message in the familiar session-message shape (docs/design.md#5-projections), with the stream position of the
 * event it comes from (so history compaction can say "everything before position N").
 */
export type SessionMessage = (
  | { role: "user"; content: string }
  | {
      role: "agent";
      content: string;
      metadata: {
        kind: "provider-tool-call-turn";
        turnId: string;
        providerToolCalls: { id: string; name: string; argumentsText?: string; argumentsRedacted?: boolean }[];
        nativeReplaySafe: boolean;
        unsafeReasons?: string[];
      };
    }
  | { role: "tool"; content: string; metadata: { tool_call_id: string; tool_name: string; ok: boolean; errorCode?: string } }
  | { role: "agent"; content: string; metadata?: undefined }
) & { position: number };

export type CallStatus =
  | "proposed"
  | "planned"
  | "rejected"
  | "allowed"
  | "awaiting-approval"
  | "denied"
  | "blocked"
  | "running"
  | "succeeded"
  | "failed"
  | "interrupted";

export interface CallState {
  callId: string;
  turnId: string;
  index: number;
  name: string;
  argumentsText?: string;
  /** The arguments held a secret: `argumentsText` is the redacted form. */
  argumentsRedacted?: boolean;
  status: CallStatus;
  input?: unknown;
  rejection?: { reason: RejectionReason; issues?: { path: string; message: string }[] };
  decision?: { decision: GateDecision; rule: string; riskClass: RiskClass | null; fingerprint: string; contained?: boolean };
  /**
   * The answer to a held call. `rule: "approval:timeout"`: nobody answered before its deadline
   * (decisions version 7 on), and the session's continuer denied it.
   */
  approval?: { granted: boolean; by: string; note?: string; scope: string; fingerprint: string; rule?: "approval:timeout" };
  /** When the gate held the call for a person: its `turn.tool_calls.gated` event's recorded time. */
  heldAt?: string;
  /**
   * The person approved the call with edited arguments (`turn.approval.granted.arguments`,
   * docs/policy.md#edit-on-approval): `input` and `argumentsText` are the edited ones, which the call
   * runs with and the history shows; this keeps the call as the model proposed it.
   */
  edit?: { by: string; proposedInput: unknown; proposedArgumentsText?: string; proposedFingerprint: string };
  /** `stored`: the output was logged cut (`turn.tool.succeeded.stored`); `output` is its head and tail. */
  result?: { kind: "succeeded"; output: string; stored?: StoredCut } | { kind: "failed"; code: string; message: string; stored?: StoredCut } | { kind: "interrupted" };
  packet?: Packet;
  startedAt?: string;
  endedAt?: string;
  durationMs?: number;
  /** Stream position of the last event about this call. */
  position: number;
}

export type TurnStatus = "active" | "completed" | "continued" | "stopped" | "failed";

export interface TurnState {
  turnId: string;
  turnSeq: number;
  iteration: number;
  status: TurnStatus;
  /** Last provider attempt requested. */
  attempt: number;
  response?: EventOf<"turn.provider.responded">["data"];
  /** Why the response's replay echo was not kept (it is only kept for a group that is safe to replay). */
  echoDropped?: "echo_oversized" | "unsafe_arguments" | "echo_secret";
  failures: { kind: string; retryable: boolean; message?: string }[];
  callIds: string[];
  text?: string;
  reason?: string;
  /** Stream position of `turn.started`. */
  startPosition: number;
}

export interface SessionOutcome {
  status: "completed" | "awaiting-approval" | "stopped" | "failed";
  text?: string;
  reason?: string;
  /** For a failed turn: the `turn.failed` message (redacted, as logged), when it has one. */
  message?: string;
}

/** A host-routed call (`session.runTool`): gated and logged, never part of a provider turn or history. */
export interface HostCallState {
  callId: string;
  tool: string;
  input: unknown;
  inputRedacted: boolean;
  by: string;
  approvedBy?: string;
  plan?: import("../contracts/events.js").ToolPlan;
  decision?: { decision: GateDecision; rule: string; riskClass: RiskClass | null; fingerprint: string; contained?: boolean } | null;
  runs?: boolean;
  result?: { ok: boolean; output?: string; code?: string; message?: string; durationMs: number };
  position: number;
}

export interface SessionState {
  sessionId: string;
  policy: PolicySnapshot | null;
  tools: ToolSnapshot[];
  budgets: Budgets | null;
  concurrency: number;
  provider: { id: string; format: ProviderFormat; maxAttempts: number } | null;
  messages: SessionMessage[];
  turns: TurnState[];
  /**
   * Every call of the session by ID, in the order proposed. A read-only `Map` (a `CallMap`,
   * persistent underneath: a new state shares every unchanged call with the one before it). In a
   * state folded in place (`SessionFold({ mutable: true })`) it is the fold's own thawed CallMap,
   * which changes as the fold goes on, like the rest of that state.
   */
  calls: Map<string, CallState>;
  /** Counters for the current user message (budgets are per user message). */
  current: {
    userMessages: number;
    iterations: number;
    toolCalls: number;
    startedAt: string | null;
    /**
     * Time the turn spent parked for a person (from the gate's ask to the first event after the
     * answers): it does not count against the wall-clock budget, which measures the agent's work.
     */
    pausedMs: number;
    pausedSince: string | null;
    /** (tool, error code) → count of failures, rejections, denials and blocks. */
    failures: Map<string, number>;
  };
  totals: { turns: number; toolCalls: number; inputTokens: number; outputTokens: number };
  lastOutcome: SessionOutcome | null;
  /** Host-routed calls, in order. */
  hostCalls: HostCallState[];
  /** The summary that replaces the history recorded before `beforePosition` (the last compaction). */
  historySummary: { beforePosition: number; summary: string; unitsSummarized: number; compressor: string } | null;
  /** History settings in force, from `session.started`. */
  history: { maxTokens: number; system?: string } | null;
  /** The session this one was forked from, and the last copied position. */
  forkedFrom: { sessionId: string; position: number } | null;
  /** Tools a person approved for the rest of the session, with who and where (for the audit). */
  /** `tool`-scope approvals, in order; `commandPrefix` and `commandScope` for a command tool's (see `turn.approval.granted`). */
  toolApprovals: { tool: string; callId: string; by: string; note?: string; position: number; commandPrefix?: string; commandScope?: string }[];
  /**
   * IDs of calls a replay fold retired with their finished turns (`SessionFold({ retain: "live" })`):
   * kept so a provider ID reused later is still seen as used. Absent from a full projection.
   */
  retiredCallIds?: Set<string>;
  /**
   * The decisions version the next decision is computed under (src/core/decision-versions.ts):
   * `session.started`'s (1 when it says none), moved forward by `session.decisions.upgraded`.
   */
  decisionsVersion: number;
  /** What the gate reads of the machine, as `session.started` recorded it (decisions version 2 on). */
  environment: { tempDir: string; homeDir: string } | null;
  /** Real paths the gate observed through symlinks (`session.environment.observed`): path → real path. */
  realPaths: Map<string, string>;
  /** Git entries the gate read (`session.environment.observed.gitLinks`): entry → the directories it names. */
  gitLinks: Map<string, { via: "repository" | "gitdir" | "commondir" | "worktree"; directory: string }[]>;
  /**
   * What tools' `needsApproval` answered (`session.environment.observed.hostRules`, decisions
   * version 7 on): call ID (a model's call or a host-routed one) → the answer, and the error when
   * the predicate failed (which asks).
   */
  hostRules: Map<string, { needsApproval: boolean; error?: string }>;
  /** Stream position of the last event folded. */
  position: number;
  lastRecordedAt: string | null;
}

function initialState(): SessionState {
  return {
    sessionId: "",
    policy: null,
    tools: [],
    budgets: null,
    concurrency: 4,
    provider: null,
    messages: [],
    turns: [],
    calls: new CallMap(),
    current: { userMessages: 0, iterations: 0, toolCalls: 0, startedAt: null, pausedMs: 0, pausedSince: null, failures: new Map() },
    totals: { turns: 0, toolCalls: 0, inputTokens: 0, outputTokens: 0 },
    lastOutcome: null,
    toolApprovals: [],
    hostCalls: [],
    historySummary: null,
    history: null,
    forkedFrom: null,
    decisionsVersion: 1,
    environment: null,
    realPaths: new Map(),
    gitLinks: new Map(),
    hostRules: new Map(),
    position: 0,
    lastRecordedAt: null,
  };
}

type Draft = import("immer").Draft<SessionState>;

function turnOf(draft: Draft, turnId: string) {
  // The active turn is nearly always the last one; search from the end.
  for (let index = draft.turns.length - 1; index >= 0; index -= 1) {
    const turn = draft.turns[index];
    if (turn?.turnId === turnId) return turn;
  }
  throw new Error(`session projection: event for unknown turn ${turnId}`);
}

/**
 * The calls as they are, never as an immer draft: drafting them would copy every call of the
 * session (see CallMap). A map that is not yet a CallMap (a state cloned with `structuredClone`,
 * or from before) becomes one here, once.
 */
function callsOf(draft: Draft): CallMap<CallState> {
  const value = draft.calls as unknown as Map<string, CallState>;
  return CallMap.from(isDraft(value) ? (original(value) as Map<string, CallState>) : value);
}

/**
 * The state's calls when they are a thawed CallMap — a state folded in place (`thawState`, a
 * mutable `SessionFold`) — to change in place; undefined for an immer draft or a persistent map,
 * whose calls are replaced by a new CallMap instead. An immer draft's `calls` is a draft of the
 * map, never the map itself, so it is never taken for a thawed one.
 */
function thawedCalls(draft: Draft): CallMap<CallState> | undefined {
  const value = draft.calls as unknown;
  return value instanceof CallMap && value.thawed ? (value as CallMap<CallState>) : undefined;
}

/**
 * Replaces one call with `next(call)` (frozen): in place in a thawed map, else in a new CallMap.
 * Returns the new call.
 */
function replaceCall(draft: Draft, callId: string, next: (call: CallState) => CallState): CallState {
  const thawed = thawedCalls(draft);
  const calls = thawed ?? callsOf(draft);
  const call = calls.get(callId);
  if (call === undefined) throw new Error(`session projection: event for unknown call ${callId}`);
  const replaced = next(call);
  if (thawed !== undefined) thawed.put(callId, replaced);
  else (draft as { calls: Map<string, CallState> }).calls = calls.with(callId, replaced);
  return replaced;
}

/** Changes one call: `change` gets a copy to write to, which then replaces the call, frozen as immer would have frozen it. */
function updateCall(draft: Draft, callId: string, change: (call: CallState) => void): CallState {
  return replaceCall(draft, callId, (call) => {
    const next = { ...call };
    change(next);
    return freeze(next, true);
  });
}

/** Changes one call by a patch (see `patched`). */
function patchCall(draft: Draft, callId: string, patch: Partial<CallState>): void {
  replaceCall(draft, callId, (call) => patched(call, patch));
}

/**
 * `{ ...call, ...patch }`, frozen as `freeze(…, true)` would leave it. A frozen call is frozen all
 * the way down — immer's deep freeze also takes a frozen object for a deeply frozen one and stops
 * there — so only the patch's values are walked: immer's walk over every property of a changed
 * call was a tenth of a fold in place.
 */
function patched(call: CallState, patch: Partial<CallState>): CallState {
  const next = { ...call, ...patch };
  if (!Object.isFrozen(call)) return freeze(next, true);
  for (const key in patch) freeze(patch[key as keyof CallState], true);
  return Object.freeze(next);
}

/** Sets a call (a new one goes last), frozen: in place in a thawed map, else in a new CallMap. */
function setCall(draft: Draft, call: CallState): void {
  const thawed = thawedCalls(draft);
  if (thawed !== undefined) thawed.put(call.callId, freeze(call, true));
  else (draft as { calls: Map<string, CallState> }).calls = callsOf(draft).with(call.callId, freeze(call, true));
}

/**
 * `{ ...data, ...fields }` for an event's `data` (parsed from JSON). Node 20's V8 takes a slow path
 * for every property added to an object spread from a parsed one: about 8 µs per `turn.started`,
 * against 0.4 µs this way, and the turns it made were slow to change afterwards too (a fold in
 * place spent a sixth of its time there). `Object.assign` copies the same own properties in the
 * same order, but it would take a `"__proto__"` key for the prototype, so data holding one is spread.
 */
function withFields<Data extends object, Fields extends object>(data: Data, fields: Fields): Data & Fields {
  return Object.hasOwn(data, "__proto__") ? { ...data, ...fields } : Object.assign({}, data, fields);
}

function countFailure(draft: Draft, tool: string, code: string) {
  const key = `${tool}\u0000${code}`;
  draft.current.failures.set(key, (draft.current.failures.get(key) ?? 0) + 1);
}

/** A pause starts when the gate asks a person, and ends with the first event after the answers. */
function trackPause(draft: Draft, type: string, recordedAt: string): void {
  const current = draft.current;
  if (current.pausedSince !== null && type !== "turn.approval.granted" && type !== "turn.approval.denied") {
    current.pausedMs += Math.max(0, Date.parse(recordedAt) - Date.parse(current.pausedSince));
    current.pausedSince = null;
  }
}

/**
 * What an event does to the calls it is about, and the messages it adds, when that is all it
 * does besides moving `position` and `lastRecordedAt`: a tool call's start and end, a plan with
 * nothing rejected, a gate that allowed every call, the packets. Each change is a patch: the call
 * becomes `{ ...call, ...patch }`. `evolve` applies these in an immer draft (or in place) like
 * every event; `evolveCallOnly` applies them without one. Undefined for any other event (or one
 * that also counts a failure or opens a pause), which only `evolve` folds.
 */
function callChanges(event: RecordedTurnlogEvent): { changes: [callId: string, patch: Partial<CallState>][]; messages?: SessionMessage[] } | undefined {
  const recorded = event;
  const position = recorded.meta.streamPosition;
  const recordedAt = recorded.meta.recordedAt;
  switch (event.type) {
    case "turn.tool.started":
      return { changes: [[event.data.callId, { position, status: "running", startedAt: recordedAt }]] };
    case "turn.tool.succeeded": {
      const { output, stored, durationMs } = event.data;
      const result = { kind: "succeeded" as const, output, ...(stored !== undefined ? { stored } : {}) };
      return { changes: [[event.data.callId, { position, status: "succeeded", result, endedAt: recordedAt, durationMs }]] };
    }
    case "turn.tool.interrupted":
      return { changes: [[event.data.callId, { position, status: "interrupted", result: { kind: "interrupted" }, endedAt: recordedAt }]] };
    case "turn.tool_calls.planned":
      if (!event.data.plans.every((plan) => plan.status === "planned")) return undefined;
      return { changes: event.data.plans.map((plan) => [plan.callId, { position, status: "planned", input: plan.input }]) };
    case "turn.tool_calls.gated":
      if (!event.data.decisions.every((entry) => entry.decision === "allow")) return undefined;
      return {
        changes: event.data.decisions.map(({ callId, decision, rule, riskClass, fingerprint, contained }) => [
          callId,
          { position, decision: { decision, rule, riskClass, fingerprint, ...(contained !== undefined ? { contained } : {}) }, status: "allowed" },
        ]),
      };
    case "turn.results.packetized":
      return {
        changes: event.data.packets.map((packet) => [packet.callId, { packet }]),
        messages: event.data.packets.map((packet) => ({
          role: "tool",
          content: packet.content,
          metadata: { tool_call_id: packet.callId, tool_name: packet.tool, ok: packet.ok, ...(packet.errorCode !== undefined ? { errorCode: packet.errorCode } : {}) },
          position,
        })),
      };
    case "session.started":
    case "session.config.changed":
    case "session.decisions.upgraded":
    case "session.tools.changed":
    case "session.environment.observed":
    case "session.user_message.added":
    case "turn.started":
    case "turn.provider.requested":
    case "turn.provider.responded":
    case "turn.provider.failed":
    case "turn.tool_calls.normalized":
    case "turn.approval.granted":
    case "turn.approval.denied":
    case "turn.tool.failed":
    case "turn.completed":
    case "turn.continued":
    case "turn.stopped":
    case "turn.failed":
    case "turn.cancel.requested":
    case "session.native_tool.requested":
    case "session.native_tool.decided":
    case "session.native_tool.completed":
    case "session.history.compacted":
    case "session.diagnostic.recorded":
      // A failed call also counts a failure; the others change more than calls and messages.
      return undefined;
    default:
      return event satisfies never;
  }
}

const callChangeTypes = new Set(["turn.tool.started", "turn.tool.succeeded", "turn.tool.interrupted", "turn.tool_calls.planned", "turn.tool_calls.gated", "turn.results.packetized"]);

/** Whether `evolveCallOnly` may be able to fold an event of this type (see `callChanges`). */
export function isCallOnlyEvent(type: string): boolean {
  return callChangeTypes.has(type);
}

/**
 * Folds an event that only changes calls and adds messages (`callChanges`) into a new frozen state
 * without an immer draft: the same state `evolve` gives, for a fraction of the cost (docs/performance.md#what-makes-a-tool-call-cheap-issue-15 — these are most of the events of a turn, and a draft per event was the largest part of
 * folding them). Returns `undefined` when the event does more, or a pause for a person is open
 * (its end is a change `evolve` makes), so the caller folds it with `evolve`.
 */
export function evolveCallOnly(state: SessionState, recorded: RecordedTurnlogEvent): SessionState | undefined {
  if (!isCallOnlyEvent(recorded.type) || state.current.pausedSince !== null) return undefined;
  const described = callChanges(recorded);
  if (described === undefined) return undefined;
  let calls = CallMap.from(state.calls);
  for (const [callId, patch] of described.changes) {
    const call = calls.get(callId);
    if (call === undefined) throw new Error(`session projection: event for unknown call ${callId}`);
    calls = calls.with(callId, patched(call, patch));
  }
  const messages = described.messages === undefined ? state.messages : (Object.freeze([...state.messages, ...described.messages.map((message) => freeze(message, true))]) as SessionMessage[]);
  return Object.freeze({ ...state, position: recorded.meta.streamPosition, lastRecordedAt: recorded.meta.recordedAt, calls, messages });
}

/**
 * The turn's own events that the live loop stages on every turn (its start, the request, the answer,
 * the calls normalized, the history diagnostics, its end), folded without an immer draft: the same
 * state `evolve` gives, frozen as immer leaves it — the root, the turn changed and each collection
 * changed are new objects with their keys in the same order, everything else is shared. An immer
 * draft per batch of them was most of what staging a turn's decisions cost after the calls' events
 * went draft-free (docs/performance.md#realistic-calls-issue-35). `evolve` stays the reference:
 * property-tests/fold-in-place.test.ts folds random recorded sessions both ways and compares the
 * states after every event. Undefined for any other event, while a pause for a person is open (its
 * end is a change `evolve` makes), or for an event about a turn the state does not hold (which
 * `evolve` refuses), so the caller folds it with `evolve`.
 */
function evolveTurnEvent(state: SessionState, recorded: RecordedTurnlogEvent): SessionState | undefined {
  if (state.current.pausedSince !== null) return undefined;
  const position = recorded.meta.streamPosition;
  const recordedAt = recorded.meta.recordedAt;
  const moved = { position, lastRecordedAt: recordedAt };
  switch (recorded.type) {
    case "session.diagnostic.recorded":
      return Object.freeze({ ...state, ...moved });
    case "turn.started": {
      const { data } = recorded;
      const turn = freeze(withFields(data, { status: "active" as TurnStatus, attempt: 0, failures: [], callIds: [], startPosition: position }), true);
      const current = Object.is(state.current.iterations, data.iteration) ? state.current : Object.freeze({ ...state.current, iterations: data.iteration });
      const totals = Object.freeze({ ...state.totals, turns: state.totals.turns + 1 });
      return Object.freeze({ ...state, turns: frozenList([...state.turns, turn]), current, totals, ...moved });
    }
    case "turn.provider.requested":
      return withTurn(state, recorded.data.turnId, moved, (turn) => (Object.is(turn.attempt, recorded.data.attempt) ? turn : { ...turn, attempt: recorded.data.attempt }));
    case "turn.provider.responded": {
      const { data } = recorded;
      const inputTokens = state.totals.inputTokens + (data.usage?.inputTokens ?? 0);
      const outputTokens = state.totals.outputTokens + (data.usage?.outputTokens ?? 0);
      // immer keeps an object whose members were set to the values they had.
      const totals = Object.is(inputTokens, state.totals.inputTokens) && Object.is(outputTokens, state.totals.outputTokens) ? state.totals : Object.freeze({ ...state.totals, inputTokens, outputTokens });
      return withTurn(state, data.turnId, { ...moved, totals }, (turn) => {
        const changed: TurnState = { ...turn, response: data };
        if (data.echoDropped !== undefined) changed.echoDropped = data.echoDropped;
        return changed;
      });
    }
    case "turn.tool_calls.normalized": {
      const { data } = recorded;
      const index = turnIndex(state, data.turnId);
      const turn = state.turns[index];
      if (turn === undefined) return undefined;
      const message: SessionMessage = {
        role: "agent",
        content: data.content,
        metadata: {
          kind: "provider-tool-call-turn",
          turnId: data.turnId,
          providerToolCalls: data.calls.map(({ id, name, argumentsText, argumentsRedacted }) => ({
            id,
            name,
            argumentsText: argumentsText ?? "",
            ...(argumentsRedacted ? { argumentsRedacted } : {}),
          })),
          nativeReplaySafe: data.nativeReplaySafe,
          ...(data.unsafeReasons.length > 0 ? { unsafeReasons: data.unsafeReasons } : {}),
        },
        position,
      };
      let calls = CallMap.from(state.calls);
      for (const call of data.calls) {
        const added: CallState = { callId: call.id, turnId: turn.turnId, index: call.index, name: call.name, status: "proposed", position };
        if (call.argumentsText !== undefined) added.argumentsText = call.argumentsText;
        if (call.argumentsRedacted) added.argumentsRedacted = true;
        calls = calls.with(call.id, freeze(added, true));
      }
      const count = data.calls.length;
      const changedTurn = count === 0 ? turn : Object.freeze({ ...turn, callIds: frozenList([...turn.callIds, ...data.calls.map((call) => call.id)]) });
      const current = count === 0 ? state.current : Object.freeze({ ...state.current, toolCalls: state.current.toolCalls + count });
      const totals = count === 0 ? state.totals : Object.freeze({ ...state.totals, toolCalls: state.totals.toolCalls + count });
      return Object.freeze({
        ...state,
        ...moved,
        messages: frozenList([...state.messages, freeze(message, true)]),
        turns: replacedTurn(state.turns, index, changedTurn),
        calls,
        current,
        totals,
      });
    }
    case "turn.continued":
      return withTurn(state, recorded.data.turnId, moved, (turn) => ({ ...turn, status: "continued", reason: recorded.data.reason }));
    case "turn.completed": {
      const { text } = recorded.data;
      const next = withTurn(state, recorded.data.turnId, moved, (turn) => ({ ...turn, status: "completed", text }));
      if (next === undefined) return undefined;
      const message = Object.freeze({ role: "agent" as const, content: text, position });
      return Object.freeze({ ...next, messages: frozenList<SessionMessage>([...state.messages, message]), lastOutcome: Object.freeze({ status: "completed" as const, text }) });
    }
    default:
      return undefined;
  }
}

/** `items`, frozen, typed as the mutable list the state's type names (immer's states are frozen too). */
function frozenList<Item>(items: Item[]): Item[] {
  return Object.freeze(items) as Item[];
}

/** The index of the turn `turnId` (the last one with that ID, as `turnOf` finds it), or -1. */
function turnIndex(state: SessionState, turnId: string): number {
  for (let index = state.turns.length - 1; index >= 0; index -= 1) if (state.turns[index]?.turnId === turnId) return index;
  return -1;
}

/** `turns` with the one at `index` replaced by `turn` (the same list when it is the same turn), frozen. */
function replacedTurn(turns: readonly TurnState[], index: number, turn: TurnState): TurnState[] {
  if (turns[index] === turn) return turns as TurnState[];
  const copy = [...turns];
  copy[index] = turn;
  return frozenList(copy);
}

/**
 * The state with `fields` set and the turn `turnId` replaced by `change(turn)` (frozen; its new
 * values deep-frozen, as immer leaves them); undefined when the state holds no such turn.
 */
function withTurn(state: SessionState, turnId: string, fields: Partial<SessionState>, change: (turn: TurnState) => TurnState): SessionState | undefined {
  const index = turnIndex(state, turnId);
  const turn = state.turns[index];
  if (turn === undefined) return undefined;
  const changed = change(turn);
  if (changed !== turn) {
    Object.freeze(changed);
    for (const key in changed) freeze(changed[key as keyof TurnState], true);
  }
  return Object.freeze({ ...state, ...fields, turns: replacedTurn(state.turns, index, changed) });
}

const turnEventTypes = new Set(["session.diagnostic.recorded", "turn.started", "turn.provider.requested", "turn.provider.responded", "turn.tool_calls.normalized", "turn.continued", "turn.completed"]);

/** Whether `evolveWithoutDraft` may be able to fold an event of this type. */
export function isDraftFreeEvent(type: string): boolean {
  return callChangeTypes.has(type) || turnEventTypes.has(type);
}

/**
 * Folds the events a live turn stages most — a call's start and end, a plan with nothing rejected, a
 * gate that allowed every call, the packets (`evolveCallOnly`), and the turn's own start, request,
 * answer, normalized calls, diagnostics and end — into a new frozen state without an immer draft:
 * the state `evolve` gives. Undefined when it cannot (see `evolveCallOnly`, `evolveTurnEvent`);
 * the caller then folds the event with `evolve`.
 *
 * @example
 * const next = evolveWithoutDraft(state, event) ?? applyEvent(sessionStateProjection, state, event);
 */
export function evolveWithoutDraft(state: SessionState, recorded: RecordedTurnlogEvent): SessionState | undefined {
  if (callChangeTypes.has(recorded.type)) return evolveCallOnly(state, recorded);
  return turnEventTypes.has(recorded.type) ? evolveTurnEvent(state, recorded) : undefined;
}

/** Applies `callChanges` of the event in a draft (or in place); false when it has none (the event does more). */
function applyCallChanges(draft: Draft, recorded: RecordedTurnlogEvent): boolean {
  const described = callChanges(recorded);
  if (described === undefined) return false;
  for (const [callId, patch] of described.changes) patchCall(draft, callId, patch);
  if (described.messages !== undefined) draft.messages.push(...described.messages);
  return true;
}

function evolve(draft: Draft, event: RecordedTurnlogEvent): void {
  const recorded = event;
  const position = recorded.meta.streamPosition;
  draft.position = position;
  draft.lastRecordedAt = recorded.meta.recordedAt;
  trackPause(draft, event.type, recorded.meta.recordedAt);
  switch (event.type) {
    case "session.started": {
      const { sessionId, policy, tools, budgets, concurrency, provider, history, forkedFrom, decisionsVersion, environment } = event.data;
      Object.assign(draft, {
        sessionId,
        policy,
        tools,
        budgets,
        concurrency,
        provider,
        history: history ?? null,
        forkedFrom: forkedFrom ?? null,
        decisionsVersion: decisionsVersion ?? 1,
        environment: environment ?? null,
      });
      return;
    }
    case "session.decisions.upgraded": {
      draft.decisionsVersion = event.data.to;
      if (event.data.environment !== undefined) draft.environment = event.data.environment;
      return;
    }
    case "session.tools.changed": {
      draft.tools = event.data.tools;
      return;
    }
    case "session.environment.observed": {
      for (const { path, realPath } of event.data.realPaths) draft.realPaths.set(path, realPath);
      for (const { path, links } of event.data.gitLinks ?? []) draft.gitLinks.set(path, links);
      for (const { callId, needsApproval, error } of event.data.hostRules ?? []) draft.hostRules.set(callId, error !== undefined ? { needsApproval, error } : { needsApproval });
      return;
    }
    case "session.config.changed": {
      if (event.data.provider) draft.provider = event.data.provider;
      if (event.data.policy) draft.policy = event.data.policy;
      if (event.data.tools) draft.tools = event.data.tools;
      if (event.data.budgets) draft.budgets = event.data.budgets;
      return;
    }
    case "session.user_message.added": {
      draft.messages.push({ role: "user", content: event.data.content, position });
      draft.current = {
        userMessages: draft.current.userMessages + 1,
        iterations: 0,
        toolCalls: 0,
        startedAt: recorded.meta.recordedAt,
        pausedMs: 0,
        pausedSince: null,
        failures: new Map(),
      };
      draft.lastOutcome = null;
      return;
    }
    case "turn.started": {
      draft.turns.push(withFields(event.data, { status: "active" as TurnStatus, attempt: 0, failures: [], callIds: [], startPosition: position }));
      draft.current.iterations = event.data.iteration;
      draft.totals.turns += 1;
      return;
    }
    case "turn.provider.requested": {
      turnOf(draft, event.data.turnId).attempt = event.data.attempt;
      return;
    }
    case "turn.provider.responded": {
      const turn = turnOf(draft, event.data.turnId);
      turn.response = event.data;
      if (event.data.echoDropped !== undefined) turn.echoDropped = event.data.echoDropped;
      draft.totals.inputTokens += event.data.usage?.inputTokens ?? 0;
      draft.totals.outputTokens += event.data.usage?.outputTokens ?? 0;
      return;
    }
    case "turn.provider.failed": {
      const { kind, retryable, message } = event.data;
      turnOf(draft, event.data.turnId).failures.push(message === undefined ? { kind, retryable } : { kind, retryable, message });
      return;
    }
    case "turn.tool_calls.normalized": {
      const turn = turnOf(draft, event.data.turnId);
      draft.messages.push({
        role: "agent",
        content: event.data.content,
        metadata: {
          kind: "provider-tool-call-turn",
          turnId: event.data.turnId,
          providerToolCalls: event.data.calls.map(({ id, name, argumentsText, argumentsRedacted }) => ({
            id,
            name,
            argumentsText: argumentsText ?? "",
            ...(argumentsRedacted ? { argumentsRedacted } : {}),
          })),
          nativeReplaySafe: event.data.nativeReplaySafe,
          ...(event.data.unsafeReasons.length > 0 ? { unsafeReasons: event.data.unsafeReasons } : {}),
        },
        position,
      });
      for (const call of event.data.calls) {
        turn.callIds.push(call.id);
        const state: CallState = { callId: call.id, turnId: turn.turnId, index: call.index, name: call.name, status: "proposed", position };
        if (call.argumentsText !== undefined) state.argumentsText = call.argumentsText;
        if (call.argumentsRedacted) state.argumentsRedacted = true;
        setCall(draft, state);
      }
      draft.current.toolCalls += event.data.calls.length;
      draft.totals.toolCalls += event.data.calls.length;
      return;
    }
    case "turn.tool_calls.planned": {
      if (applyCallChanges(draft, recorded)) return;
      for (const plan of event.data.plans) {
        updateCall(draft, plan.callId, (call) => {
          call.position = position;
          if (plan.status === "planned") {
            call.status = "planned";
            call.input = plan.input;
          } else {
            call.status = "rejected";
            call.rejection = plan.issues ? { reason: plan.reason ?? "schema-invalid", issues: plan.issues } : { reason: plan.reason ?? "schema-invalid" };
            countFailure(draft, call.name, `rejected:${call.rejection.reason}`);
          }
        });
      }
      return;
    }
    case "turn.tool_calls.gated": {
      if (applyCallChanges(draft, recorded)) return;
      for (const { callId, decision, rule, riskClass, fingerprint, contained } of event.data.decisions) {
        updateCall(draft, callId, (call) => {
          call.position = position;
          call.decision = { decision, rule, riskClass, fingerprint, ...(contained !== undefined ? { contained } : {}) };
          call.status = { allow: "allowed", ask: "awaiting-approval", deny: "denied", block: "blocked" }[decision] as CallStatus;
          if (decision === "ask") call.heldAt = recorded.meta.recordedAt;
          if (decision === "deny" || decision === "block") countFailure(draft, call.name, decision);
        });
      }
      if (event.data.decisions.some((entry) => entry.decision === "ask")) draft.current.pausedSince = recorded.meta.recordedAt;
      return;
    }
    case "turn.approval.granted":
    case "turn.approval.denied": {
      const granted = event.type === "turn.approval.granted";
      const call = updateCall(draft, event.data.callId, (call) => {
        call.position = position;
        call.approval = {
          granted,
          by: event.data.by,
          scope: event.data.scope,
          fingerprint: event.data.fingerprint,
          ...(event.data.note !== undefined ? { note: event.data.note } : {}),
          ...(event.type === "turn.approval.denied" && event.data.rule !== undefined ? { rule: event.data.rule } : {}),
        };
        call.status = granted ? "allowed" : "denied";
        if (event.type === "turn.approval.granted" && event.data.arguments !== undefined) {
          call.edit = {
            by: event.data.by,
            proposedInput: call.input,
            ...(call.argumentsText !== undefined ? { proposedArgumentsText: call.argumentsText } : {}),
            proposedFingerprint: event.data.proposedFingerprint ?? call.decision?.fingerprint ?? "",
          };
          call.input = event.data.arguments;
          call.argumentsText = canonicalJson(event.data.arguments);
        }
      });
      if (call.edit !== undefined && event.type === "turn.approval.granted" && event.data.arguments !== undefined) showEditedCall(draft, call);
      if (granted && event.data.scope === "tool") {
        draft.toolApprovals.push({
          tool: call.name,
          callId: call.callId,
          by: event.data.by,
          position,
          ...(event.data.note !== undefined ? { note: event.data.note } : {}),
          ...(event.data.commandPrefix !== undefined ? { commandPrefix: event.data.commandPrefix } : {}),
          ...(event.data.commandScope !== undefined ? { commandScope: event.data.commandScope } : {}),
        });
      }
      if (!granted) countFailure(draft, call.name, "denied-by-user");
      return;
    }
    case "turn.tool.started":
    case "turn.tool.succeeded":
    case "turn.tool.interrupted":
    case "turn.results.packetized": {
      applyCallChanges(draft, recorded);
      return;
    }
    case "turn.tool.failed": {
      const call = updateCall(draft, event.data.callId, (call) =>
        Object.assign(call, {
          position,
          status: "failed",
          result: { kind: "failed", code: event.data.code, message: event.data.message, ...(event.data.stored !== undefined ? { stored: event.data.stored } : {}) },
          endedAt: recorded.meta.recordedAt,
          durationMs: event.data.durationMs,
        }),
      );
      countFailure(draft, call.name, event.data.code);
      return;
    }
    case "turn.completed": {
      const turn = turnOf(draft, event.data.turnId);
      turn.status = "completed";
      turn.text = event.data.text;
      draft.messages.push({ role: "agent", content: event.data.text, position });
      draft.lastOutcome = { status: "completed", text: event.data.text };
      return;
    }
    case "turn.continued": {
      const turn = turnOf(draft, event.data.turnId);
      turn.status = "continued";
      turn.reason = event.data.reason;
      return;
    }
    case "turn.stopped":
    case "turn.failed": {
      const turn = turnOf(draft, event.data.turnId);
      turn.status = event.type === "turn.stopped" ? "stopped" : "failed";
      turn.reason = event.data.reason;
      const message = event.type === "turn.failed" ? event.data.message : undefined;
      draft.lastOutcome = { status: turn.status as "stopped" | "failed", reason: event.data.reason, ...(message !== undefined ? { message } : {}) };
      return;
    }
    case "session.native_tool.requested": {
      const { callId, tool, input, inputRedacted, by, approvedBy } = event.data;
      draft.hostCalls.push({ callId, tool, input, inputRedacted: inputRedacted === true, by, ...(approvedBy !== undefined ? { approvedBy } : {}), position });
      return;
    }
    case "session.native_tool.decided":
    case "session.native_tool.completed": {
      const call = draft.hostCalls.findLast((candidate) => candidate.callId === event.data.callId);
      if (call === undefined) throw new Error(`session projection: event for unknown native call ${event.data.callId}`);
      call.position = position;
      if (event.type === "session.native_tool.decided") {
        Object.assign(call, { plan: event.data.plan, decision: event.data.decision, runs: event.data.runs });
      } else {
        const { ok, output, code, message, durationMs } = event.data;
        call.result = { ok, durationMs, ...(output !== undefined ? { output } : {}), ...(code !== undefined ? { code } : {}), ...(message !== undefined ? { message } : {}) };
      }
      return;
    }
    case "session.history.compacted": {
      const { beforePosition, summary, unitsSummarized, compressor } = event.data;
      draft.historySummary = { beforePosition, summary, unitsSummarized, compressor: compressor ?? "deterministic" };
      return;
    }
    case "session.diagnostic.recorded":
    // The turn ends with the turn.stopped that follows it.
    case "turn.cancel.requested":
      return;
    default: {
      const unknown: never = event;
      throw new Error(`session projection: unknown event ${(unknown as { type: string }).type}`);
    }
  }
}

/**
 * The provider's tool-call turn as it ran: the call a person approved with edited arguments carries
 * them, so every history built from here (both formats, native or flat) shows the model the call
 * that ran, beside its result.
 */
function showEditedCall(draft: Draft, call: CallState): void {
  for (let index = draft.messages.length - 1; index >= 0; index -= 1) {
    const message = draft.messages[index];
    if (message?.role !== "agent" || message.metadata?.kind !== "provider-tool-call-turn" || message.metadata.turnId !== call.turnId) continue;
    // A new message, never one changed in place: a history built from the old one (cached by the
    // message, history-units.ts) stays what it was.
    const providerToolCalls = message.metadata.providerToolCalls.map((entry) => (entry.id === call.callId ? { ...entry, argumentsText: call.argumentsText ?? "" } : entry));
    draft.messages[index] = { ...message, metadata: { ...message.metadata, providerToolCalls } };
    return;
  }
}

/**
 * A private copy of `state` to fold in place (`applyEventInPlace`, a mutable `SessionFold`) and
 * freeze once at the end (`freezeState`): nothing in it is shared with `state` but the calls
 * themselves (frozen objects, replaced rather than changed), held in a thawed CallMap that the
 * fold changes in place. For a fold of many events that hands out only its last state: it skips
 * the persistent map's and immer's per-event copies (docs/performance.md#what-makes-a-tool-call-cheap-issue-15).
 *
 * @example
 * const working = thawState(snapshot);
 * for (const event of events) applyEventInPlace(sessionStateProjection, working, event);
 * const state = freezeState(working); // deep-equal to foldEvents(sessionStateProjection, events, snapshot)
 */
export function thawState(state: SessionState): SessionState {
  // structuredClone would see a CallMap's entries as an empty Map: the calls are copied apart.
  const copy = structuredClone({ ...state, calls: undefined }) as unknown as SessionState;
  copy.calls = CallMap.thawed(state.calls);
  return copy;
}

/**
 * Freezes a state folded in place (`thawState`) into what an immutable fold gives: the calls in a
 * persistent CallMap, built once, and everything deeply frozen. The state is frozen where it is
 * and returned; fold nothing more into it.
 */
export function freezeState(state: SessionState): SessionState {
  state.calls = CallMap.from(state.calls);
  return freeze(state, true);
}

/** The session-state projection: messages, turns, calls, pending approvals, budget counters. */
export const sessionStateProjection: Projection<SessionState> = { name: "session-state", version: 1, initialState, evolve };

/** The turn still in progress, if any. */
export function activeTurn(state: SessionState): TurnState | undefined {
  const last = state.turns.at(-1);
  return last?.status === "active" ? last : undefined;
}

/** Calls held for a person's answer, in call order. */
export function pendingApprovals(state: SessionState): CallState[] {
  const turn = activeTurn(state);
  if (turn === undefined) return [];
  return turn.callIds.map((id) => state.calls.get(id)).filter((call): call is CallState => call?.status === "awaiting-approval");
}
