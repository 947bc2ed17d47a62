import type { Budgets } from "../contracts/budgets.js";
import { isDecisionEvent, parseEvent } from "../contracts/events.js";
import type { PolicySnapshot } from "../contracts/policy.js";
import type { RecordedEvent, RecordedTurnlogEvent } from "../log/event-log.js";
import type { ToolRegistry } from "../tools/tool-registry.js";
import { firstDifference, sameJson } from "../util/first-difference.js";
import type { EventOf, GateDecisionRecord, ToolPlan, TurnlogEvent } from "../contracts/events.js";
import type { GateEnvironment } from "../policy/gate.js";
import type { HistoryCompressor } from "../history/history-compressor.js";
import { decideAll } from "../core/decide.js";
import { NoDecisionOwedError } from "../errors/no-decision-owed-error.js";
import { nextStep, type Step } from "../core/next-step.js";
import { isKnownDecisionsVersion, latestDecisionsVersion } from "../core/decision-versions.js";
import { SessionFold } from "../core/session-fold.js";
import { UnexpectedEventError } from "../errors/unexpected-event-error.js";
import { ToolsInForce, type ToolsAtPosition } from "./tools-in-force.js";
import { readEvent } from "../core/read-events.js";
import { upcastStream } from "../core/upcast.js";
import { decisionChanges, historyChange, turnChange, type DecisionChange } from "./what-if.js";
import { gateNeedsHostCode } from "../tools/recorded-tool.js";
import { checkEditedApproval } from "./edited-approval-check.js";
import { lexicalRealPath } from "../policy/workspace-confinement.js";
import { answerOutOfTime } from "../core/approval-deadlines.js";

export interface Divergence {
  /** Stream position of the logged event. */
  position: number;
  type: string;
  /** JSON path of the first difference, e.g. `data.decisions[0].rule`. */
  path: string;
  /** What the log holds there. */
  expected: unknown;
  /** What the current code computes there. */
  actual: unknown;
}

/** A decision entry replay cannot recompute, and why. */
export interface Unverifiable {
  position: number;
  type: string;
  callId: string;
  /**
   * `redacted`: planned from arguments that held a secret, which the log never stores;
   * `compressor`: a history summary written by a compressor replay does not run;
   * `host-code`: a gate decision on a tool replayed from its recorded definition whose shell text
   * or path arguments only the host's code computes (or an approval's edit of such a call).
   */
  reason: "redacted" | "compressor" | "host-code";
}

/** A decision on a call checked against the tool's recorded schema, because the host's code for it was absent. */
export interface SchemaLevelCheck {
  position: number;
  type: string;
  callId: string;
  tool: string;
}

/**
 * What a tool's `needsApproval` (host code) answered for a call, taken from the log
 * (`session.environment.observed.hostRules`, decisions version 7): replay never runs the host's
 * predicate; the gate decision after it is recomputed from this answer.
 */
export interface HostRuleTaken {
  position: number;
  callId: string;
  tool: string;
  needsApproval: boolean;
  /** The predicate failed (so the call asked): its error, as logged. */
  error?: string;
}

export interface ReplayReport {
  identical: boolean;
  /** Decision events recomputed and compared. */
  compared: number;
  divergences: Divergence[];
  /** Entries taken as logged because they cannot be recomputed (not divergences). */
  unverifiable: Unverifiable[];
  /**
   * Every decision the recomputation changes: per call, a gate decision or deciding rule (`kind:
   * "call"`); per turn, how it went on — retried, failed, stopped, continued (`kind: "turn"`); per
   * provider request, what it kept of the history and what it summarized (`kind: "history"`).
   * Empty when the session replays identical; under a what-if policy or an upgrade preview, the
   * answer to "what would change?".
   */
  changes: DecisionChange[];
  /**
   * The decisions version each decision was recomputed under: the session's own (`"recorded"`,
   * following its upgrades), or one a preview asked for.
   */
  decisionsVersion: number | "recorded";
  /** Tools replayed from their recorded definitions (the host's code for them was absent or differs). */
  toolsFromLog: string[];
  /** Plans checked against a recorded schema rather than the host's code (see `toolsFromLog`). */
  schemaLevel: SchemaLevelCheck[];
  /** The answers of tools' `needsApproval` taken as logged, in log order (decisions version 7). */
  hostRules: HostRuleTaken[];
}

