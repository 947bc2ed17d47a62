import { assign, setup } from "xstate";
import type { TurnEvent } from "../src/contracts/events.js";

/**
 * One provider turn (docs/design.md#2-the-turn-machine): finalize → normalize IDs → plan → gate → (approve) → run →
 * packetize → continue. Pure: it is driven with XState's `initialTransition` / `transition`, every
 * event it receives is a logged turnlog event, and the actions it returns are only *names* that
 * the runtime interprets — a decision to compute and append, or an effect to perform.
 */

export interface ProviderTurnInput {
  turnId: string;
  turnSeq: number;
  iteration: number;
  /** Provider attempts allowed for this turn (1 + retries). */
  maxAttempts: number;
  /**
   * The decisions version this turn's decisions are computed under (src/core/decision-versions.ts;
   * a machine imports no values from src/, so versions are compared as numbers here). Absent: 1.
   */
  decisionsVersion?: number;
}

export interface ProviderTurnContext extends ProviderTurnInput {
  /** The attempt number of the last `turn.provider.requested`. */
  attempt: number;
  /** Responses cut off by the length limit inside tool calls (never executed; retried once). */
  truncations: number;
  /** Attempts that ended because the process died during the provider call (`kind: "interrupted"`). */
  interrupted: number;
  /** Calls held for a person's answer. */
  awaiting: string[];
  /** Calls cleared to run that have not reached a terminal event. */
  toRun: string[];
  /** Calls whose `turn.tool.started` is logged (a started call without an end is in doubt). */
  started: string[];
}

/** The names of what the runtime must do after a transition. */
export type ProviderTurnActionType =
  | "requestProvider"
  | "callProvider"
  | "completeTurn"
  | "failTurn"
  | "refuseTruncated"
  | "normalizeToolCalls"
  | "planToolCalls"
  | "gateToolCalls"
  | "awaitApprovals"
  | "runToolCalls"
  | "packetizeResults"
  | "decideContinuation"
  | "stopCancelled";

const without = (list: readonly string[], item: string) => list.filter((value) => value !== item);

const noop = () => {};

type FailedEvent = Extract<TurnEvent, { type: "turn.provider.failed" }>;

/** What a guard or an assignment of this machine reads: the context before the event, and the event. */
export interface ProviderTurnArgs {
  context: ProviderTurnContext;
  event: TurnEvent;
}

/**
 * Whether another provider attempt is left after a failed one. Decisions version 1 counts every
 * attempt, so a crash during a provider call used one up. From version 2 an attempt a crash
 * interrupted (recovery's `kind: "interrupted"`) is not counted against `maxAttempts` — only
 * attempts that failed on their own are — though a turn still fails once its attempts were
 * interrupted more than `maxAttempts` times, so a process that dies on every call stops retrying.
 */
function attemptLeft(context: ProviderTurnContext, event: FailedEvent): boolean {
  if ((context.decisionsVersion ?? 1) < 2) return context.attempt < context.maxAttempts;
  const interrupted = context.interrupted + (event.data.kind === "interrupted" ? 1 : 0);
  return context.attempt - interrupted < context.maxAttempts && interrupted <= context.maxAttempts;
}

/** A turn's context when it starts. */
export function initialTurnContext(input: ProviderTurnInput): ProviderTurnContext {
  return { ...input, attempt: 0, truncations: 0, interrupted: 0, awaiting: [], toRun: [], started: [] };
}

/**
 * The machine's guards, by name. Exported so that the fast step (provider-turn.step.ts) evaluates
 * the very same functions XState does.
 */
