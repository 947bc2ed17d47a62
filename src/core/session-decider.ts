import type { Budgets } from "../contracts/budgets.js";
import { SessionStartedSchema, type EventOf, type TurnlogEvent } from "../contracts/events.js";
import type { PolicySnapshot } from "../contracts/policy.js";
import type { ProviderFormat } from "../contracts/provider.js";
import type { ToolSnapshot } from "../contracts/tools.js";
import { SessionStateError } from "../errors/session-state-error.js";
import { activeTurn, pendingApprovals, type HostCallState, type SessionState } from "../projections/session-state.js";
import { canonicalJson } from "../util/digest.js";
import type { ProviderTurnContext } from "../../machines/provider-turn.machine.js";
import { decideEdit, type EditOwner } from "./approval-edit.js";
import { isKnownDecisionsVersion, latestDecisionsVersion } from "./decision-versions.js";

/** The provider a runtime answers with, as a session records it. */
export interface ProviderInForce {
  id: string;
  format: ProviderFormat;
  maxAttempts: number;
}

/** What the gate reads of the machine besides real paths, as `session.started` records it. */
export interface ObservedEnvironment {
  tempDir: string;
  homeDir: string;
}

/**
 * A new session: what `session.started` records. `environment` is the machine's temp and home
 * directories, observed by the caller (recorded from decisions version 2 on); `history.system` is
 * the system text as it may be logged (redacted).
 */
export interface StartSession {
  type: "startSession";
  sessionId: string;
  policy: PolicySnapshot;
  tools: ToolSnapshot[];
  budgets: Budgets;
  concurrency: number;
  provider: ProviderInForce;
  history: { maxTokens: number; system?: string };
  decisionsVersion: number;
  environment: ObservedEnvironment;
}

/**
 * A runtime opens a session the log already holds: it must know the session's decisions version
 * and offer every tool its unfinished turn still needs, and the log must name the provider that
 * will answer it (`session.config.changed` when it does not). `tools` are the names the runtime offers.
 */
export interface ReopenSession {
  type: "reopenSession";
  provider: ProviderInForce;
  tools: readonly string[];
}

/**
 * A fork (src/replay/fork.ts) starts a new session from a copy of another's first `position`
 * events: its `session.started` is the source's, naming the new session and where it came from.
 * `source` is the source's start as read (upcast) from its log.
 */
export interface ForkSession {
  type: "forkSession";
  sessionId: string;
  source: EventOf<"session.started">["data"];
  forkedFrom: { sessionId: string; position: number };
}

/** The user says something (`content` as it may be logged: well-formed and redacted). */
export interface SendMessage {
  type: "sendMessage";
  content: string;
}

/**
 * A person answers a held call. `by`, `note` and the command prefix and scope (those of an
 * "always" approval of a command tool) arrive as they may be logged: well-formed and redacted.
 * `fingerprint`, when given, is the one the person reviewed.
 */
export interface ApproveCall {
  type: "approveCall";
  callId: string;
  by: string;
  note?: string;
  fingerprint?: string;
  scope?: "call" | "tool";
  commandPrefix?: string;
  commandScope?: string;
  /**
   * Decisions version 7 on: the arguments the call is approved with, when the person changed the
   * model's (a JSON object). Judged by `decideEdit` (approval-edit.ts): valid against the tool's
   * recorded schema, and never an edit the gate would deny or block.
   */
  arguments?: Record<string, unknown>;
  /** The process that runs the session, recording an edit itself: see `EditOwner`. */
  owner?: EditOwner;
}

/** A person refuses a held call (see `ApproveCall`). */
export interface DenyCall {
  type: "denyCall";
  callId: string;
  by: string;
  note?: string;
  fingerprint?: string;
}

/** The host cancels the turn under way (its signal aborted, or the runtime closed). */
export interface CancelTurn {
  type: "cancelTurn";
}

/**
 * What a session owes its log before the runtime's next decision (session-sync.ts): the provider
 * in force, the tool set offered (`tools`: the runtime's, when it may have changed since the log
 * last recorded it), and between turns a decisions upgrade to `upgradeTo`. `environment` is the
 * machine's, observed by the caller, recorded with an upgrade to version 2 or later of a session
 * that has none.
 */
export interface SyncSession {
  type: "syncSession";
  betweenTurns: boolean;
  provider?: ProviderInForce;
  tools?: readonly ToolSnapshot[];
  upgradeTo?: number;
  environment: ObservedEnvironment;
}

/**
 * A session reopened after its process stopped: what was in flight is made consistent. `rerunnable`
 * names the running calls that may run again (idempotent and read-only, and nobody else may be
 * running them); `lostAppends` says the log, not the process, lost the provider's answer.
 */
