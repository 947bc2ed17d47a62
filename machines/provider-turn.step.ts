import type { TurnEvent } from "../src/contracts/events.js";
import {
  initialTurnContext,
  providerTurnAssignments,
  providerTurnGuards,
  providerTurnMachine,
  type ProviderTurnContext,
  type ProviderTurnInput,
} from "./provider-turn.machine.js";

/**
 * The provider turn machine without XState on the hot path. XState's pure `transition` resolves
 * a snapshot, an event, the guards and the action list generically, which costs tens of
 * microseconds per event; the live loop and replay run every turn event through the machine.
 *
 * This module compiles the machine's own config (`providerTurnMachine.config`), once, at load,
 * into a table: for each state, the legal event types and, for each, the candidate transitions in
 * the order XState tries them (the state's own, then the root's), each with its guard, target and
 * action names; and each state's entry actions. The guards and context updates it evaluates are the
 * machine's own functions (`providerTurnGuards`, `providerTurnAssignments`), so nothing about the
 * turn's behaviour is written twice. The config features this compiler does not know (nested
 * states, exit actions, `always`, delays, invocations, inline functions) make it throw at load
 * rather than step differently. property-tests/provider-turn-step.test.ts proves, event by event
 * over random sequences, that it agrees with XState's `can` and `transition`.
 */

/** The state of one turn: the machine's state value and its context. */
export interface ProviderTurnState {
  readonly value: string;
  readonly context: ProviderTurnContext;
}

/** The result of one step: the next state, the actions owed (names, in order), and whether the turn is over. */
export interface ProviderTurnStep extends ProviderTurnState {
  /** What the runtime must do now, in the order XState lists them (context updates are not listed). */
  readonly actions: readonly string[];
  /** True when the machine reached a final state (`value` says which). */
  readonly done: boolean;
}

type Guard = (args: { context: ProviderTurnContext; event: TurnEvent }) => boolean;
type Assignment = (args: { context: ProviderTurnContext; event: TurnEvent }) => Partial<ProviderTurnContext>;

interface Candidate {
  readonly guard: Guard | undefined;
  /** Undefined: a targetless transition (the state is kept, no entry actions). */
  readonly target: string | undefined;
  /** Run the target's entry actions (a move to another state, or `reenter` to the same one). */
  readonly enters: boolean;
  readonly actions: readonly string[];
}

interface CompiledState {
  readonly final: boolean;
  readonly entry: readonly string[];
  readonly on: ReadonlyMap<string, readonly Candidate[]>;
}

const guards: Record<string, Guard> = providerTurnGuards;
const assignments: Record<string, Assignment> = providerTurnAssignments;

function names(value: unknown, where: string): string[] {
  if (value === undefined) return [];
  const list = Array.isArray(value) ? value : [value];
  for (const item of list) if (typeof item !== "string") throw new Error(`provider-turn.step: ${where}: only named actions are supported`);
  return list as string[];
}

function only(config: object, allowed: readonly string[], where: string): void {
  for (const key of Object.keys(config)) {
    if (!allowed.includes(key)) throw new Error(`provider-turn.step: ${where}: "${key}" is not supported by the compiled table`);
  }
}

/** Compiles one `on` entry of `source` (a state name, or undefined for the root). */
function candidates(source: string | undefined, definition: unknown, stateNames: ReadonlySet<string>, where: string): Candidate[] {
  const list = Array.isArray(definition) ? definition : [definition];
  return list.map((item: unknown) => {
    const transition = (typeof item === "string" ? { target: item } : item) as Record<string, unknown>;
    only(transition, ["guard", "target", "reenter", "actions"], where);
    const guardName = transition.guard;
    if (guardName !== undefined && (typeof guardName !== "string" || guards[guardName] === undefined)) {
      throw new Error(`provider-turn.step: ${where}: guard must be the name of one of providerTurnGuards`);
    }
    const rawTarget = transition.target;
    let target: string | undefined;
    if (rawTarget !== undefined) {
      if (typeof rawTarget !== "string") throw new Error(`provider-turn.step: ${where}: only one target is supported`);
      // The root targets its children as ".child"; a state targets its siblings by name.
      target = source === undefined ? (rawTarget.startsWith(".") ? rawTarget.slice(1) : undefined) : rawTarget;
      if (target === undefined || !stateNames.has(target)) throw new Error(`provider-turn.step: ${where}: unknown target "${rawTarget}"`);
    }
    const reenter = transition.reenter === true;
    if (target !== undefined && target === source && !reenter) throw new Error(`provider-turn.step: ${where}: a self-transition needs reenter: true`);
    return {
      guard: guardName === undefined ? undefined : guards[guardName as string],
      target,
      enters: target !== undefined && (target !== source || reenter),
      actions: names(transition.actions, where),
    };
  });
}

