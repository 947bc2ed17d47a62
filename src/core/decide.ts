import type { GitLink } from "../util/git-links.js";
import type { Budgets } from "../contracts/budgets.js";
import type { TurnlogEvent } from "../contracts/events.js";
import type { PolicySnapshot } from "../contracts/policy.js";
import { NoDecisionOwedError } from "../errors/no-decision-owed-error.js";
import { buildRequestHistory } from "../providers/format-history.js";
import type { HistoryCompressor } from "../history/history-compressor.js";
import type { NativeHistory } from "../history/native-history.js";
import type { ProviderRequest } from "../providers/provider.js";
import { gateToolCall, type GateEnvironment } from "../policy/gate.js";
import { defaultSecretRedactor, type SecretRedactor } from "../policy/secrets/secret-detector.js";
import type { CallState, SessionState, TurnState } from "../projections/session-state.js";
import { defaultMaxResultChars } from "../tools/define-tool.js";
import { packetize } from "../tools/packetizer.js";
import { normalizeToolCalls } from "../tools/tool-call-normalizer.js";
import { planToolCalls } from "../tools/tool-call-planner.js";
import type { ToolPlan } from "../contracts/events.js";
import type { ToolRegistry } from "../tools/tool-registry.js";
import type { ProviderTurnContext } from "../../machines/provider-turn.machine.js";
import type { DecisionAction } from "./actions.js";
import { nextToolStart } from "./tool-schedule.js";

/** What a decision is computed from: the state before it, and the configuration it is judged by. */
export interface DecisionInputs {
  state: SessionState;
  /** The active turn's machine context (absent for `startTurn`). */
  turn?: ProviderTurnContext;
  registry: ToolRegistry;
  policy: PolicySnapshot;
  budgets: Budgets;
  /**
   * The real argument text of a call whose logged arguments are redacted, while the process that
   * received it lives (never in replay): planning validates the real values, the log keeps the
   * redacted ones.
   */
  rawArguments?: (turnId: string, index: number) => string | undefined;
  /**
   * How a plan made from real arguments is redacted before it is logged: the runtime's redactor,
   * with the values its host registered (`createRuntime({ secrets })`). Replay never needs it:
   * such a plan cannot be recomputed and is taken as logged.
   */
  redactor?: SecretRedactor;
  /**
   * What the gate reads of the machine under decisions version 1: how it resolves paths through
   * symlinks (and, when given, the temp and home directories). From version 2 the gate reads them
   * from the log instead (see `observeRealPath`).
   */
  gate?: GateEnvironment;
  /**
   * The decisions version to compute under. Default: the session's own (`state.decisionsVersion`,
   * from the log); an upgrade preview passes the newest.
   */
  decisionsVersion?: number;
  /**
   * Decisions version 2 on, live only: resolves a path the log has no real path for yet, through
   * the file system. The caller records what it resolved (`session.environment.observed`) before
   * the decision, so replay finds it in the log. Without it (replay), a path the log does not hold
   * makes the gate fail closed.
   */
  observeRealPath?: (absolute: string) => string;
  /**
   * Decisions version 5 on, live only: reads the directories a git entry the log has not recorded
   * names (`readGitLinks`); recorded like real paths. Without it (replay) an unrecorded entry makes
   * the gate fail closed.
   */
  observeGitLinks?: (absolute: string) => readonly GitLink[];
  /** The real input text of a host-routed call whose logged input is redacted (live only). */
  rawHostInput?: (callId: string) => string | undefined;
  /** Replay: the logged plan of a host-routed call whose input was redacted (not recomputable). */
  hostPlanOverride?: ToolPlan;
  /** Summarizes history units that no longer fit (default: the deterministic compressor). */
  compressor?: HistoryCompressor;
}

/** What a decision returns: the events to append, and for `requestProvider` the request it built. */
export interface Decision {
  /** The decision events, appended together in one atomic append. */
  events: TurnlogEvent[];
  /**
   * `requestProvider` only: the provider request the decision built from the history — the
   * messages its `turn.provider.requested` counts, the system text, the tools it names. The
   * `callProvider` effect sends exactly this.
   */
  request?: ProviderRequest;
}

/**
 * The decision an action calls for. Every action decides one event, except `requestProvider`:
 * building the request from the history may first compact it (`session.history.compacted`) and
 * records what was selected, skipped, repaired and serialized (`session.diagnostic.recorded`),
 * then `turn.provider.requested`; it also returns the request it built.
 */