export interface ReplayConfiguration {
  /** The host's tools. */
  registry: ToolRegistry;
  /**
   * `"log"` (default): judge each decision against the tool set the log says was offered at that
   * point, using the host's definition of each recorded tool it has unchanged and the recorded
   * definition otherwise. `"registry"`: against `registry` as it is (a what-if with other tools).
   */
  toolsInForce?: "log" | "registry";
  /**
   * Recompute every decision under this decisions version instead of the one the log records
   * (an upgrade preview). Paths a version-1 log never recorded are then resolved with `gate`.
   */
  decisionsVersion?: number;
  /** How the gate resolves paths (the live runtime's resolver, so decisions compare). */
  gate?: GateEnvironment;
  /** The compressor the session used, when it is not the deterministic default. */
  compressor?: HistoryCompressor;
  /** Judge decisions by this policy instead of the recorded one (what-if). */
  policy?: (recorded: PolicySnapshot) => PolicySnapshot;
  budgets?: (recorded: Budgets) => Budgets;
}

/**
 * Folds a session's events through the current machine and recomputes every decision event from
 * the recorded inputs, comparing it with the log. No provider and no tool is called: input events
 * are taken as given. The log stays the truth while folding, so one divergence does not cascade.
 */
export async function verifyReplay(events: AsyncIterable<RecordedEvent> | Iterable<RecordedEvent>, config: ReplayConfiguration): Promise<ReplayReport> {
  // Replay keeps no intermediate state, so it folds in place (linear in the log's length) and
  // keeps only what later decisions read (memory bounded by the history window, not the log).
  const fold = new SessionFold({ mutable: true, retain: "live", ...(config.decisionsVersion !== undefined ? { decisionsVersion: config.decisionsVersion } : {}) });
  const divergences: Divergence[] = [];
  const unverifiable: Unverifiable[] = [];
  const changes: DecisionChange[] = [];
  const schemaLevel: SchemaLevelCheck[] = [];
  const hostRules: HostRuleTaken[] = [];
  const toolsFromLog = new Set<string>();
  const inForce = config.toolsInForce === "registry" ? undefined : new ToolsInForce(config.registry);
  const toolsAt = (): ToolsAtPosition => {
    if (inForce === undefined) return { registry: config.registry, fromLog: new Set() };
    const at = inForce.at(fold.state.tools);
    for (const name of at.fromLog) toolsFromLog.add(name);
    return at;
  };
  const turnChanges = new TurnChanges(changes);
  let compared = 0;
  // The rest of a multi-event decision (history decisions before a provider request).
  let expected: (TurnlogEvent | string)[] = [];
  for await (const recorded of upcastStream(events)) {
    const event = readEvent(recorded);
    const position = event.meta.streamPosition;
    // What the code owes here (nextStep): only a decision event is compared with it.
    const tools = isDecisionEvent(event.type) ? toolsAt() : undefined;
    const step = tools !== undefined ? nextStep(fold, tools.registry) : undefined;
    if (tools !== undefined && step !== undefined) {
      compared += 1;
      const hostDecided = event.type === "session.native_tool.decided" ? event : undefined;
      const redactedHost = hostDecided !== undefined && fold.state.hostCalls.at(-1)?.inputRedacted === true;
      if (redactedHost) unverifiable.push({ position, type: event.type, callId: hostDecided.data.callId, reason: "redacted" });
      const loggedPlan = hostDecided?.data.plan;
      if (expected.length === 0) {
        let all = recomputeAll(step, fold, config, tools.registry, redactedHost ? loggedPlan : undefined);
        const hostTool = hostDecided !== undefined && !redactedHost ? fold.state.hostCalls.at(-1)?.tool : undefined;
        if (hostTool !== undefined && tools.fromLog.has(hostTool) && loggedPlan !== undefined && typeof all !== "string") {
          // A host-routed call on a tool rebuilt from the log: its plan is checked at schema level,
          // as a model's call is, and where it agrees the gate judges the logged plan (its input
          // holds what the host's zod schema added).
          const first = all[0];
          const recomputedPlan = first?.type === "session.native_tool.decided" ? first.data.plan : undefined;
          schemaLevel.push({ position, type: event.type, callId: loggedPlan.callId, tool: hostTool });
          if (recomputedPlan?.status === loggedPlan.status && recomputedPlan.reason === loggedPlan.reason) all = recomputeAll(step, fold, config, tools.registry, loggedPlan);
        }
        expected = typeof all === "string" ? [all] : all;
        turnChanges.recomputed(position, event, typeof all === "string" ? [] : all, fold.state.turns.at(-1)?.turnId);
        const history = typeof all === "string" ? undefined : historyChange(position, event, all);
        if (history !== undefined) changes.push(history);
      }
      const next = expected.shift() as TurnlogEvent | string;
      const toolOf = (callId: string) => fold.state.calls.get(callId)?.name ?? loggedPlan?.tool;
      if (typeof next === "string") {
        changes.push(...decisionChanges(position, event, undefined, toolOf));
        divergences.push({ position, type: event.type, path: "type", expected: event.type, actual: next });
      } else {
        // What is taken as logged (a redacted input, a host's code that is absent) changes nothing.
        let compareWith = asLoggedWhereHostCodeIsMissing(asLoggedWhereUnverifiable(next, event, fold, unverifiable), event, fold, tools, { unverifiable, schemaLevel });
        if (config.decisionsVersion !== undefined) compareWith = withoutFieldsTheLogPredates(compareWith, event);
        changes.push(...decisionChanges(position, event, compareWith, toolOf));
        // Almost every decision agrees: the path of a difference is walked only when there is one.
        const logged = { type: event.type, data: event.data };
        const difference = sameJson(logged, compareWith) ? undefined : firstDifference(logged, compareWith);
        if (difference !== undefined) divergences.push({ position, type: event.type, ...difference });
      }
    } else if (expected.length > 0) {
      // The log went on without decisions the code still owed at this point.
      const missing = expected[0];
      divergences.push({ position, type: event.type, path: "type", expected: event.type, actual: typeof missing === "string" ? missing : missing?.type });
      expected = [];
    }
    if (event.type === "turn.approval.granted" && event.data.arguments !== undefined) {
      // An edited approval is judged again (edited-approval-check.ts): it never carries what the policy refuses.
      const check = checkEditedApproval(event, fold, toolsAt(), {
        ...(config.policy !== undefined ? { policy: config.policy } : {}),
        ...(config.decisionsVersion !== undefined ? { decisionsVersion: config.decisionsVersion } : {}),
      });
      if (check.kind === "differs") divergences.push({ position, type: event.type, path: check.path, expected: check.expected, actual: check.actual });
      if (check.kind === "host-code") unverifiable.push({ position, type: event.type, callId: event.data.callId, reason: "host-code" });
    }
    // Answers are inputs, taken as logged, but their time is checked against the call's deadline
    // (decisions version 7): a denial by approval:timeout before it, or an answer after it, is one
    // this code would not have recorded.
    const outOfTime = answerOutOfTime(fold.state, event, config.decisionsVersion ?? fold.state.decisionsVersion);
    if (outOfTime !== undefined) divergences.push({ position, type: event.type, path: "meta.recordedAt", ...outOfTime });
    if (event.type === "session.environment.observed") {
      for (const { callId, tool, needsApproval, error } of event.data.hostRules ?? []) hostRules.push({ position, callId, tool, needsApproval, ...(error !== undefined ? { error } : {}) });
    }
    try {
      fold.apply(event);
    } catch (error) {
      if (!UnexpectedEventError.isInstance(error)) throw error;
      divergences.push({ position, type: event.type, path: "type", expected: event.type, actual: `not accepted in state ${error.machineState}` });
      break;
    }
    if ((event.type === "session.started" || event.type === "session.decisions.upgraded") && !isKnownDecisionsVersion(fold.state.decisionsVersion)) {
      // A log from a newer turnlog: this code cannot say what its decisions should have been.
      const path = event.type === "session.started" ? "data.decisionsVersion" : "data.to";
      divergences.push({ position, type: event.type, path, expected: fold.state.decisionsVersion, actual: `unknown to this turnlog (it knows versions 1 to ${latestDecisionsVersion})` });
      break;
    }
  }
  turnChanges.flush();
  return {
    identical: divergences.length === 0,
    compared,
    divergences,
    unverifiable,
    changes,
    decisionsVersion: config.decisionsVersion ?? "recorded",
    toolsFromLog: [...toolsFromLog],
    schemaLevel,
    hostRules,
  };
}

