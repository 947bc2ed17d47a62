import { describe, expect, it } from "vitest";
import { given, UnexpectedEventError } from "../../src/testing/index.js";
import {
  denied,
  gated,
  granted,
  normalized,
  packetized,
  planned,
  providerFailed,
  providerRequested,
  providerResponded,
  sessionStarted,
  toolFailed,
  toolInterrupted,
  toolStarted,
  toolSucceeded,
  turnCompleted,
  turnContinued,
  turnFailed,
  turnStarted,
  turnStopped,
  userMessage,
} from "../support/events.js";

// Each spec: given the events so far, when one more is logged, then the turn machine is in this
// state and owes these actions. One spec per transition of docs/architecture.md#the-turn-machine.
const opened = [sessionStarted(), userMessage()];
const requested = [...opened, turnStarted(), providerRequested()];
const withCalls = [...requested, providerResponded([{ id: "a", name: "read_file", argumentsText: "{}" }, { id: "b", name: "read_file", argumentsText: "{}" }])];
const normalizedAB = [...withCalls, normalized(["a", "b"])];
const plannedAB = [...normalizedAB, planned(["a", "b"])];

const truncated = (attempt = 1) =>
  ({ type: "turn.provider.failed", data: { turnId: "turn-1", attempt, kind: "truncated-tool-calls", retryable: true } }) as const;

function lastTurnStatus(fold: { state: { turns: readonly { status: string }[] } }) {
  return fold.state.turns.at(-1)?.status;
}

