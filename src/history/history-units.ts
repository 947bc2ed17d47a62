import type { ProviderFormat } from "../contracts/provider.js";
import type { SessionMessage, SessionState, TurnState } from "../projections/session-state.js";
import { isPortableToolCallId } from "../tools/stable-tool-call-id.js";
import { firstAtOrAfter, groupResults, turnsOf, walkOf, type ToolMessage, type Walk } from "./history-walk.js";
import { isRecord } from "../util/json-value.js";

/** What the history is built from: the parts of the session-state projection it reads. */
export type HistorySource = Pick<SessionState, "messages" | "turns" | "provider" | "historySummary">;

/**
 * Why a tool group is not replayed as native tool calls (docs/history.md#units). Reason enums only: they
 * go into diagnostics as they are.
 */
export type FlatReason =
  /** A call's arguments held a secret: the log has only the redacted form. */
  | "unsafe_arguments"
  /** The response was cut by the length limit: the calls may be partial. */
  | "length_truncated"
  /** A call ID is not valid for both providers (≤ 40 of `[a-zA-Z0-9_-]`) or repeats an earlier one. */
  | "invalid_id"
  /** A tool name is not valid for either provider (`^[a-zA-Z0-9_-]{1,64}$`). */
  | "invalid_name"
  /** A call's arguments are not a JSON object: Anthropic needs `input` to be one. */
  | "invalid_arguments"
  /** A call has no result yet (in flight, held for approval, or interrupted before packets). */
  | "incomplete_group"
  /** The provider's replay echo was not kept, and a provider that needs it would reject the turn. */
  | "missing_echo"
  /** The provider's replay echo was too large to keep. */
  | "echo_oversized"
  /** The log marks the group unsafe for a reason this version does not know. */
  | "marked_unsafe";

export interface HistoryToolCall {
  id: string;
  name: string;
  /** As logged: the redacted form when `argumentsRedacted`. */
  argumentsText: string;
  argumentsRedacted: boolean;
}

export interface HistoryToolResult {
  callId: string;
  /** The packet's model-visible content. */
  content: string;
  ok: boolean;
  errorCode?: string;
}

/** A provider replay echo and the provider (id and API format) that produced it. */
export interface HistoryEcho {
  source: { id: string; format: ProviderFormat };
  value: Record<string, unknown>;
}

export interface UserUnit {
  kind: "user";
  /** Stream position of the event the unit starts with. */
  position: number;
  content: string;
}

export interface AssistantUnit {
  kind: "assistant";
  position: number;
  content: string;
}

/** A replay-safe tool group: the provider tool-call turn and exactly one result per call, in call order. */
export interface ToolGroupUnit {
  kind: "tool-group";
  position: number;
  turnId: string;
  /** The assistant text that came with the calls (may be empty). */
  content: string;
  calls: (HistoryToolCall & { input: Record<string, unknown> })[];
  results: HistoryToolResult[];
  /** Kept only on safe groups; serialized only to the provider and format it came from. */
  echo?: HistoryEcho;
}

/** A tool group that is not replayed natively: the assistant text, and a plain-text note of what ran. */
export interface FlatUnit {
  kind: "flat";
  position: number;
  turnId: string;
  content: string;
  calls: HistoryToolCall[];
  /** One entry per call, in call order; `undefined` where there is no result. */
  results: (HistoryToolResult | undefined)[];
  /** Why it is flat, sorted. */
  reasons: FlatReason[];
  /** The plain-text note the model reads instead of native tool calls. */
  note: string;
}

/** The summary that stands for every unit before `beforePosition` (a recorded or proposed compaction). */
export interface SummaryUnit {
  kind: "summary";
  /** 0: it stands before every other unit. */
  position: 0;
  beforePosition: number;
  summary: string;
  unitsSummarized: number;
  compressor: string;
}

/** An atomic unit of native history: kept whole or summarized whole, never split. */
export type HistoryUnit = UserUnit | AssistantUnit | ToolGroupUnit | FlatUnit | SummaryUnit;

export interface HistoryLayout {
  /** Every unit in order: `history`, then `current`, then `workingSet`. */
  units: HistoryUnit[];
  /** The units before the current user message (a summary unit first, when the session has one). */
  history: HistoryUnit[];
  /** The last user message of the session: appended once, after the history. */
  current?: UserUnit;
  /** The units after the current user message: the current run's groups (never dropped). */
  workingSet: HistoryUnit[];
  /** Tool results that were not used, by why (repairs, for diagnostics). */
  ignoredResults: { orphan: number; duplicate: number };
}

