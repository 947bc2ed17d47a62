import { describe, expect, it } from "vitest";
import { eventCatalogue } from "../../src/contracts/events.js";
import { actionTable, isAction, owedAfterEvent, owedWhileResting, type ActionName } from "../../src/core/actions.js";
import { turnEndings } from "../../src/core/session-fold.js";
import { providerTurnMachine, type ProviderTurnActionType } from "../../machines/provider-turn.machine.js";

// The machine names its actions as strings (machines/ imports no values from src/): every name it
// can emit must be an action of the one table, or the runtime and replay would not know what to do.
const everyMachineAction: ActionName = "" as ProviderTurnActionType;
void everyMachineAction;

type Node = { entry: unknown[]; transitions: Map<string, { actions: unknown[] }[]>; states: Record<string, Node> };

/** Every action name the machine's states and transitions can return to the runtime. */
function machineActions(): Set<string> {
  const implementations = providerTurnMachine.implementations.actions as Record<string, { type?: string }>;
  // Context updates (`assign`) are applied inside the transition; they are never owed to anyone.
  const owed = (action: unknown): action is string => typeof action === "string" && implementations[action]?.type !== "xstate.assign";
  const names = new Set<string>();
  const visit = (node: Node) => {
    for (const action of node.entry) if (owed(action)) names.add(action);
    for (const transitions of node.transitions.values()) {
      for (const transition of transitions) for (const action of transition.actions) if (owed(action)) names.add(action);
    }
    for (const child of Object.values(node.states)) visit(child);
  };
  visit(providerTurnMachine.root as unknown as Node);
  return names;
}

describe("the action table", () => {
  it("holds every action the turn machine can emit", () => {
    const emitted = [...machineActions()];
    expect(emitted.length).toBeGreaterThan(10);
    expect(emitted.filter((name) => !isAction(name))).toEqual([]);
  });

  it("holds the actions the fold owes outside the machine: a new turn, a host-routed call, a tool start", () => {
    const fromFold = [...turnEndings.values()].flat();
    expect(fromFold).toEqual(["startTurn"]);
    for (const name of [...fromFold, "decideHostTool", "startTool"]) expect(isAction(name)).toBe(true);
  });

  it("names no action that nothing owes", () => {
    const owed = new Set([...machineActions(), "startTurn", "decideHostTool", "startTool"]);
    expect(Object.keys(actionTable).filter((name) => !owed.has(name))).toEqual([]);
  });

  it("gives each action the kind its events have: decisions settle with decision events, effects and waits with input events", () => {
    for (const [name, { kind, settledBy }] of Object.entries(actionTable)) {
      const eventKinds = new Set(settledBy.map((type) => eventCatalogue[type].kind));
      expect({ name, eventKinds: [...eventKinds] }).toEqual({ name, eventKinds: [kind === "decision" ? "decision" : "input"] });
    }
    expect(actionTable.callProvider.kind).toBe("effect");
    expect(actionTable.runToolCalls.kind).toBe("effect");
    expect(actionTable.awaitApprovals.kind).toBe("wait");
  });

  it("lists, for each action the machine emits in a state, only events that state accepts", () => {
    const root = providerTurnMachine.root as unknown as Node;
    for (const [state, node] of Object.entries(root.states)) {
      for (const action of node.entry) {
        if (typeof action !== "string" || !isAction(action)) continue;
        const accepted = new Set([...node.transitions.keys(), ...root.transitions.keys()]);
        const settledBy: readonly string[] = actionTable[action].settledBy;
        // requestProvider's history decisions are session events, which the machine never sees.
        expect({ state, action, refused: settledBy.filter((type) => type.startsWith("turn.") && !accepted.has(type)) }).toEqual({ state, action, refused: [] });
      }
    }
  });
});

describe("what is owed after an event the machine does not answer (owedAfterEvent)", () => {
  const root = providerTurnMachine.root as unknown as Node & { transitions: Map<string, { target?: { key: string }[] }[]> };
  const finalStates = Object.entries(root.states).filter(([, node]) => (node as unknown as { type: string }).type === "final").map(([name]) => name);

  it("names exactly the events that end a turn: those that lead into one of the machine's final states", () => {
    const ending = new Set<string>();
    const visit = (node: Node) => {
      for (const [type, transitions] of node.transitions) {
        for (const transition of transitions as { target?: { key: string }[] }[]) if (transition.target?.some((target) => finalStates.includes(target.key))) ending.add(type);
      }
      for (const child of Object.values(node.states)) visit(child);
    };
    visit(root);
    const turnEvents = Object.keys(owedAfterEvent).filter((type) => type.startsWith("turn."));
    expect(turnEvents.sort()).toEqual([...ending].sort());
    expect([...turnEndings.keys()].sort()).toEqual([...ending].sort());
  });

  it("owes only actions of the table, and rests only in states the machine has", () => {
    for (const owed of Object.values(owedAfterEvent)) for (const action of owed) expect(isAction(action)).toBe(true);
    for (const [state, action] of Object.entries(owedWhileResting)) {
      expect(Object.keys(root.states)).toContain(state);
      // The state owes it on entry: resting there, it is still owed.
      expect((root.states[state] as Node).entry).toContain(action);
    }
  });
});