describe("provider turn machine", () => {
  describe("starting", () => {
    it("a user message owes a new turn", () => {
      given([sessionStarted()]).when(userMessage()).then({ state: undefined, actions: ["startTurn"] });
    });

    it("turn.started enters finalizing and asks for a provider request", () => {
      given(opened).when(turnStarted()).then({ state: "finalizing", actions: ["requestProvider"] });
    });
  });

  describe("finalizing", () => {
    it("a logged provider request owes the provider call", () => {
      given([...opened, turnStarted()]).when(providerRequested()).then({ state: "finalizing", actions: ["callProvider"] });
    });

    it("a response with tool calls moves to normalizing", () => {
      given(requested)
        .when(providerResponded([{ id: "a", name: "read_file", argumentsText: "{}" }]))
        .then({ state: "normalizing", actions: ["normalizeToolCalls"] });
    });

    it("a response without tool calls owes the completion", () => {
      given(requested).when(providerResponded([], "the answer")).then({ state: "finalizing", actions: ["completeTurn"] });
    });

    it("turn.completed ends the turn as completed", () => {
      const fold = given([...requested, providerResponded([], "the answer")]).when(turnCompleted("the answer")).then({ state: undefined, actions: [] });
      expect(lastTurnStatus(fold)).toBe("completed");
      expect(fold.state.lastOutcome).toEqual({ status: "completed", text: "the answer" });
    });

    it("a retryable failure with attempts left requests again", () => {
      given(requested).when(providerFailed(true)).then({ state: "finalizing", actions: ["requestProvider"] });
    });

    it("a retryable failure on the last attempt owes the failure", () => {
      // maxAttempts is 2 in the fixture.
      given([...requested, providerFailed(true), providerRequested(2)])
        .when(providerFailed(true, 2))
        .then({ state: "finalizing", actions: ["failTurn"] });
    });

    it("a non-retryable failure owes the failure", () => {
      given(requested).when(providerFailed(false)).then({ state: "finalizing", actions: ["failTurn"] });
    });

    it("tool calls cut off by the length limit are retried once", () => {
      given(requested).when(truncated()).then({ state: "finalizing", actions: ["requestProvider"] });
    });

    it("a second cut-off owes the refusal, even with attempts left", () => {
      const fold = given([...requested, truncated(), providerRequested(2)])
        .when(truncated(2))
        .then({ state: "finalizing", actions: ["refuseTruncated"] });
      expect(fold.turn?.context.truncations).toBe(2);
    });

    it("a cut-off on the last attempt owes the refusal", () => {
      given([...requested, providerFailed(true), providerRequested(2)]).when(truncated(2)).then({ state: "finalizing", actions: ["refuseTruncated"] });
    });

    it("turn.failed ends the turn as failed", () => {
      const fold = given([...requested, providerFailed(false)]).when(turnFailed()).then({ state: undefined, actions: [] });
      expect(lastTurnStatus(fold)).toBe("failed");
    });
  });

  describe("normalizing → planning → gating", () => {
    it("normalized calls move to planning", () => {
      given(withCalls).when(normalized(["a", "b"])).then({ state: "planning", actions: ["planToolCalls"] });
    });

    it("planned calls move to gating", () => {
      given(normalizedAB).when(planned(["a", "b"])).then({ state: "gating", actions: ["gateToolCalls"] });
    });

    it("any ask parks the turn in awaitingApproval", () => {
      given(plannedAB).when(gated({ a: "allow", b: "ask" })).then({ state: "awaitingApproval", actions: ["awaitApprovals"] });
    });

    it("only allows move to running", () => {
      given(plannedAB).when(gated({ a: "allow", b: "allow" })).then({ state: "running", actions: ["runToolCalls"] });
    });

    it("nothing to run or ask moves straight to packetizing", () => {
      given(plannedAB).when(gated({ a: "deny", b: "block" })).then({ state: "packetizing", actions: ["packetizeResults"] });
    });
  });

  describe("awaitingApproval", () => {
    const asking = [...plannedAB, gated({ a: "ask", b: "ask" })];

    it("an answer that is not the last keeps waiting", () => {
      given(asking).when(granted("a")).then({ state: "awaitingApproval", actions: [] });
    });

    it("the last answer with a call to run moves to running", () => {
      given([...asking, denied("a")]).when(granted("b")).then({ state: "running", actions: ["runToolCalls"] });
    });

    it("the last answer with nothing to run moves to packetizing", () => {
      given([...asking, denied("a")]).when(denied("b")).then({ state: "packetizing", actions: ["packetizeResults"] });
    });

    it("a call the gate allowed runs once the held one is answered", () => {
      given([...plannedAB, gated({ a: "allow", b: "ask" })]).when(denied("b")).then({ state: "running", actions: ["runToolCalls"] });
    });
  });

  describe("running", () => {
    const running = [...plannedAB, gated({ a: "allow", b: "allow" })];

    it("a tool start is recorded and the turn keeps running", () => {
      given(running).when(toolStarted("a")).then({ state: "running", actions: [] });
    });

    it("a terminal event that is not the last keeps running", () => {
      given([...running, toolStarted("a")]).when(toolSucceeded("a")).then({ state: "running", actions: [] });
    });

    it("the last success moves to packetizing", () => {
      given([...running, toolStarted("a"), toolSucceeded("a"), toolStarted("b", 1)])
        .when(toolSucceeded("b"))
        .then({ state: "packetizing", actions: ["packetizeResults"] });
    });

    it("the last failure moves to packetizing", () => {
      given([...running, toolStarted("a"), toolSucceeded("a"), toolStarted("b", 1)])
        .when(toolFailed("b"))
        .then({ state: "packetizing", actions: ["packetizeResults"] });
    });

    it("the last interruption (written by recovery) moves to packetizing", () => {
      given([...running, toolStarted("a"), toolSucceeded("a"), toolStarted("b", 1)])
        .when(toolInterrupted("b"))
        .then({ state: "packetizing", actions: ["packetizeResults"] });
    });
  });

  describe("packetizing → continuing", () => {
    const ran = [...plannedAB, gated({ a: "deny", b: "deny" })];

    it("packets move to continuing", () => {
      given(ran).when(packetized()).then({ state: "continuing", actions: ["decideContinuation"] });
    });

    it("turn.continued ends the turn and owes the next one", () => {
      const fold = given([...ran, packetized()]).when(turnContinued()).then({ state: undefined, actions: ["startTurn"] });
      expect(lastTurnStatus(fold)).toBe("continued");
    });

    it("turn.stopped ends the turn as stopped", () => {
      const fold = given([...ran, packetized()]).when(turnStopped("budget:max-iterations")).then({ state: undefined, actions: [] });
      expect(lastTurnStatus(fold)).toBe("stopped");
      expect(fold.state.lastOutcome).toEqual({ status: "stopped", reason: "budget:max-iterations" });
    });
  });

  describe("from any state", () => {
    it("a cancel stops a turn that awaits approval", () => {
      const fold = given([...plannedAB, gated({ a: "ask", b: "ask" })]).when(turnStopped("cancelled")).then({ state: undefined, actions: [] });
      expect(lastTurnStatus(fold)).toBe("stopped");
    });

    it("an unrecoverable failure fails a running turn", () => {
      given([...plannedAB, gated({ a: "allow", b: "allow" })]).when(turnFailed("internal")).then({ state: undefined, actions: [] });
    });

    it("an event the state does not accept is refused, not ignored", () => {
      given(requested).when(toolStarted("a")).thenThrows(UnexpectedEventError);
    });

    it("a turn event with no active turn is refused", () => {
      given(opened).when(providerRequested()).thenThrows(UnexpectedEventError);
    });

    it("nothing is accepted after a turn ended", () => {
      given([...requested, providerResponded([], "x"), turnCompleted("x")]).when(turnContinued()).thenThrows(UnexpectedEventError);
    });
  });
});