/**
 * Under another decisions version (an upgrade preview) a gate decision may carry a field the
 * version the log was recorded under did not write — `contained`, from version 4. It says how the
 * call would run, not what was decided, so an older log's lack of it is no divergence.
 */
function withoutFieldsTheLogPredates(next: TurnlogEvent, logged: RecordedTurnlogEvent): TurnlogEvent {
  const strip = (decision: GateDecisionRecord | null | undefined, was: GateDecisionRecord | null | undefined): GateDecisionRecord | null | undefined => {
    if (decision === null || decision === undefined || decision.contained === undefined || (was !== null && was !== undefined && "contained" in was)) return decision;
    const { contained: _contained, ...rest } = decision;
    return rest;
  };
  if (next.type === "turn.tool_calls.gated" && logged.type === "turn.tool_calls.gated") {
    const was = logged.data.decisions;
    return { ...next, data: { ...next.data, decisions: next.data.decisions.map((decision, index) => strip(decision, was[index]) as GateDecisionRecord) } };
  }
  if (next.type === "session.native_tool.decided" && logged.type === "session.native_tool.decided") {
    const was = logged.data.decision;
    return { ...next, data: { ...next.data, decision: strip(next.data.decision, was) ?? null } };
  }
  return next;
}

/**
 * Collects how turns would go on differently, one change per decision point. When the code owes a
 * different turn decision where the log holds history decisions (a version-2 log's retry, replayed
 * under version 1, which fails instead), the logged turn decision comes a few events later: the
 * change is held at the batch's first position until that event says what the log decided.
 */
