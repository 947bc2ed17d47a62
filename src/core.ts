/**
 * turnlog/core: the deterministic engine under the runtime, for hosts that step a turn with their
 * own effects (docs/embedding.md, "The engine: stepping a turn with your own effects").
 *
 * - the turn machine (`providerTurnMachine`), pure: its actions are names only;
 * - `SessionFold`: folds a session's recorded events into the session state and the open turn's
 *   machine snapshot;
 * - `nextStep(fold, registry)`: what is owed next — a decision, an effect, a wait, or nothing;
 * - the action table (`actionTable`): every action with its kind;
 * - `decideCommand`: the session decider, the events each session command appends;
 * - `decideAll` / `decide` / `decideObserving`: the pure turn decider; `nextToolStart`: the one tool
 *   scheduler; `responseEvent`: what a provider response is recorded as;
 * - `sessionStream`, decision-version helpers, and the defaults a session starts with.
 *
 * The live runtime (`createRuntime`) and replay are built on exactly these.
 */
export { providerTurnMachine } from "../machines/provider-turn.machine.js";
export type { ProviderTurnActionType, ProviderTurnContext, ProviderTurnInput } from "../machines/provider-turn.machine.js";

export { SessionFold, turnEndings } from "./core/session-fold.js";
export { UnexpectedEventError } from "./errors/unexpected-event-error.js";
export type { SessionFoldOptions, TurnSnapshot } from "./core/session-fold.js";

export { nextStep } from "./core/next-step.js";
export type { Step } from "./core/next-step.js";

export { actionKind, actionTable, isAction, isDecisionAction, owedAfterEvent, owedWhileResting } from "./core/actions.js";
export type { ActionKind, ActionName, ActionOfKind, DecisionAction, EffectAction, WaitAction } from "./core/actions.js";

export { decide, decideAll, decisionsVersionOf, providerRequest } from "./core/decide.js";
export { NoDecisionOwedError } from "./errors/no-decision-owed-error.js";
export type { Decision, DecisionInputs } from "./core/decide.js";
export { decideObserving } from "./core/decide-observing.js";
export { decideCommand } from "./core/session-decider.js";
export type { SessionCommand, SessionDecisionState } from "./core/session-decider.js";
export type { EditOwner } from "./core/approval-edit.js";
export { executionGroups, isConcurrencySafe, nextToolStart, runnableCalls, startedCalls } from "./core/tool-schedule.js";
export type { ToolStart } from "./core/tool-schedule.js";
export { maxEchoChars, responseEvent } from "./core/response-event.js";
export type { ResponseEvent } from "./core/response-event.js";

export { isValidSessionId, sessionIdOfStream, sessionIdPattern, sessionStream } from "./core/session-stream.js";
export { decisionsVersions, isKnownDecisionsVersion, latestDecisionsVersion, resolveDecisionsVersion } from "./core/decision-versions.js";
export type { DecisionsVersion } from "./core/decision-versions.js";
export { currentSchemaVersion, upcastEvent, upcastStream } from "./core/upcast.js";
export { readEvent, readEvents } from "./core/read-events.js";
export type { EventCheck } from "./core/read-events.js";

// What a host writing its own `session.started` needs to record what `createRuntime` records.
export { resolvePolicy } from "./policy/default-policy.js";
export { resolveBudgets } from "./contracts/budgets.js";
export { defaultHistoryMaxTokens } from "./history/session-history.js";

export { activeTurn } from "./projections/session-state.js";
export type { CallState, SessionState, TurnState } from "./projections/session-state.js";