export function decideAll(action: DecisionAction, inputs: DecisionInputs): Decision {
  if (action !== "requestProvider") return { events: [decide(action, inputs)] };
  const context = inputs.turn;
  const provider = inputs.state.provider;
  if (context === undefined || provider === null) throw new Error("decide(requestProvider): no active turn or no provider");
  const built = buildRequestHistory(inputs.state, inputs.compressor, decisionsVersionOf(inputs));
  const events: TurnlogEvent[] = [];
  if (built.compaction !== undefined) events.push({ type: "session.history.compacted", data: built.compaction });
  for (const diagnostic of built.diagnostics) events.push({ type: "session.diagnostic.recorded", data: diagnostic });
  events.push({
    type: "turn.provider.requested",
    data: {
      turnId: context.turnId,
      attempt: context.attempt + 1,
      providerId: provider.id,
      format: provider.format,
      messageCount: built.messages.length,
      toolNames: inputs.registry.names(),
    },
  });
  return { events, request: providerRequest(built, inputs.registry) };
}

/** The request a built history makes, with the registry's tools. */
export function providerRequest(built: NativeHistory, registry: ToolRegistry): ProviderRequest {
  return { messages: built.messages, tools: registry.providerSchemas(), ...(built.system !== undefined ? { system: built.system } : {}) };
}

/**
 * Computes the decision event an action calls for. Pure: the live runtime appends what it returns,
 * and replay recomputes it from the recorded inputs and compares.
 */
export function decide(action: DecisionAction, inputs: DecisionInputs): TurnlogEvent {
  const { state, registry, policy, budgets } = inputs;
  if (action === "decideHostTool") return decideHostTool(inputs);
  if (action === "startTurn") {
    // Counted, not measured from `turns`, which a replay fold trims (SessionFold retain "live").
    const turnSeq = state.totals.turns + 1;
    return { type: "turn.started", data: { turnId: `turn-${turnSeq}`, turnSeq, iteration: state.current.iterations + 1 } };
  }
  const context = inputs.turn;
  if (context === undefined) throw new Error(`decide(${action}): no active turn`);
  const turn = findTurn(state, context.turnId);
  const turnId = turn.turnId;
  switch (action) {
    case "requestProvider":
      return decideAll(action, inputs).events.at(-1) as TurnlogEvent;
    case "completeTurn":
      return { type: "turn.completed", data: { turnId, text: turn.response?.content ?? "" } };
    case "failTurn": {
      const failure = turn.failures.at(-1);
      const kind = failure?.kind ?? "unknown";
      const reason = failure?.retryable ? `provider:${kind}:retries-exhausted` : kind === "script-exhausted" ? kind : `provider:${kind}`;
      return { type: "turn.failed", data: { turnId, reason, ...(failure?.message !== undefined ? { message: failure.message } : {}) } };
    }
    case "stopCancelled":
      return { type: "turn.stopped", data: { turnId, reason: "cancelled" } };
    case "refuseTruncated":
      return { type: "turn.stopped", data: { turnId, reason: "refused:truncated-tool-calls" } };
    case "normalizeToolCalls": {
      const response = turn.response;
      if (response === undefined) throw new Error("decide(normalizeToolCalls): no response");
      return {
        type: "turn.tool_calls.normalized",
        data: normalizeToolCalls({
          // A turn copied into a fork keeps the IDs it was given in its original session.
          sessionId: state.forkedFrom !== null && turn.startPosition <= state.forkedFrom.position ? state.forkedFrom.sessionId : state.sessionId,
          turnId,
          turnSeq: turn.turnSeq,
          content: response.content,
          toolCalls: response.toolCalls,
          finishReason: response.finishReason,
          usedIds: { has: (id) => state.calls.has(id) || (state.retiredCallIds?.has(id) ?? false) },
        }),
      };
    }
    case "planToolCalls": {
      const calls = callsOf(state, turn);
      const plans = planToolCalls(
        calls.map((call) => ({ id: call.callId, name: call.name, argumentsText: argumentsToPlan(call, inputs.rawArguments) })),
        registry,
      ).map((plan, position) => (calls[position]?.argumentsRedacted ? redactPlan(plan, inputs.redactor) : plan));
      // Calls beyond a budget are not dropped silently: they are rejected, and their packet says so.
      const before = state.current.toolCalls - calls.length;
      const allowed = Math.max(0, Math.min(budgets.maxToolCallsPerTurn ?? Infinity, budgets.maxToolCalls - before));
      return {
        type: "turn.tool_calls.planned",
        data: {
          turnId,
          plans: plans.map((plan, position) =>
            position < allowed
              ? plan
              : {
                  callId: plan.callId,
                  status: "rejected" as const,
                  ...(plan.tool !== undefined ? { tool: plan.tool } : {}),
                  reason: "over-budget" as const,
                  issues: [{ path: "", message: "the tool-call budget for this request is used up" }],
                },
          ),
        },
      };
    }
    case "gateToolCalls": {
      const decisions = callsOf(state, turn)
        .filter((call) => call.status === "planned")
        .map((call) => {
          const tool = registry.get(call.name);
          // The gate judges the arguments as logged (redacted), so replay can recompute it for every call.
          return gateToolCall({ callId: call.callId, status: "planned", tool: call.name, input: call.input }, tool, policy, gateEnvironment(inputs));
        });
      return { type: "turn.tool_calls.gated", data: { turnId, approvalMode: policy.approvalMode, decisions } };
    }
    case "packetizeResults": {
      const packets = packetize(
        callsOf(state, turn).map((call) => ({
          callId: call.callId,
          tool: call.name,
          maxResultChars: registry.get(call.name)?.maxResultChars ?? defaultMaxResultChars,
          ...(call.rejection !== undefined ? { rejection: call.rejection } : {}),
          ...(call.decision !== undefined ? { decision: call.decision.decision } : {}),
          ...(call.approval !== undefined ? { approval: call.approval } : {}),
          ...(call.result !== undefined ? { result: call.result } : {}),
        })),
      );
      return { type: "turn.results.packetized", data: { turnId, packets } };
    }
    case "startTool": {
      // The one tool scheduler (tool-schedule.ts): here, a start the log holds where the scheduler
      // says none is owed is replay's divergence.
      const next = nextToolStart(state, turn, registry);
      if (next.kind !== "start") throw new NoDecisionOwedError(next.reason);
      return next.event;
    }
    case "decideContinuation": {
      const reason = budgetExceeded(state, budgets);
      return reason === undefined
        ? { type: "turn.continued", data: { turnId, reason: "tool-results" } }
        : { type: "turn.stopped", data: { turnId, reason } };
    }
  }
}