/** Characters of a result kept in the note of a flat group of earlier history. */
const historyResultPreviewChars = 200;
/** Characters of a result kept in the note of a flat group of the current run: the model may need it all. */
const workingSetResultPreviewChars = 4000;
const argumentsPreviewChars = 100;

const toolNamePattern = /^[a-zA-Z0-9_-]{1,64}$/;

/**
 * Cuts a session's messages into atomic history units (docs/history.md#units): user messages, final
 * answers, and tool groups. A tool group is the provider tool-call turn plus one result per call,
 * in call order, taken from the packets — including those of rejected, denied, blocked, failed,
 * interrupted and over-budget calls. It is replay-safe only when complete and free of every
 * `FlatReason`; otherwise it becomes a flat unit whose note never pretends to be a native tool call
 * and never shows the arguments of a call that held a secret.
 *
 * The current user message is the session's last; the units after it are the working set. When
 * the session has a history summary, the units of earlier history recorded before its
 * `beforePosition` are replaced by one summary unit at the front (the current message and the
 * working set are never replaced).
 *
 * Units are shared between builds (cached per message): never mutate them.
 *
 * @example
 * const { history, current, workingSet } = buildHistoryUnits(session.state());
 */
export function buildHistoryUnits(source: HistorySource): HistoryLayout {
  const messages = source.messages;
  const walk = walkOf(messages);
  const currentIndex = walk.lastUser;
  const summary = source.historySummary ?? null;
  const turns = turnsOf(walk, source.turns);
  const provider = source.provider === null ? null : { id: source.provider.id, format: source.provider.format };
  const history: HistoryUnit[] = [];
  const workingSet: HistoryUnit[] = [];
  let current: UserUnit | undefined;
  // Units of earlier history before the summary's position are replaced by it (withSummary): with
  // positions in order, they are a prefix, and none of them needs to be built.
  let from = 0;
  if (summary !== null && walk.ordered) {
    from = firstAtOrAfter(walk, messages, summary.beforePosition);
    if (currentIndex >= 0 && currentIndex < from) from = currentIndex;
  }
  const surroundings = { walk, turns, provider };
  for (let index = from; index < messages.length; index += 1) {
    const unit = unitAt(messages, index, surroundings);
    if (unit === undefined) continue;
    if (index === currentIndex) current = unit as UserUnit;
    else (currentIndex >= 0 && index > currentIndex ? workingSet : history).push(unit);
  }
  const ignoredResults = { orphan: walk.resultMessages.size - walk.usedResults, duplicate: walk.duplicates };

  const summarized = withSummary(history, summary);
  return { units: [...summarized, ...(current ? [current] : []), ...workingSet], history: summarized, ...(current ? { current } : {}), workingSet, ignoredResults };
}

/** A session message that is a provider tool-call turn (a tool group's first message). */
export type ToolCallTurnMessage = Extract<SessionMessage, { metadata: { kind: "provider-tool-call-turn" } }>;

/** What a message's unit depends on beyond the message: the walk that holds it, the session's turns and provider. */
export interface UnitSurroundings {
  walk: Walk;
  turns: { get(turnId: string): TurnState | undefined };
  provider: { id: string; format: ProviderFormat } | null;
}

/**
 * The unit of the message at `index` (walked by `surroundings.walk`, whose last user message is the
 * current one): a user message or final answer as it is, a tool-call turn as its tool group, and
 * `undefined` for a tool result, which is part of its group's unit.
 *
 * @example
 * const unit = unitAt(state.messages, 3, { walk: walkOf(state.messages), turns, provider: null });
 */
export function unitAt(messages: readonly SessionMessage[], index: number, surroundings: UnitSurroundings): HistoryUnit | undefined {
  const message = messages[index] as SessionMessage;
  if (message.role === "user" || (message.role === "agent" && message.metadata === undefined)) return messageUnit(message);
  if (message.role !== "agent") return undefined;
  const { walk, turns, provider } = surroundings;
  const turn = turns.get(message.metadata.turnId);
  return toolGroup(message as ToolCallTurnMessage, {
    turn,
    response: turn?.response,
    echoDropped: turn?.echoDropped,
    results: groupResults(walk, message),
    provider,
    inWorkingSet: walk.lastUser >= 0 && index > walk.lastUser,
    repeatsId: walk.repeatsId.get(message) === true,
  });
}