export const providerTurnGuards = {
  respondedWithToolCalls: ({ event }: ProviderTurnArgs) => event.type === "turn.provider.responded" && event.data.toolCalls.length > 0,
  retryLeft: ({ context, event }: ProviderTurnArgs) => event.type === "turn.provider.failed" && event.data.retryable && attemptLeft(context, event),
  // Tool calls cut off by the length limit get one retry on the same route, then a refusal.
  firstTruncation: ({ context, event }: ProviderTurnArgs) =>
    event.type === "turn.provider.failed" && event.data.kind === "truncated-tool-calls" && context.truncations === 0 && attemptLeft(context, event),
  truncatedAgain: ({ event }: ProviderTurnArgs) => event.type === "turn.provider.failed" && event.data.kind === "truncated-tool-calls",
  anyAsk: ({ event }: ProviderTurnArgs) =>
    event.type === "turn.tool_calls.gated" && event.data.decisions.some((decision) => decision.decision === "ask"),
  anyAllow: ({ event }: ProviderTurnArgs) =>
    event.type === "turn.tool_calls.gated" && event.data.decisions.some((decision) => decision.decision === "allow"),
  lastAnswerWithCallsToRun: ({ context, event }: ProviderTurnArgs) => {
    if (event.type !== "turn.approval.granted" && event.type !== "turn.approval.denied") return false;
    const remaining = without(context.awaiting, event.data.callId);
    const toRun = event.type === "turn.approval.granted" ? [...context.toRun, event.data.callId] : context.toRun;
    return remaining.length === 0 && toRun.length > 0;
  },
  lastAnswerNothingToRun: ({ context, event }: ProviderTurnArgs) => {
    if (event.type !== "turn.approval.granted" && event.type !== "turn.approval.denied") return false;
    const remaining = without(context.awaiting, event.data.callId);
    const toRun = event.type === "turn.approval.granted" ? [...context.toRun, event.data.callId] : context.toRun;
    return remaining.length === 0 && toRun.length === 0;
  },
  lastToolTerminal: ({ context, event }: ProviderTurnArgs) =>
    (event.type === "turn.tool.succeeded" || event.type === "turn.tool.failed" || event.type === "turn.tool.interrupted") &&
    context.toRun.length === 1 &&
    context.toRun[0] === event.data.callId,
};

/**
 * The machine's context updates, by action name: each returns the part of the context it
 * changes. The machine wraps each in XState's `assign`; the fast step applies the same functions.
 * Every other action of the machine is only a name the runtime interprets.
 */
export const providerTurnAssignments = {
  recordAttempt: ({ event }: ProviderTurnArgs): Partial<ProviderTurnContext> =>
    event.type === "turn.provider.requested" ? { attempt: event.data.attempt } : {},
  countTruncation: ({ context }: ProviderTurnArgs): Partial<ProviderTurnContext> => ({ truncations: context.truncations + 1 }),
  countInterrupted: ({ context, event }: ProviderTurnArgs): Partial<ProviderTurnContext> => ({
    interrupted: context.interrupted + (event.type === "turn.provider.failed" && event.data.kind === "interrupted" ? 1 : 0),
  }),
  recordAsked: ({ event }: ProviderTurnArgs): Partial<ProviderTurnContext> =>
    event.type === "turn.tool_calls.gated"
      ? {
          awaiting: event.data.decisions.filter((d) => d.decision === "ask").map((d) => d.callId),
          toRun: event.data.decisions.filter((d) => d.decision === "allow").map((d) => d.callId),
        }
      : {},
  recordAllowed: ({ event }: ProviderTurnArgs): Partial<ProviderTurnContext> =>
    event.type === "turn.tool_calls.gated" ? { toRun: event.data.decisions.filter((d) => d.decision === "allow").map((d) => d.callId) } : {},
  recordAnswer: ({ context, event }: ProviderTurnArgs): Partial<ProviderTurnContext> => {
    if (event.type !== "turn.approval.granted" && event.type !== "turn.approval.denied") return {};
    return {
      awaiting: without(context.awaiting, event.data.callId),
      toRun: event.type === "turn.approval.granted" ? [...context.toRun, event.data.callId] : context.toRun,
    };
  },
  recordStarted: ({ context, event }: ProviderTurnArgs): Partial<ProviderTurnContext> =>
    event.type === "turn.tool.started" ? { started: [...context.started, event.data.callId] } : {},
  recordTerminal: ({ context, event }: ProviderTurnArgs): Partial<ProviderTurnContext> => {
    if (event.type !== "turn.tool.succeeded" && event.type !== "turn.tool.failed" && event.type !== "turn.tool.interrupted") return {};
    return { toRun: without(context.toRun, event.data.callId) };
  },
};