/** The budget a continuation would exceed, if any (docs/design.md#8-policy-and-containment). */
function budgetExceeded(state: SessionState, budgets: Budgets): string | undefined {
  const current = state.current;
  if (current.iterations >= budgets.maxIterations) return "budget:max-iterations";
  if (current.toolCalls >= budgets.maxToolCalls) return "budget:max-tool-calls";
  for (const count of current.failures.values()) {
    if (count >= budgets.maxRepeatedFailures) return "budget:repeated-failures";
  }
  if (current.startedAt !== null && state.lastRecordedAt !== null) {
    const worked = Date.parse(state.lastRecordedAt) - Date.parse(current.startedAt) - current.pausedMs;
    if (worked >= budgets.wallClockMs) return "budget:wall-clock";
  }
  return undefined;
}

/**
 * The text to plan a call from: the real arguments when they were redacted and are still in
 * memory; none (so the plan is rejected as `arguments-unavailable`) when they are gone.
 */
function argumentsToPlan(call: CallState, rawArguments: DecisionInputs["rawArguments"]): string | undefined {
  if (!call.argumentsRedacted) return call.argumentsText;
  return rawArguments?.(call.turnId, call.index);
}

/** A plan made from real arguments, as it may be logged: input and issue texts redacted. */
function redactPlan(plan: ToolPlan, redactor: SecretRedactor = defaultSecretRedactor): ToolPlan {
  const redacted: ToolPlan = { ...plan };
  if (plan.status === "rejected" && plan.reason === "missing-arguments") redacted.reason = "arguments-unavailable";
  if (plan.input !== undefined) redacted.input = redactor.redactValue(plan.input).value;
  if (plan.issues !== undefined) redacted.issues = plan.issues.map((issue) => ({ path: redactor.redactText(issue.path).text, message: redactor.redactText(issue.message).text }));
  return redacted;
}