class TurnChanges {
  #held: DecisionChange | undefined;

  constructor(private readonly changes: DecisionChange[]) {}

  recomputed(position: number, logged: RecordedTurnlogEvent, recomputed: readonly TurnlogEvent[], turnId: string | undefined): void {
    const change = turnChange(position, logged, recomputed);
    const held = this.#held;
    if (change === undefined) {
      // The logged turn decision agrees with the code here: what was held was a detour of the batch.
      if (held !== undefined && turnDecisionEventTypes.has(logged.type)) this.flush();
      return;
    }
    if (change.before === null && held === undefined) {
      this.#held = { ...change, ...(change.turnId === undefined && turnId !== undefined ? { turnId } : {}) };
    } else if (change.before !== null && held !== undefined) {
      this.#held = undefined;
      this.changes.push({ ...held, turnId: change.turnId ?? held.turnId, before: change.before });
    } else if (held === undefined) {
      this.changes.push(change);
    }
  }

  /** Reports a held change as it stands (the log never said how that turn went on). */
  flush(): void {
    if (this.#held !== undefined) this.changes.push(this.#held);
    this.#held = undefined;
  }
}

const turnDecisionEventTypes: ReadonlySet<string> = new Set(["turn.provider.requested", "turn.completed", "turn.continued", "turn.stopped", "turn.failed"]);

/**
 * Replay without the host's code for a tool judges its calls against the recorded definition. A
 * plan is checked at schema level: whether the arguments are accepted or rejected, and why, is
 * recomputed; the planned input and the issue texts are taken as logged (the host's zod schema may
 * add defaults or word its issues differently). A gate decision that needs the host's code — the
 * shell text of a command tool, the path arguments of a tool that declares them — is taken as
 * logged and reported as unverifiable.
 */
function asLoggedWhereHostCodeIsMissing(
  recomputed: TurnlogEvent,
  logged: RecordedTurnlogEvent,
  fold: SessionFold,
  tools: ToolsAtPosition,
  report: { unverifiable: Unverifiable[]; schemaLevel: SchemaLevelCheck[] },
): TurnlogEvent {
  if (tools.fromLog.size === 0 || recomputed.type !== logged.type) return recomputed;
  const position = logged.meta.streamPosition;
  const toolOf = (callId: string) => fold.state.calls.get(callId)?.name ?? "";
  if (recomputed.type === "turn.tool_calls.planned" && logged.type === "turn.tool_calls.planned") {
    const loggedPlans = logged.data.plans;
    const plans = recomputed.data.plans.map((plan, index) => {
      const tool = toolOf(plan.callId);
      const was = loggedPlans[index];
      if (!tools.fromLog.has(tool) || was === undefined || was.callId !== plan.callId) return plan;
      report.schemaLevel.push({ position, type: logged.type, callId: plan.callId, tool });
      return was.status === plan.status && was.reason === plan.reason ? was : plan;
    });
    return { ...recomputed, data: { ...recomputed.data, plans } };
  }
  if (recomputed.type === "turn.tool_calls.gated" && logged.type === "turn.tool_calls.gated") {
    const loggedDecisions = logged.data.decisions;
    const decisions = recomputed.data.decisions.map((decision, index) => {
      const tool = toolOf(decision.callId);
      const was = loggedDecisions[index];
      if (!gateNeedsHostCode(tools.registry.get(tool)) || was === undefined || was.callId !== decision.callId) return decision;
      report.unverifiable.push({ position, type: logged.type, callId: decision.callId, reason: "host-code" });
      return was;
    });
    return { ...recomputed, data: { ...recomputed.data, decisions } };
  }
  if (recomputed.type === "session.native_tool.decided" && logged.type === "session.native_tool.decided" && recomputed.data.plan.status === "planned") {
    const was = logged.data;
    if (!gateNeedsHostCode(tools.registry.get(recomputed.data.plan.tool ?? "")) || was.callId !== recomputed.data.callId) return recomputed;
    report.unverifiable.push({ position, type: logged.type, callId: was.callId, reason: "host-code" });
    return { ...recomputed, data: { ...recomputed.data, decision: was.decision, runs: was.runs } };
  }
  return recomputed;
}

/**
 * What the log holds is taken where the current code cannot recompute it: plans made from
 * arguments that held a secret, and a summary written by a compressor replay does not have.
 */
function asLoggedWhereUnverifiable(recomputed: TurnlogEvent, logged: RecordedTurnlogEvent, fold: SessionFold, unverifiable: Unverifiable[]): TurnlogEvent {
  if (recomputed.type === "turn.tool_calls.planned" && logged.type === "turn.tool_calls.planned") return takeRedactedPlansAsLogged(recomputed, logged, fold, unverifiable);
  if (recomputed.type === "session.history.compacted" && logged.type === "session.history.compacted") {
    const data = logged.data;
    if ((data.compressor ?? "deterministic") !== "deterministic") {
      unverifiable.push({ position: logged.meta.streamPosition, type: logged.type, callId: "", reason: "compressor" });
      return { ...recomputed, data: { ...recomputed.data, summary: data.summary, compressor: data.compressor } };
    }
  }
  return recomputed;
}

/** All the decision events the current code owes at this point (see `decideAll`), or why none. */
function recomputeAll(step: Step, fold: SessionFold, config: ReplayConfiguration, registry: ToolRegistry, hostPlanOverride?: ToolPlan): TurnlogEvent[] | string {
  if (step.kind !== "decision") return step.kind === "effect" && step.reason !== undefined ? `no decision owed: ${step.reason}` : `no decision owed (pending: ${step.kind === "none" ? "nothing" : step.action})`;
  const action = step.action;
  const { state } = fold;
  if (state.policy === null || state.budgets === null) return "no decision owed: session.started is missing";
  const turn = fold.turnContext;
  try {
    // A preview under version 2 or later of a log recorded before it: the paths that log never
    // recorded are resolved as version 1 resolved them, through the caller's resolver.
    const preview = config.decisionsVersion !== undefined && config.decisionsVersion >= 2 && state.decisionsVersion < 2;
    // The same for git entries under version 5 or later, of a log recorded before it read them.
    const previewGit = config.decisionsVersion !== undefined && config.decisionsVersion >= 5 && state.decisionsVersion < 5;
    return decideAll(action, {
      state,
      ...(turn !== undefined ? { turn } : {}),
      registry,
      ...(config.decisionsVersion !== undefined ? { decisionsVersion: config.decisionsVersion } : {}),
      ...(preview ? { observeRealPath: config.gate?.realPath ?? lexicalRealPath } : {}),
      ...(previewGit ? { observeGitLinks: config.gate?.gitLinks ?? (() => []) } : {}),
      policy: config.policy ? config.policy(state.policy) : state.policy,
      budgets: config.budgets ? config.budgets(state.budgets) : state.budgets,
      ...(config.gate ? { gate: config.gate } : {}),
      ...(hostPlanOverride ? { hostPlanOverride } : {}),
      ...(config.compressor ? { compressor: config.compressor } : {}),
    }).events.map((event) => parseEvent(event));
  } catch (error) {
    if (error instanceof NoDecisionOwedError) return `no decision owed: ${error.message}`;
    throw error;
  }
}

/**
 * A call whose arguments held a secret was planned from the real values, which the log never
 * stores: its plan cannot be recomputed, so it is taken as logged and reported as unverifiable
 * rather than as a divergence. The gate, packets and everything after are still recomputed.
 */
function takeRedactedPlansAsLogged(
  recomputed: EventOf<"turn.tool_calls.planned">,
  logged: RecordedEvent<"turn.tool_calls.planned", EventOf<"turn.tool_calls.planned">["data"]>,
  fold: SessionFold,
  unverifiable: Unverifiable[],
): EventOf<"turn.tool_calls.planned"> {
  const loggedPlans = logged.data.plans;
  const plans = recomputed.data.plans.map((plan, index) => {
    if (!fold.state.calls.get(plan.callId)?.argumentsRedacted) return plan;
    unverifiable.push({ position: logged.meta.streamPosition, type: logged.type, callId: plan.callId, reason: "redacted" });
    return loggedPlans[index] ?? plan;
  });
  return { ...recomputed, data: { ...recomputed.data, plans } };
}