export const providerTurnMachine = setup({
  types: {
    context: {} as ProviderTurnContext,
    input: {} as ProviderTurnInput,
    events: {} as TurnEvent,
  },
  actions: {
    requestProvider: noop,
    callProvider: noop,
    completeTurn: noop,
    failTurn: noop,
    refuseTruncated: noop,
    normalizeToolCalls: noop,
    planToolCalls: noop,
    gateToolCalls: noop,
    awaitApprovals: noop,
    runToolCalls: noop,
    packetizeResults: noop,
    decideContinuation: noop,
    stopCancelled: noop,
    recordAttempt: assign(providerTurnAssignments.recordAttempt),
    countTruncation: assign(providerTurnAssignments.countTruncation),
    countInterrupted: assign(providerTurnAssignments.countInterrupted),
    recordAsked: assign(providerTurnAssignments.recordAsked),
    recordAllowed: assign(providerTurnAssignments.recordAllowed),
    recordAnswer: assign(providerTurnAssignments.recordAnswer),
    recordStarted: assign(providerTurnAssignments.recordStarted),
    recordTerminal: assign(providerTurnAssignments.recordTerminal),
  },
  guards: providerTurnGuards,
}).createMachine({
  id: "providerTurn",
  context: ({ input }) => initialTurnContext(input),
  initial: "finalizing",
  // The host's cancel, a stop and unrecoverable errors end the turn from any state.
  on: {
    "turn.cancel.requested": ".cancelling",
    "turn.stopped": ".stopped",
    "turn.failed": ".failed",
  },
  states: {
    finalizing: {
      entry: "requestProvider",
      on: {
        "turn.provider.requested": {
          actions: ["recordAttempt", "callProvider"],
        },
        "turn.provider.responded": [
          { guard: "respondedWithToolCalls", target: "normalizing" },
          { actions: "completeTurn" },
        ],
        "turn.provider.failed": [
          { guard: "firstTruncation", target: "finalizing", reenter: true, actions: "countTruncation" },
          { guard: "truncatedAgain", actions: ["countTruncation", "refuseTruncated"] },
          { guard: "retryLeft", target: "finalizing", reenter: true, actions: "countInterrupted" },
          { actions: "failTurn" },
        ],
        "turn.completed": "completed",
      },
    },
    normalizing: {
      entry: "normalizeToolCalls",
      on: { "turn.tool_calls.normalized": "planning" },
    },
    planning: {
      entry: "planToolCalls",
      on: { "turn.tool_calls.planned": "gating" },
    },
    gating: {
      entry: "gateToolCalls",
      on: {
        "turn.tool_calls.gated": [
          {
            guard: "anyAsk",
            target: "awaitingApproval",
            actions: "recordAsked",
          },
          {
            guard: "anyAllow",
            target: "running",
            actions: "recordAllowed",
          },
          { target: "packetizing" },
        ],
      },
    },
    awaitingApproval: {
      entry: "awaitApprovals",
      on: {
        "turn.approval.granted": [
          { guard: "lastAnswerWithCallsToRun", target: "running", actions: "recordAnswer" },
          { guard: "lastAnswerNothingToRun", target: "packetizing", actions: "recordAnswer" },
          { actions: "recordAnswer" },
        ],
        "turn.approval.denied": [
          { guard: "lastAnswerWithCallsToRun", target: "running", actions: "recordAnswer" },
          { guard: "lastAnswerNothingToRun", target: "packetizing", actions: "recordAnswer" },
          { actions: "recordAnswer" },
        ],
      },
    },
    running: {
      entry: "runToolCalls",
      on: {
        "turn.tool.started": { actions: "recordStarted" },
        "turn.tool.succeeded": [
          { guard: "lastToolTerminal", target: "packetizing", actions: "recordTerminal" },
          { actions: "recordTerminal" },
        ],
        "turn.tool.failed": [
          { guard: "lastToolTerminal", target: "packetizing", actions: "recordTerminal" },
          { actions: "recordTerminal" },
        ],
        "turn.tool.interrupted": [
          { guard: "lastToolTerminal", target: "packetizing", actions: "recordTerminal" },
          { actions: "recordTerminal" },
        ],
      },
    },
    packetizing: {
      entry: "packetizeResults",
      on: { "turn.results.packetized": "continuing" },
    },
    continuing: {
      entry: "decideContinuation",
      on: { "turn.continued": "continued" },
    },
    /** The host cancelled: the turn stops (`turn.stopped`, reason `cancelled`). */
    cancelling: {
      entry: "stopCancelled",
    },
    completed: { type: "final" },
    continued: { type: "final" },
    stopped: { type: "final" },
    failed: { type: "final" },
  },
});