/**
 * A host-routed call (docs/embedding.md#host-routed-calls, HostToolExecutor): planned against its tool's schema and
 * gated exactly like a model's call. It runs when allowed, or when the gate asks and a person
 * approved it up front; it never joins a provider turn or the native history.
 */
function decideHostTool(inputs: DecisionInputs): TurnlogEvent {
  const { state, registry, policy } = inputs;
  const call = state.hostCalls.at(-1);
  if (call === undefined) throw new NoDecisionOwedError("no host-routed call was requested");
  let plan = inputs.hostPlanOverride;
  if (plan === undefined) {
    const argumentsText = call.inputRedacted ? inputs.rawHostInput?.(call.callId) : JSON.stringify(call.input ?? {});
    const [planned] = planToolCalls([{ id: call.callId, name: call.tool, argumentsText }], registry);
    plan = call.inputRedacted ? redactPlan(planned as ToolPlan, inputs.redactor) : (planned as ToolPlan);
  }
  if (plan.status !== "planned") return { type: "session.native_tool.decided", data: { callId: call.callId, plan, decision: null, runs: false } };
  const decision = gateToolCall(plan, registry.get(call.tool), policy, gateEnvironment(inputs));
  const runs = decision.decision === "allow" || (decision.decision === "ask" && call.approvedBy !== undefined);
  return { type: "session.native_tool.decided", data: { callId: call.callId, plan, decision, runs } };
}

/** The decisions version a decision is computed under: the caller's override, else the session's own. */
export function decisionsVersionOf(inputs: Pick<DecisionInputs, "state" | "decisionsVersion">): number {
  return inputs.decisionsVersion ?? inputs.state.decisionsVersion;
}

/**
 * What the gate may consult besides the policy. Decisions version 1 read the machine it runs on
 * (the caller's `gate`: real paths through the live file system, `os.tmpdir()`, `os.homedir()`),
 * so such a log replays identical only where those have not changed. From version 2 everything
 * comes from the log: the temp and home directories recorded when the session started (or was
 * upgraded), and each real path as recorded when it was first observed.
 */
export function gateEnvironment(inputs: Pick<DecisionInputs, "state" | "decisionsVersion" | "gate" | "observeRealPath" | "observeGitLinks">): GateEnvironment {
  const { state } = inputs;
  const version = decisionsVersionOf(inputs);
  const approvedTools = state.toolApprovals.map((approval) => approval.tool);
  // Version 3: an "always" on a command tool covers its approved command prefix, not the whole tool.
  const approvedCommands =
    version >= 3
      ? state.toolApprovals.flatMap((approval) =>
          approval.commandPrefix !== undefined
            ? [{ tool: approval.tool, prefix: approval.commandPrefix, ...(approval.commandScope !== undefined ? { scope: approval.commandScope } : {}) }]
            : [],
        )
      : undefined;
  if (version < 2) return { ...inputs.gate, approvedTools, decisionsVersion: version };
  const observe = inputs.observeRealPath;
  const environment = state.environment;
  return {
    realPath: (absolute) => {
      const recorded = state.realPaths.get(absolute);
      if (recorded !== undefined) return recorded;
      // The gate turns this into a fail-closed block: replay never guesses a path the log lacks.
      if (observe === undefined) throw new Error(`the log records no real path for ${absolute}`);
      return observe(absolute);
    },
    ...(version >= 5
      ? {
          gitLinks: (absolute: string) => {
            const recorded = state.gitLinks.get(absolute);
            if (recorded !== undefined) return recorded;
            if (inputs.observeGitLinks === undefined) throw new Error(`the log records no git links for ${absolute}`);
            return inputs.observeGitLinks(absolute);
          },
        }
      : {}),
    ...(environment !== null ? { tempDir: environment.tempDir, homeDir: environment.homeDir } : {}),
    approvedTools,
    ...(approvedCommands !== undefined ? { approvedCommands } : {}),
    decisionsVersion: version,
  };
}

function findTurn(state: SessionState, turnId: string): TurnState {
  const turn = state.turns.findLast((candidate) => candidate.turnId === turnId);
  if (turn === undefined) throw new Error(`decide: unknown turn ${turnId}`);
  return turn;
}

function callsOf(state: SessionState, turn: TurnState): CallState[] {
  return turn.callIds.map((id) => {
    const call = state.calls.get(id);
    if (call === undefined) throw new Error(`decide: unknown call ${id}`);
    return call;
  });
}