/*
 * Units are cached per message object: the projection's messages are immutable (immer shares
 * them between states), so a request built after one more event re-derives only what changed.
 * The cache is invisible — the same inputs give equal units — and units must not be mutated.
 */
const messageUnits = new WeakMap<object, UserUnit | AssistantUnit>();
const groupUnits = new WeakMap<object, { context: GroupContext; unit: ToolGroupUnit | FlatUnit }>();

function messageUnit(message: SessionMessage): UserUnit | AssistantUnit {
  const cached = messageUnits.get(message);
  if (cached !== undefined) return cached;
  const unit: UserUnit | AssistantUnit =
    message.role === "user" ? { kind: "user", position: message.position, content: message.content } : { kind: "assistant", position: message.position, content: message.content };
  messageUnits.set(message, unit);
  return unit;
}

/** Everything a group's unit depends on besides its own message. */
interface GroupContext {
  turn: TurnState | undefined;
  /**
   * What the unit reads of the turn, as it was: a fold in place changes the turn object itself
   * (a response recorded again), so the turn being the same object is not enough.
   */
  response: TurnState["response"];
  echoDropped: TurnState["echoDropped"];
  /** The tool message answering each call, in call order. */
  results: (ToolMessage | undefined)[];
  provider: { id: string; format: ProviderFormat } | null;
  inWorkingSet: boolean;
  repeatsId: boolean;
}

/**
 * Whether a unit derived in context `a` is the unit for context `b`. Only a flat group's note
 * depends on `inWorkingSet` (how much of each result it previews), so a native group stays the
 * same object when its run ends and it leaves the working set: nothing downstream of it is redone.
 */
function sameContext(a: GroupContext, b: GroupContext, native: boolean): boolean {
  return (
    a.turn === b.turn &&
    a.response === b.response &&
    a.echoDropped === b.echoDropped &&
    (native || a.inWorkingSet === b.inWorkingSet) &&
    a.repeatsId === b.repeatsId &&
    a.provider?.id === b.provider?.id &&
    a.provider?.format === b.provider?.format &&
    (a.results === b.results || (a.results.length === b.results.length && a.results.every((result, index) => result === b.results[index])))
  );
}

function toolGroup(message: ToolCallTurnMessage, context: GroupContext): ToolGroupUnit | FlatUnit {
  const cached = groupUnits.get(message);
  if (cached !== undefined && sameContext(cached.context, context, cached.unit.kind === "tool-group")) return cached.unit;
  const unit = deriveToolGroup(message, context);
  groupUnits.set(message, { context, unit });
  return unit;
}

function deriveToolGroup(message: ToolCallTurnMessage, context: GroupContext): ToolGroupUnit | FlatUnit {
  const { metadata } = message;
  const turn = context.turn;
  const reasons = new Set<FlatReason>();
  const calls: HistoryToolCall[] = metadata.providerToolCalls.map((call) => ({
    id: call.id,
    name: call.name,
    argumentsText: call.argumentsText ?? "",
    argumentsRedacted: call.argumentsRedacted === true,
  }));
  const groupResults = context.results.map((result): HistoryToolResult | undefined =>
    result === undefined
      ? undefined
      : { callId: result.metadata.tool_call_id, content: result.content, ok: result.metadata.ok, ...(result.metadata.errorCode !== undefined ? { errorCode: result.metadata.errorCode } : {}) },
  );
  const inputs: Record<string, unknown>[] = [];

  for (const reason of metadata.unsafeReasons ?? []) reasons.add(knownUnsafeReason(reason));
  if (!metadata.nativeReplaySafe && reasons.size === 0) reasons.add(turn?.response?.finishReason === "length" ? "length_truncated" : "marked_unsafe");
  if (turn?.response?.finishReason === "length") reasons.add("length_truncated");
  if (context.repeatsId) reasons.add("invalid_id");
  for (const call of calls) {
    if (call.argumentsRedacted) reasons.add("unsafe_arguments");
    if (!isPortableToolCallId(call.id)) reasons.add("invalid_id");
    if (!toolNamePattern.test(call.name)) reasons.add("invalid_name");
    const input = argumentsObject(call.argumentsText);
    if (input === undefined) reasons.add("invalid_arguments");
    else inputs.push(input);
  }
  if (groupResults.includes(undefined) || calls.length === 0) reasons.add("incomplete_group");
  const echoDropped = turn?.echoDropped;
  if (echoDropped !== undefined) reasons.add(echoDropped === "echo_oversized" ? "echo_oversized" : echoDropped === "unsafe_arguments" ? "unsafe_arguments" : "missing_echo");

  if (reasons.size === 0) {
    const echo = turn?.response?.echo;
    const provider = context.provider;
    return {
      kind: "tool-group",
      position: message.position,
      turnId: metadata.turnId,
      content: message.content,
      calls: calls.map((call, index) => ({ ...call, input: inputs[index] as Record<string, unknown> })),
      results: groupResults as HistoryToolResult[],
      ...(echo !== undefined && provider !== null ? { echo: { source: provider, value: echo } } : {}),
    };
  }
  return {
    kind: "flat",
    position: message.position,
    turnId: metadata.turnId,
    content: message.content,
    calls,
    results: groupResults,
    reasons: [...reasons].sort(),
    note: flatNote(calls, groupResults, context.inWorkingSet ? workingSetResultPreviewChars : historyResultPreviewChars),
  };
}

