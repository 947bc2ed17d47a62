import { activeTurn } from "../projections/session-state.js";
import type { ToolRegistry } from "../tools/tool-registry.js";
import { actionTable, isAction, owedWhileResting, type DecisionAction, type EffectAction, type WaitAction } from "./actions.js";
import type { SessionFold } from "./session-fold.js";
import { nextToolStart } from "./tool-schedule.js";

/**
 * What a session owes next:
 * - `decision`: compute it with `decideAll(action, …)` and append what it returns;
 * - `effect`: perform it (call the provider with the request `requestProvider` built; run the
 *   calls whose start is logged) and append how it ended;
 * - `wait`: nothing until a person answers the held calls (`turn.approval.*`);
 * - `none`: nothing is owed — the session waits for a user message (or a host-routed call).
 * `reason` says, for `runToolCalls`, why no call can start now.
 */
export type Step =
  | { kind: "decision"; action: DecisionAction }
  | { kind: "effect"; action: EffectAction; reason?: string }
  | { kind: "wait"; action: WaitAction }
  | { kind: "none" };

/**
 * The one answer to "what is owed next", used by the live loop, replay and recovery alike. It is
 * the first action the fold holds as owed — what the turn machine's last transition owes, or, after
 * an event the machine does not answer, what `owedAfterEvent` (actions.ts) says — else what the
 * machine's resting state still owes (`owedWhileResting`). Only `runToolCalls` is refined: the tool
 * scheduler (`nextToolStart`) says whether the next cleared call starts now (`decision startTool`)
 * or whether the calls already started must end first (`effect runToolCalls` — also what a
 * reopened session owes for a call found started and not ended).
 *
 * `registry` is the tool set the scheduler reads (which calls may overlap); it is only read while
 * tools run.
 */
export function nextStep(fold: SessionFold, registry: ToolRegistry): Step {
  const turnState = fold.turnState;
  const owed = fold.pending[0] ?? (turnState !== undefined && Object.hasOwn(owedWhileResting, turnState) ? owedWhileResting[turnState] : undefined);
  if (owed === undefined) return { kind: "none" };
  if (owed === "runToolCalls") {
    const turn = activeTurn(fold.state);
    if (turn === undefined) throw new Error("nextStep: the machine is running tools, the state has no active turn");
    const next = nextToolStart(fold.state, turn, registry);
    return next.kind === "start" ? { kind: "decision", action: "startTool" } : { kind: "effect", action: "runToolCalls", reason: next.reason };
  }
  return stepOf(owed);
}

function stepOf(action: string): Step {
  if (!isAction(action)) throw new Error(`nextStep: the turn machine owes "${action}", which the action table does not know`);
  switch (actionTable[action].kind) {
    case "decision":
      return { kind: "decision", action: action as DecisionAction };
    case "effect":
      return { kind: "effect", action: action as EffectAction };
    case "wait":
      return { kind: "wait", action: action as WaitAction };
  }
}