export interface RecoverSession {
  type: "recoverSession";
  rerunnable: readonly string[];
  lostAppends?: boolean;
}

/**
 * The host asks to run a tool directly (`session.runTool`). Every text and the input arrive as
 * they may be logged (`inputRedacted` when a secret was taken out of the input).
 */
export interface RequestHostTool {
  type: "requestHostTool";
  tool: string;
  input: unknown;
  inputRedacted: boolean;
  by: string;
  approvedBy?: string;
}

/** Every session command, discriminated on `type`. */
export type SessionCommand = StartSession | ForkSession | ReopenSession | SendMessage | ApproveCall | DenyCall | CancelTurn | SyncSession | RecoverSession | RequestHostTool;

/**
 * What a command is decided on: the session-state projection and the turn machine as the fold
 * (session-fold.ts) holds them after the session's last event.
 */
export interface SessionDecisionState {
  readonly state: SessionState;
  readonly pending: readonly string[];
  readonly turnState: string | undefined;
  readonly turnContext: ProviderTurnContext | undefined;
}

/**
 * The session decider: the events a command appends, computed from the session as the log holds
 * it. Pure — the clock, the machine's environment, redaction and the runtime's tools arrive inside
 * the command — so the runtime appends what it returns and owns only effects, and a test states a
 * command as `given(events).when(command).then(events)`. A command the state does not allow throws
 * `SessionStateError` and decides nothing. What the turn machine owes after the events (a turn to
 * start after a message, the stop after a cancel) is the turn decider's (`decideAll`).
 *
 * @example
 * const events = decideCommand({ type: "sendMessage", content: "hello" }, fold);
 * await store.append(events);
 */
export function decideCommand(command: SessionCommand, session: SessionDecisionState): TurnlogEvent[] {
  const { state } = session;
  switch (command.type) {
    case "startSession":
      return [startSession(command, state)];
    case "forkSession":
      return [forkSession(command, state)];
    case "reopenSession":
      return reopenSession(command, state);
    case "sendMessage":
      refuseUnfinishedTurn(session, `session ${state.sessionId} has an unfinished turn: answer its approvals and resume() it first`);
      return [{ type: "session.user_message.added", data: { content: command.content } }];
    case "approveCall":
    case "denyCall":
      return answerCall(command, state);
    case "cancelTurn": {
      const turn = activeTurn(state);
      // Nothing under way, or a cancel already owed its stop: nothing more to record.
      if (turn === undefined || session.turnState === "cancelling") return [];
      return [{ type: "turn.cancel.requested", data: { turnId: turn.turnId } }];
    }
    case "syncSession":
      return syncSession(command, state);
    case "recoverSession":
      return recoverSession(command, session);
    case "requestHostTool":
      return [requestHostTool(command, session)];
    default: {
      const unknown: never = command;
      throw new TypeError(`decideCommand: unknown command ${(unknown as { type: string }).type}`);
    }
  }
}

function forkSession(command: ForkSession, state: SessionState): EventOf<"session.started"> {
  if (state.policy !== null) throw new SessionStateError(`session ${state.sessionId} has already started`);
  // Parsed, so the copy is written as the current schema has it (a default the source's version
  // left out is filled in), exactly as a start this turnlog records.
  const data = SessionStartedSchema.shape.data.parse({ ...command.source, sessionId: command.sessionId, forkedFrom: command.forkedFrom });
  return { type: "session.started", data };
}

function startSession(command: StartSession, state: SessionState): EventOf<"session.started"> {
  if (state.policy !== null) throw new SessionStateError(`session ${state.sessionId} has already started`);
  const { sessionId, policy, tools, budgets, concurrency, provider, history, decisionsVersion, environment } = command;
  return {
    type: "session.started",
    data: {
      sessionId,
      policy,
      tools,
      budgets,
      concurrency,
      provider: { id: provider.id, format: provider.format, maxAttempts: provider.maxAttempts },
      history: { maxTokens: history.maxTokens, ...(history.system !== undefined ? { system: history.system } : {}) },
      // Version 1 recorded neither: a session pinned to it is written as version 1 wrote it.
      ...(decisionsVersion > 1 ? { decisionsVersion, environment: { tempDir: environment.tempDir, homeDir: environment.homeDir } } : {}),
    },
  };
}