function compile(): { initial: string; states: ReadonlyMap<string, CompiledState> } {
  const config = providerTurnMachine.config as unknown as Record<string, unknown>;
  // `schemas` is metadata XState adds (undefined here); it does not change transitions.
  only(config, ["id", "context", "initial", "on", "states", "schemas"], "root");
  const rawStates = config.states as Record<string, Record<string, unknown>>;
  const stateNames = new Set(Object.keys(rawStates));
  const rootOn = Object.entries((config.on ?? {}) as Record<string, unknown>).map(
    ([type, definition]) => [type, candidates(undefined, definition, stateNames, `root on ${type}`)] as const,
  );
  const states = new Map<string, CompiledState>();
  for (const [name, state] of Object.entries(rawStates)) {
    only(state, ["entry", "on", "type"], name);
    if (state.type !== undefined && state.type !== "final") throw new Error(`provider-turn.step: ${name}: only flat and final states are supported`);
    const on = new Map<string, Candidate[]>();
    for (const [type, definition] of Object.entries((state.on ?? {}) as Record<string, unknown>)) on.set(type, candidates(name, definition, stateNames, `${name} on ${type}`));
    // An event the state handles in none of its transitions is tried on the root next.
    for (const [type, list] of rootOn) on.set(type, [...(on.get(type) ?? []), ...list]);
    states.set(name, { final: state.type === "final", entry: names(state.entry, `${name} entry`), on });
  }
  const initial = config.initial;
  if (typeof initial !== "string" || !states.has(initial)) throw new Error("provider-turn.step: the initial state must be one of the states");
  for (const action of states.get(initial)!.entry) {
    if (assignments[action] !== undefined) throw new Error("provider-turn.step: the initial state's entry cannot update the context");
  }
  return { initial, states };
}

const table = compile();

/** Runs named actions in order: context updates are applied, the rest are owed. */
function run(actions: readonly string[], context: ProviderTurnContext, event: TurnEvent, owed: string[]): ProviderTurnContext {
  let next = context;
  for (const action of actions) {
    const assignment = assignments[action];
    if (assignment === undefined) owed.push(action);
    else next = { ...next, ...assignment({ context: next, event }) };
  }
  return next;
}

/** A new turn, as XState's `initialTransition(providerTurnMachine, input)` starts it. */
export function startTurn(input: ProviderTurnInput): ProviderTurnStep {
  const state = table.states.get(table.initial)!;
  return { value: table.initial, context: initialTurnContext(input), actions: [...state.entry], done: state.final };
}

/**
 * One event through the machine, as `snapshot.can(event)` and `transition(providerTurnMachine,
 * snapshot, event)` would take it. Undefined when the machine refuses the event in this state.
 * Pure: the given state is not changed.
 */
export function stepTurn(turn: ProviderTurnState, event: TurnEvent): ProviderTurnStep | undefined {
  const state = table.states.get(turn.value);
  if (state === undefined || state.final) return undefined;
  const list = state.on.get(event.type);
  if (list === undefined) return undefined;
  for (const candidate of list) {
    if (candidate.guard !== undefined && !candidate.guard({ context: turn.context, event })) continue;
    // XState's `can` refuses an enabled transition that would do nothing.
    if (candidate.target === undefined && candidate.actions.length === 0) return undefined;
    const owed: string[] = [];
    let context = run(candidate.actions, turn.context, event, owed);
    const value = candidate.target ?? turn.value;
    const target = table.states.get(value)!;
    if (candidate.enters) context = run(target.entry, context, event, owed);
    return { value, context, actions: owed, done: target.final };
  }
  return undefined;
}