function knownUnsafeReason(reason: string): FlatReason {
  switch (reason) {
    case "unsafe_arguments":
    case "length_truncated":
    case "invalid_id":
    case "missing_echo":
    case "echo_oversized":
      return reason;
    default:
      return "marked_unsafe";
  }
}

/**
 * The arguments as the object a tool_use `input` needs, or `undefined` when they are not one.
 * Blank arguments are `{}`, as the planner reads them.
 *
 * @example
 * argumentsObject('{"path":"a.txt"}'); // { path: "a.txt" }
 * argumentsObject("[1]"); // undefined
 */
export function argumentsObject(argumentsText: string): Record<string, unknown> | undefined {
  const text = argumentsText.trim();
  if (text === "") return {};
  try {
    const value: unknown = JSON.parse(text);
    return isRecord(value) ? value : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The plain-text account of a flat group: one line per call with the tool, the arguments as
 * logged (never for a call whose arguments held a secret) and the outcome with a short preview of
 * the result. It reads as a record of what happened, not as a tool call to imitate.
 */
function flatNote(calls: readonly HistoryToolCall[], results: readonly (HistoryToolResult | undefined)[], resultChars: number): string {
  const lines = calls.map((call, index) => {
    const result = results[index];
    const name = call.name === "" ? "(unnamed tool)" : call.name;
    const args = call.argumentsRedacted ? " (arguments withheld)" : call.argumentsText.trim() === "" ? "" : ` ${preview(call.argumentsText, argumentsPreviewChars)}`;
    const outcome =
      result === undefined
        ? "no result"
        : result.ok
          ? `ok: ${preview(result.content, resultChars)}`
          : `error${result.errorCode !== undefined ? ` (${result.errorCode})` : ""}: ${preview(result.content, resultChars)}`;
    return `- ${name}${args} → ${outcome}`;
  });
  return ["Earlier tool activity (not replayable as tool calls):", ...lines].join("\n");
}

/** One line of at most `maxChars` characters: whitespace collapsed, an ellipsis where cut. */
function preview(text: string, maxChars: number): string {
  const line = text.replace(/\s+/g, " ").trim();
  if (line.length <= maxChars) return line;
  let end = maxChars - 1;
  if (/[\uD800-\uDBFF]/.test(line.charAt(end - 1))) end -= 1;
  return `${line.slice(0, end)}…`;
}

/** Replaces the units recorded before the summary's position with the summary, at the front. */
function withSummary(history: readonly HistoryUnit[], summary: HistorySource["historySummary"]): HistoryUnit[] {
  if (summary === null || summary === undefined) return [...history];
  return [summaryUnit(summary), ...history.filter((unit) => unit.position >= summary.beforePosition)];
}

/**
 * The unit for a recorded (or proposed) compaction.
 *
 * @example
 * summaryUnit({ beforePosition: 40, summary: "…", unitsSummarized: 12, compressor: "deterministic" });
 */
export function summaryUnit(summary: { beforePosition: number; summary: string; unitsSummarized: number; compressor: string }): SummaryUnit {
  return {
    kind: "summary",
    position: 0,
    beforePosition: summary.beforePosition,
    summary: summary.summary,
    unitsSummarized: summary.unitsSummarized,
    compressor: summary.compressor,
  };
}