function reopenSession(command: ReopenSession, state: SessionState): TurnlogEvent[] {
  const sessionId = state.sessionId;
  if (!isKnownDecisionsVersion(state.decisionsVersion)) {
    throw new SessionStateError(
      `session ${sessionId} was recorded under decisions version ${state.decisionsVersion}, newer than this turnlog knows (up to ${latestDecisionsVersion}): continue it with the turnlog that recorded it`,
    );
  }
  refuseMissingTools(state, new Set(command.tools));
  // Before anything else (a recovery included): later requests name the provider that answers them.
  const changed = providerChange(state, command.provider);
  return changed !== undefined ? [changed] : [];
}

/**
 * Refuses to continue a session whose unfinished turn holds calls (awaiting approval, or allowed
 * and not yet run) for tools the runtime does not offer: each would end as `unavailable-tool`
 * although a person approved it or the gate allowed it.
 */
function refuseMissingTools(state: SessionState, offered: ReadonlySet<string>): void {
  const turn = activeTurn(state);
  if (turn === undefined) return;
  const missing = new Set<string>();
  for (const callId of turn.callIds) {
    const call = state.calls.get(callId);
    if (call !== undefined && (call.status === "awaiting-approval" || call.status === "allowed") && !offered.has(call.name)) missing.add(call.name);
  }
  if (missing.size === 0) return;
  const names = [...missing].join(", ");
  throw new SessionStateError(
    `session ${state.sessionId} has an unfinished turn with calls for tools this runtime does not have: ${names} — open it with a runtime that offers ${missing.size > 1 ? "them" : "it"}`,
  );
}

/**
 * The `session.config.changed` a session owes when the provider that will answer it is not the one
 * its log names (another id, format or attempts per turn): without it, the next
 * `turn.provider.requested` would record a provider that does not answer.
 */
export function providerChange(state: SessionState, provider: ProviderInForce): EventOf<"session.config.changed"> | undefined {
  const recorded = state.provider;
  if (recorded === null) return undefined;
  if (recorded.id === provider.id && recorded.format === provider.format && recorded.maxAttempts === provider.maxAttempts) return undefined;
  return { type: "session.config.changed", data: { provider: { id: provider.id, format: provider.format, maxAttempts: provider.maxAttempts } } };
}

/** A turn is open or owed: a command that needs the session between turns is refused. */
function refuseUnfinishedTurn(session: SessionDecisionState, refusal: string): void {
  if (activeTurn(session.state) !== undefined || session.pending.length > 0) throw new SessionStateError(refusal);
}

function answerCall(command: ApproveCall | DenyCall, state: SessionState): TurnlogEvent[] {
  const { callId } = command;
  const call = pendingApprovals(state).find((candidate) => candidate.callId === callId);
  if (call === undefined) throw new SessionStateError(`call ${callId} is not awaiting approval in session ${state.sessionId}`);
  const fingerprint = call.decision?.fingerprint ?? "";
  if (command.fingerprint !== undefined && command.fingerprint !== call.decision?.fingerprint) {
    throw new SessionStateError(`call ${callId} is not the call that was reviewed: its fingerprint differs`);
  }
  const note = command.note !== undefined ? { note: command.note } : {};
  if (command.type === "denyCall") return [{ type: "turn.approval.denied", data: { turnId: call.turnId, callId, fingerprint, by: command.by, scope: "call", ...note } }];
  const scope = command.scope ?? "call";
  if (command.arguments !== undefined) {
    // An edited call is approved once, as the person saw it: an "always" would cover calls they never saw.
    if (scope === "tool") throw new SessionStateError(`call ${callId} cannot be approved for the whole tool with edited arguments: an edited approval covers this call only`);
    const edit = decideEdit(call, command.arguments, state, command.owner);
    if (edit !== undefined) {
      const granted: EventOf<"turn.approval.granted"> = {
        type: "turn.approval.granted",
        data: { turnId: call.turnId, callId, fingerprint: edit.fingerprint, by: command.by, scope, ...note, arguments: edit.arguments, proposedFingerprint: fingerprint },
      };
      return edit.observed !== undefined ? [edit.observed, granted] : [granted];
    }
  }
  // Only an "always" approval records what later commands it covers.
  const prefix =
    scope === "tool"
      ? { ...(command.commandPrefix !== undefined ? { commandPrefix: command.commandPrefix } : {}), ...(command.commandScope !== undefined ? { commandScope: command.commandScope } : {}) }
      : {};
  return [{ type: "turn.approval.granted", data: { turnId: call.turnId, callId, fingerprint, by: command.by, scope, ...note, ...prefix } }];
}

