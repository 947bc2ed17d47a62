import { initialTransition, transition, type AnyStateNode } from "xstate";
import { isTurnEvent } from "../contracts/events.js";
import type { RecordedTurnlogEvent } from "../log/event-log.js";
import { providerTurnMachine, type ProviderTurnInput } from "../../machines/provider-turn.machine.js";
import { SessionFold, type TurnSnapshot } from "./session-fold.js";

/** One state of the turn machine, as {@link turnMachineGraph} lists it. */
export interface TurnMachineState {
  name: string;
  /** A final state: the turn ends there. */
  final: boolean;
}

/** One transition of the turn machine that moves it (targetless ones, which only update the context, are left out). */
export interface TurnMachineTransition {
  /** The source state, or `null` for a transition the machine declares on its root: taken from any state (cancel, failure). */
  from: string | null;
  to: string;
  /** The logged event that causes it, e.g. `turn.tool_calls.gated`. */
  event: string;
  /** The guard that must hold, by name, when the transition has one. */
  guard?: string;
  /** The state is left and entered again (a provider retry re-enters `finalizing`). */
  reenter: boolean;
}

/** The turn machine's states and transitions, read from the machine definition itself. */
export interface TurnMachineGraph {
  id: string;
  initial: string;
  states: TurnMachineState[];
  transitions: TurnMachineTransition[];
}

/**
 * The provider turn machine (machines/provider-turn.machine.ts) as a graph: its states and the
 * transitions between them, read from the machine object (so a diagram drawn from it cannot drift
 * from the machine). Transitions are in the order the machine declares them, the root's last.
 *
 * @example
 * const graph = turnMachineGraph();
 * graph.transitions.filter((edge) => edge.from === "gating").map((edge) => edge.to); // ["awaitingApproval", "running", "packetizing"]
 */
export function turnMachineGraph(): TurnMachineGraph {
  const root = providerTurnMachine.root;
  const states = Object.values(root.states).map((node) => ({ name: node.key, final: node.type === "final" }));
  const transitions: TurnMachineTransition[] = [];
  const collect = (node: AnyStateNode, from: string | null) => {
    for (const [event, candidates] of node.transitions) {
      for (const candidate of candidates) {
        for (const target of candidate.target ?? []) {
          const guard = guardName(candidate.guard);
          transitions.push({ from, to: target.key, event, ...(guard !== undefined ? { guard } : {}), reenter: candidate.reenter === true });
        }
      }
    }
  };
  for (const node of Object.values(root.states)) collect(node, node.key);
  collect(root, null);
  const initial = root.initial.target[0]?.key;
  if (initial === undefined) throw new Error("the provider turn machine has no initial state");
  return { id: root.id, initial, states, transitions };
}

function guardName(guard: unknown): string | undefined {
  if (typeof guard === "string") return guard;
  if (typeof guard === "object" && guard !== null && typeof (guard as { type?: unknown }).type === "string") return (guard as { type: string }).type;
  return undefined;
}

/** One event of a turn that moved its machine (or re-entered a state). */
export interface TurnPathStep {
  /** Stream position of the event. */
  position: number;
  event: string;
  from: string;
  to: string;
  /** Taken through a transition declared on the machine's root (from any state). */
  anyState: boolean;
  /** The state was left and entered again (`from === to`). */
  reenter: boolean;
}

/** The way one turn went through the machine. */
export interface TurnPath {
  turnId: string;
  turnSeq: number;
  /** Stream position of `turn.started`. */
  startPosition: number;
  /** Every state the turn was in, in order: the initial one, then one per step (a re-entered state twice). */
  states: string[];
  steps: TurnPathStep[];
  /** The turn reached a final state. */
  done: boolean;
}

/**
 * How each turn of a session went through the provider turn machine: its events folded through
 * XState's pure `initialTransition` / `transition` (docs/design.md#2-the-turn-machine: the log rebuilds the machine's
 * state at any position), keeping each transition taken. The turn's input (attempts allowed,
 * decisions version) is read from the session state at its `turn.started`, as the live fold does.
 * An event the machine ignores (a targetless transition) adds no step.
 *
 * @example
 * const paths = turnPaths(await reader.events("s1"));
 * paths[0]?.states; // ["finalizing", "normalizing", "planning", "gating", "running", "packetizing", "continuing", "continued"]
 */
export function turnPaths(events: readonly RecordedTurnlogEvent[]): TurnPath[] {
  const fold = new SessionFold({ mutable: true });
  const paths: TurnPath[] = [];
  const open = new Map<string, { path: TurnPath; snapshot: TurnSnapshot }>();
  for (const recorded of events) {
    fold.apply(recorded);
    if (!isTurnEvent(recorded)) continue;
    const turnId = recorded.data.turnId;
    if (recorded.type === "turn.started") {
      const input: ProviderTurnInput = {
        turnId,
        turnSeq: recorded.data.turnSeq,
        iteration: recorded.data.iteration,
        maxAttempts: fold.state.provider?.maxAttempts ?? 1,
        decisionsVersion: fold.state.decisionsVersion,
      };
      const [snapshot] = initialTransition(providerTurnMachine, input);
      const path: TurnPath = { turnId, turnSeq: input.turnSeq, startPosition: recorded.meta.streamPosition, states: [String(snapshot.value)], steps: [], done: false };
      paths.push(path);
      open.set(turnId, { path, snapshot });
      continue;
    }
    const turn = open.get(turnId);
    if (turn === undefined) continue;
    // The machine reads only `type` and `data`: the recorded event is passed as it is.
    const event = recorded;
    const taken = providerTurnMachine.getTransitionData(turn.snapshot, event)[0];
    const [next] = transition(providerTurnMachine, turn.snapshot, event);
    const from = String(turn.snapshot.value);
    const to = String(next.value);
    turn.snapshot = next;
    if (taken?.target !== undefined && taken.target.length > 0) {
      turn.path.steps.push({ position: recorded.meta.streamPosition, event: recorded.type, from, to, anyState: taken.source === providerTurnMachine.root, reenter: from === to });
      turn.path.states.push(to);
    }
    if (next.status === "done") {
      turn.path.done = true;
      open.delete(turnId);
    }
  }
  return paths;
}
