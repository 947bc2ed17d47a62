import type { TurnlogEventType } from "../contracts/events.js";

/**
 * What an owed action is:
 * - `decision`: computed by the pure decider (`decide` / `decideAll`) from the state before it;
 *   the live runtime appends what it returns, and replay recomputes it and compares.
 * - `effect`: performed by the live runtime (never during replay); its outcome comes back as
 *   input events.
 * - `wait`: nothing to do until someone outside answers (a person's approval).
 */
export type ActionKind = "decision" | "effect" | "wait";

/**
 * Every action the turn machine (machines/provider-turn.machine.ts) and the session fold can owe,
 * with its kind and the events that settle it. This table is the one place that says what an
 * action is: the action-name types below are derived from it, and a test checks it against every
 * action the machine can emit and against the event catalogue (a decision settles with decision
 * events only; an effect or a wait with input events only).
 */
export const actionTable = {
  /** Between turns, after a user message or a continued turn: `turn.started`. */
  startTurn: { kind: "decision", settledBy: ["turn.started"] },
  /** Builds the request from the history (it may compact it first) and writes it ahead of the call. */
  requestProvider: { kind: "decision", settledBy: ["session.history.compacted", "session.diagnostic.recorded", "turn.provider.requested"] },
  /** Calls the provider with the request `requestProvider` built. */
  callProvider: { kind: "effect", settledBy: ["turn.provider.responded", "turn.provider.failed"] },
  completeTurn: { kind: "decision", settledBy: ["turn.completed"] },
  failTurn: { kind: "decision", settledBy: ["turn.failed"] },
  /** Tool calls cut off by the length limit a second time. */
  refuseTruncated: { kind: "decision", settledBy: ["turn.stopped"] },
  normalizeToolCalls: { kind: "decision", settledBy: ["turn.tool_calls.normalized"] },
  planToolCalls: { kind: "decision", settledBy: ["turn.tool_calls.planned"] },
  gateToolCalls: { kind: "decision", settledBy: ["turn.tool_calls.gated"] },
  /** A person answers each held call. */
  awaitApprovals: { kind: "wait", settledBy: ["turn.approval.granted", "turn.approval.denied"] },
  /**
   * While `running`, when no cleared call can start now (all started, or the next one must wait
   * for a running call): run the started calls and record how each ended.
   */
  runToolCalls: { kind: "effect", settledBy: ["turn.tool.succeeded", "turn.tool.failed"] },
  /** While `running`: the next cleared call in call order starts (docs/architecture.md#running-tools). */
  startTool: { kind: "decision", settledBy: ["turn.tool.started"] },
  packetizeResults: { kind: "decision", settledBy: ["turn.results.packetized"] },
  decideContinuation: { kind: "decision", settledBy: ["turn.continued", "turn.stopped"] },
  /** After the host's `turn.cancel.requested`: the turn stops, reason `cancelled`. */
  stopCancelled: { kind: "decision", settledBy: ["turn.stopped"] },
  /** The plan and gate decision of a host-routed call (`session.runTool`). */
  decideHostTool: { kind: "decision", settledBy: ["session.native_tool.decided"] },
} as const satisfies Record<string, { kind: ActionKind; settledBy: readonly TurnlogEventType[] }>;

/** The name of any action the machine or the fold can owe. */
export type ActionName = keyof typeof actionTable;

/** The actions of one kind. */
export type ActionOfKind<K extends ActionKind> = { [A in ActionName]: (typeof actionTable)[A]["kind"] extends K ? A : never }[ActionName];

/** An action the pure decider computes (and replay recomputes). */
export type DecisionAction = ActionOfKind<"decision">;
/** An action the live runtime performs. */
export type EffectAction = ActionOfKind<"effect">;
/** An action that waits for someone outside. */
export type WaitAction = ActionOfKind<"wait">;

/**
 * What is owed right after an event that no turn machine answers — a turn's end, and the events
 * between turns — in order. With the machine's own entry actions (each state of
 * machines/provider-turn.machine.ts names what it owes on entry) and `owedWhileResting`, this is
 * the whole of "what is owed next": the fold (session-fold.ts) sets its `pending` from it, and
 * `nextStep` reads only that. An event missing here owes nothing new (a between-turn event) or is
 * answered by the machine (a turn event).
 *
 * A between-turn event owes its action only between turns: one folded while a turn is open leaves
 * the turn's own actions owed.
 */
export const owedAfterEvent = {
  "session.user_message.added": ["startTurn"],
  "session.native_tool.requested": ["decideHostTool"],
  "session.native_tool.decided": [],
  "turn.completed": [],
  "turn.continued": ["startTurn"],
  "turn.stopped": [],
  "turn.failed": [],
} as const satisfies Partial<Record<TurnlogEventType, readonly ActionName[]>>;

/** The actions owed after an event of `type` that no turn machine answers; undefined when the table does not say. */
export function owedAfter(type: string): readonly ActionName[] | undefined {
  return Object.hasOwn(owedAfterEvent, type) ? owedAfterEvent[type as keyof typeof owedAfterEvent] : undefined;
}

/**
 * What a turn owes while its machine rests in a state that many events pass through without
 * owing anything new (an approval that is not the last, a tool that started): the state's own
 * entry action, still owed. For `runToolCalls`, the tool scheduler says whether the next cleared
 * call starts first (`startTool`, see `nextStep`).
 */
export const owedWhileResting: Readonly<Record<string, ActionName>> = {
  awaitingApproval: "awaitApprovals",
  running: "runToolCalls",
};

/** Whether a string names an action of the table. */
export function isAction(name: string): name is ActionName {
  return Object.hasOwn(actionTable, name);
}

/** The kind of an action. */
export function actionKind(action: ActionName): ActionKind {
  return actionTable[action].kind;
}

/** Whether an action is a decision of the pure decider. */
export function isDecisionAction(name: string): name is DecisionAction {
  return isAction(name) && actionTable[name].kind === "decision";
}

/**
 * The events a decision writes ahead of the one that settles it, in the same append: the history
 * decisions of `requestProvider` (`decideAll` returns them before its `turn.provider.requested`).
 * No state of a session ever holds one of them without the request after it, so replay compares
 * them with the request as one decision, and a fork is never cut right after one
 * (docs/replay.md, "Fork").
 */
export const leadingDecisionEventTypes: ReadonlySet<string> = new Set<string>(
  actionTable.requestProvider.settledBy.filter((type) => type !== "turn.provider.requested"),
);