/**
 * Keeps a session's log in step with the runtime continuing it (session-sync.ts decides when to ask):
 * - **Provider**: a `session.config.changed` when the log names another provider than the runtime's.
 * - **Decisions version**: a session recorded under an older version than `upgradeTo` moves to it
 *   with `session.decisions.upgraded`, between turns only — a turn in flight finishes under the
 *   version it started with, as Temporal lets a running workflow finish on the code path it took.
 * - **Tools**: when the runtime's tool set is not the one the log last recorded, a
 *   `session.tools.changed` with the whole new set, so replay judges later decisions against it.
 */
function syncSession(command: SyncSession, state: SessionState): TurnlogEvent[] {
  const events: TurnlogEvent[] = [];
  const changed = command.provider !== undefined ? providerChange(state, command.provider) : undefined;
  if (changed !== undefined) events.push(changed);
  const to = command.upgradeTo;
  if (command.betweenTurns && to !== undefined && state.decisionsVersion < to) {
    const { tempDir, homeDir } = command.environment;
    events.push({ type: "session.decisions.upgraded", data: { from: state.decisionsVersion, to, ...(to >= 2 && state.environment === null ? { environment: { tempDir, homeDir } } : {}) } });
  }
  if (command.tools !== undefined && !sameToolSet(state.tools, command.tools)) events.push({ type: "session.tools.changed", data: { tools: [...command.tools] } });
  return events;
}

/**
 * Whether a recorded tool set is the live one. A set recorded before tool schemas were (no
 * `parameters`) is compared on everything else: the schema digest already says whether the
 * schema is the same.
 */
export function sameToolSet(recorded: readonly ToolSnapshot[], live: readonly ToolSnapshot[]): boolean {
  if (recorded.length !== live.length) return false;
  return recorded.every((tool, index) => {
    const other = live[index] as ToolSnapshot;
    const { parameters: _ours, ...a } = tool;
    const { parameters: _theirs, ...b } = other;
    return canonicalJson(a) === canonicalJson(b);
  });
}

/** A host-routed call that was decided to run and never completed (the process died). */
export function hostCallInDoubt(calls: readonly HostCallState[]): HostCallState | undefined {
  const last = calls.at(-1);
  return last?.runs === true && last.result === undefined ? last : undefined;
}

/**
 * Makes a crashed session consistent before anything continues it (docs/architecture.md): a
 * host-routed call decided to run and never completed is marked interrupted, never run again; a
 * provider request with no response becomes a failed, retryable attempt; a tool that started and
 * never ended is marked interrupted and is not run again — unless `rerunnable` names it (the tool
 * runner then runs it again on resume). A host-routed call owed its decision is decided first, by
 * the turn decider (`decideAll("decideHostTool")`).
 */
function recoverSession(command: RecoverSession, session: SessionDecisionState): TurnlogEvent[] {
  const { state } = session;
  const events: TurnlogEvent[] = [];
  const hostCall = hostCallInDoubt(state.hostCalls);
  if (hostCall !== undefined) {
    events.push({
      type: "session.native_tool.completed",
      data: { callId: hostCall.callId, ok: false, code: "interrupted", message: "the process stopped before the call ended; it was not run again", durationMs: 0 },
    });
  }
  const context = session.turnContext;
  if (context === undefined) return events;
  if (session.pending[0] === "callProvider") {
    // The request was written ahead; whether the provider saw it is unknown.
    events.push({
      type: "turn.provider.failed",
      data: {
        turnId: context.turnId,
        attempt: context.attempt,
        kind: "interrupted",
        retryable: true,
        message: command.lostAppends === true ? "the log lost the provider's answer (its server crashed before the answer was on disk)" : "the process stopped before the provider answered",
      },
    });
  } else if (session.turnState === "running") {
    // Tools were running. Only a call that is safe to repeat runs again, on resume.
    const rerunnable = new Set(command.rerunnable);
    for (const callId of context.toRun) {
      if (state.calls.get(callId)?.status === "running" && !rerunnable.has(callId)) events.push({ type: "turn.tool.interrupted", data: { turnId: context.turnId, callId } });
    }
  }
  // Otherwise a decision owed is made by the next resume, a wait waits, and nothing was in flight.
  return events;
}

function requestHostTool(command: RequestHostTool, session: SessionDecisionState): EventOf<"session.native_tool.requested"> {
  const { state } = session;
  refuseUnfinishedTurn(session, `session ${state.sessionId} has an unfinished turn: a host-routed call runs between turns`);
  return {
    type: "session.native_tool.requested",
    data: {
      callId: `native-${state.hostCalls.length + 1}`,
      tool: command.tool,
      input: command.input,
      by: command.by,
      ...(command.inputRedacted ? { inputRedacted: true } : {}),
      ...(command.approvedBy !== undefined ? { approvedBy: command.approvedBy } : {}),
    },
  };
}
