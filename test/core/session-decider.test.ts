import { describe, expect, it } from "vitest";
import type { TurnlogEvent } from "../../src/contracts/events.js";
import { resolveBudgets } from "../../src/contracts/budgets.js";
import { decideAll } from "../../src/core/decide.js";
import type { StartSession } from "../../src/core/session-decider.js";
import { SessionStateError } from "../../src/errors/session-state-error.js";
import { resolvePolicy } from "../../src/policy/default-policy.js";
import { given } from "../../src/testing/given-when-then.js";
import { ToolRegistry } from "../../src/tools/tool-registry.js";
import {
  gated,
  normalized,
  packetized,
  planned,
  providerRequested,
  providerResponded,
  sessionStarted,
  toolStarted,
  turnContinued,
  turnStarted,
  userMessage,
} from "../support/events.js";
import { workspace } from "../support/tools.js";

/* The session decider: every session command as given(events).when(command).then(events). */

const environment = { tempDir: "/tmp", homeDir: "/home/ann" };
const scripted = { id: "scripted", format: "openai-chat" as const, maxAttempts: 2 };
const opened = [sessionStarted(), userMessage(), turnStarted(), providerRequested()];
/** A turn whose two calls wait for a person (fingerprint "f"). */
const held = [...opened, providerResponded([{ id: "c1", argumentsText: "{}" }, { id: "c2", argumentsText: "{}" }]), normalized(["c1", "c2"]), planned(["c1", "c2"]), gated({ c1: "ask", c2: "ask" })];
const running = [...opened, providerResponded([{ id: "c1", argumentsText: "{}" }, { id: "c2", argumentsText: "{}" }]), normalized(["c1", "c2"]), planned(["c1", "c2"]), gated({ c1: "allow", c2: "allow" }), toolStarted("c1"), toolStarted("c2")];
const hostRequested = (callId = "native-1"): TurnlogEvent => ({ type: "session.native_tool.requested", data: { callId, tool: "read_file", input: { path: "a.txt" }, by: "ui" } });
const hostDecided = (runs: boolean, callId = "native-1"): TurnlogEvent => ({
  type: "session.native_tool.decided",
  data: { callId, plan: { callId, status: "planned", tool: "read_file", input: { path: "a.txt" } }, decision: { callId, decision: runs ? "allow" : "ask", rule: "mode:ask", riskClass: "read-only-local", fingerprint: "f" }, runs },
});

function start(overrides: Partial<StartSession> = {}): StartSession {
  return {
    type: "startSession",
    sessionId: "s1",
    policy: resolvePolicy({ workspace: { root: "/workspace", trusted: true } }),
    tools: [],
    budgets: resolveBudgets(),
    concurrency: 4,
    provider: scripted,
    history: { maxTokens: 100_000 },
    decisionsVersion: 6,
    environment,
    ...overrides,
  };
}

describe("decideCommand: startSession", () => {
  it("records the policy, tools, budgets, provider, history, decisions version and the machine's directories", () => {
    given([]).when(start({ history: { maxTokens: 8000, system: "be brief" } })).then([
      sessionStarted({ history: { maxTokens: 8000, system: "be brief" }, decisionsVersion: 6, environment }),
    ]);
  });

  it("a session pinned to decisions version 1 is written as version 1 wrote it: no version, no environment", () => {
    given([]).when(start({ decisionsVersion: 1 })).then([sessionStarted({ history: { maxTokens: 100_000 } })]);
  });

  it("a session that has started is not started again", () => {
    given([sessionStarted()]).when(start()).thenThrows(SessionStateError);
  });
});

describe("decideCommand: reopenSession", () => {
  it("the log names the runtime's provider: nothing to record", () => {
    given([sessionStarted()]).when({ type: "reopenSession", provider: scripted, tools: [] }).then([]);
  });

  it("another provider (or other attempts per turn) is recorded before anything else", () => {
    const other = { id: "anthropic", format: "anthropic-messages" as const, maxAttempts: 3 };
    given([sessionStarted()]).when({ type: "reopenSession", provider: other, tools: [] }).then([{ type: "session.config.changed", data: { provider: other } }]);
  });

  it("the same provider with other attempts per turn is recorded too", () => {
    const patient = { ...scripted, maxAttempts: 5 };
    given([sessionStarted()]).when({ type: "reopenSession", provider: patient, tools: [] }).then([{ type: "session.config.changed", data: { provider: patient } }]);
  });

  it("a session recorded under a decisions version newer than this turnlog knows is refused", () => {
    given([sessionStarted({ decisionsVersion: 99 })]).when({ type: "reopenSession", provider: scripted, tools: [] }).thenThrows(SessionStateError);
  });

  it("an unfinished turn holding calls for a tool the runtime does not offer is refused", () => {
    given(held).when({ type: "reopenSession", provider: scripted, tools: ["write_file"] }).thenThrows(SessionStateError);
    given(held).when({ type: "reopenSession", provider: scripted, tools: ["read_file"] }).then([]);
  });
});

describe("decideCommand: forkSession", () => {
  const source = sessionStarted({ decisionsVersion: 6, environment });
  const forkedFrom = { sessionId: "s1", position: 7 };

  it("the new session starts as the source did, under its own ID, saying where it came from", () => {
    given([]).when({ type: "forkSession", sessionId: "s1-fork", source: source.data, forkedFrom }).then([
      { type: "session.started", data: { ...source.data, sessionId: "s1-fork", forkedFrom } },
    ]);
  });

  it("a start that does not meet the current schema is refused, never copied as it is (the fork reads its source upcast)", () => {
    const broken = { ...source.data, concurrency: 0 };
    given([]).when({ type: "forkSession", sessionId: "s1-fork", source: broken, forkedFrom }).thenThrows(Error);
  });

  it("a session that has started is not the target of a fork", () => {
    given([sessionStarted()]).when({ type: "forkSession", sessionId: "s1-fork", source: source.data, forkedFrom }).thenThrows(SessionStateError);
  });
});

describe("decideCommand: sendMessage", () => {
  it("between turns, the message is recorded as given (already redacted by the runtime)", () => {
    given([sessionStarted()]).when({ type: "sendMessage", content: "key [REDACTED:api-key]" }).then([userMessage("key [REDACTED:api-key]")]);
  });

  it("and the turn machine then owes a new turn", () => {
    given([sessionStarted()]).when(userMessage()).then({ state: undefined, actions: ["startTurn"] });
  });

  it("is refused while a turn is open", () => {
    given(held).when({ type: "sendMessage", content: "hi" }).thenThrows(SessionStateError);
  });

  it("is refused while a turn is owed (a continued turn not yet started)", () => {
    const continued = [...running, { type: "turn.tool.succeeded" as const, data: { turnId: "turn-1", callId: "c1", output: "ok", durationMs: 1 } }, { type: "turn.tool.succeeded" as const, data: { turnId: "turn-1", callId: "c2", output: "ok", durationMs: 1 } }, packetized(), turnContinued()];
    given(continued).when({ type: "sendMessage", content: "hi" }).thenThrows(SessionStateError);
  });
});

describe("decideCommand: approveCall and denyCall", () => {
  it("an approval names the turn and the fingerprint of the held call", () => {
    given(held)
      .when({ type: "approveCall", callId: "c1", by: "ann", note: "fine" })
      .then([{ type: "turn.approval.granted", data: { turnId: "turn-1", callId: "c1", fingerprint: "f", by: "ann", scope: "call", note: "fine" } }]);
  });

  it("an \"always\" approval records the command prefix and scope it covers; one for this call only records none", () => {
    given(held)
      .when({ type: "approveCall", callId: "c1", by: "ann", scope: "tool", commandPrefix: "git status", commandScope: "git status" })
      .then([{ type: "turn.approval.granted", data: { turnId: "turn-1", callId: "c1", fingerprint: "f", by: "ann", scope: "tool", commandPrefix: "git status", commandScope: "git status" } }]);
    given(held)
      .when({ type: "approveCall", callId: "c1", by: "ann", scope: "call", commandPrefix: "git status" })
      .then([{ type: "turn.approval.granted", data: { turnId: "turn-1", callId: "c1", fingerprint: "f", by: "ann", scope: "call" } }]);
  });

  it("a denial covers only the call", () => {
    given(held).when({ type: "denyCall", callId: "c2", by: "bob" }).then([{ type: "turn.approval.denied", data: { turnId: "turn-1", callId: "c2", fingerprint: "f", by: "bob", scope: "call" } }]);
  });

  it("an answer given with the fingerprint the person reviewed is taken; another fingerprint is refused", () => {
    given(held).when({ type: "approveCall", callId: "c1", by: "ann", fingerprint: "f" }).then([{ type: "turn.approval.granted", data: { turnId: "turn-1", callId: "c1", fingerprint: "f", by: "ann", scope: "call" } }]);
    given(held).when({ type: "approveCall", callId: "c1", by: "ann", fingerprint: "changed" }).thenThrows(SessionStateError);
    given(held).when({ type: "denyCall", callId: "c1", by: "ann", fingerprint: "changed" }).thenThrows(SessionStateError);
  });

  it("a call that is not held is refused: unknown, already answered, or no turn at all", () => {
    given(held).when({ type: "approveCall", callId: "c9", by: "ann" }).thenThrows(SessionStateError);
    given([...held, { type: "turn.approval.granted", data: { turnId: "turn-1", callId: "c1", fingerprint: "f", by: "ann", scope: "call" } }])
      .when({ type: "denyCall", callId: "c1", by: "bob" })
      .thenThrows(SessionStateError);
    given([sessionStarted()]).when({ type: "approveCall", callId: "c1", by: "ann" }).thenThrows(SessionStateError);
  });

  it("the last answer lets the machine run what was approved", () => {
    given([...held, { type: "turn.approval.denied", data: { turnId: "turn-1", callId: "c2", fingerprint: "f", by: "ann", scope: "call" } }])
      .when({ type: "turn.approval.granted", data: { turnId: "turn-1", callId: "c1", fingerprint: "f", by: "ann", scope: "call" } })
      .then({ state: "running", actions: ["runToolCalls"] });
  });
});

describe("decideCommand: cancelTurn", () => {
  const cancelRequested: TurnlogEvent = { type: "turn.cancel.requested", data: { turnId: "turn-1" } };

  it("a turn under way records the host's cancel, in any state", () => {
    for (const events of [opened, held, running, [sessionStarted(), userMessage(), turnStarted()]]) {
      given(events).when({ type: "cancelTurn" }).then([cancelRequested]);
    }
  });

  it("after it the machine owes the stop, whatever it owed before", () => {
    given(running).when(cancelRequested).then({ state: "cancelling", actions: ["stopCancelled"] });
    given(held).when(cancelRequested).then({ state: "cancelling", actions: ["stopCancelled"] });
  });

  it("and the stop is the decision `stopCancelled`: turn.stopped, reason cancelled, which ends the turn", () => {
    const fold = given(held).when(cancelRequested).then({ state: "cancelling" });
    const registry = new ToolRegistry([]);
    const turn = fold.turnContext;
    const decision = decideAll("stopCancelled", { state: fold.state, ...(turn !== undefined ? { turn } : {}), registry, policy: resolvePolicy(), budgets: resolveBudgets() });
    expect(decision.events).toEqual([{ type: "turn.stopped", data: { turnId: "turn-1", reason: "cancelled" } }]);
    given([...held, cancelRequested]).when(decision.events[0] as TurnlogEvent).then({ state: undefined, actions: [] });
  });

  it("with no turn under way there is nothing to cancel", () => {
    given([sessionStarted()]).when({ type: "cancelTurn" }).then([]);
    given([sessionStarted(), userMessage("hi")]).when({ type: "cancelTurn" }).then([]);
  });
});

describe("decideCommand: syncSession", () => {
  const { readFile } = workspace();
  const live = new ToolRegistry([readFile]).snapshot();

  it("a log in step with the runtime owes nothing", () => {
    given([sessionStarted({ tools: live })]).when({ type: "syncSession", betweenTurns: true, provider: scripted, tools: live, environment }).then([]);
  });

  it("a changed tool set is recorded whole", () => {
    given([sessionStarted()]).when({ type: "syncSession", betweenTurns: false, tools: live, environment }).then([{ type: "session.tools.changed", data: { tools: live } }]);
  });

  it("another writer's provider is replaced by the runtime's", () => {
    const other = { id: "other", format: "openai-chat" as const, maxAttempts: 2 };
    given([sessionStarted()]).when({ type: "syncSession", betweenTurns: false, provider: other, environment }).then([{ type: "session.config.changed", data: { provider: other } }]);
  });

  it("an older session moves to the runtime's decisions version between turns, with the machine's directories when it has none", () => {
    given([sessionStarted()])
      .when({ type: "syncSession", betweenTurns: true, upgradeTo: 6, environment })
      .then([{ type: "session.decisions.upgraded", data: { from: 1, to: 6, environment } }]);
    given([sessionStarted({ decisionsVersion: 3, environment })])
      .when({ type: "syncSession", betweenTurns: true, upgradeTo: 6, environment: { tempDir: "/elsewhere", homeDir: "/elsewhere" } })
      .then([{ type: "session.decisions.upgraded", data: { from: 3, to: 6 } }]);
  });

  it("a turn in flight finishes under the version it started with", () => {
    given(opened).when({ type: "syncSession", betweenTurns: false, upgradeTo: 6, environment }).then([]);
  });
});

describe("decideCommand: recoverSession", () => {
  it("a provider request without an answer becomes a failed, retryable attempt", () => {
    given(opened)
      .when({ type: "recoverSession", rerunnable: [] })
      .then([{ type: "turn.provider.failed", data: { turnId: "turn-1", attempt: 1, kind: "interrupted", retryable: true, message: "the process stopped before the provider answered" } }]);
  });

  it("says so when the log, not the process, lost the answer", () => {
    given(opened)
      .when({ type: "recoverSession", rerunnable: [], lostAppends: true })
      .then([
        {
          type: "turn.provider.failed",
          data: { turnId: "turn-1", attempt: 1, kind: "interrupted", retryable: true, message: "the log lost the provider's answer (its server crashed before the answer was on disk)" },
        },
      ]);
  });

  it("a call started and never ended is interrupted, unless it may run again", () => {
    given(running)
      .when({ type: "recoverSession", rerunnable: [] })
      .then([
        { type: "turn.tool.interrupted", data: { turnId: "turn-1", callId: "c1" } },
        { type: "turn.tool.interrupted", data: { turnId: "turn-1", callId: "c2" } },
      ]);
    given(running).when({ type: "recoverSession", rerunnable: ["c2"] }).then([{ type: "turn.tool.interrupted", data: { turnId: "turn-1", callId: "c1" } }]);
  });

  it("a host-routed call decided to run and never completed is interrupted, never run again", () => {
    given([sessionStarted(), hostRequested(), hostDecided(true)])
      .when({ type: "recoverSession", rerunnable: [] })
      .then([
        {
          type: "session.native_tool.completed",
          data: { callId: "native-1", ok: false, code: "interrupted", message: "the process stopped before the call ended; it was not run again", durationMs: 0 },
        },
      ]);
  });

  it("nothing in flight, a wait, or a decision owed: nothing to recover", () => {
    given([sessionStarted(), hostRequested(), hostDecided(false)]).when({ type: "recoverSession", rerunnable: [] }).then([]);
    given(held).when({ type: "recoverSession", rerunnable: [] }).then([]);
    given([sessionStarted(), userMessage()]).when({ type: "recoverSession", rerunnable: [] }).then([]);
  });
});

describe("decideCommand: requestHostTool", () => {
  it("numbers host-routed calls in the session and records who asked", () => {
    given([sessionStarted()]).when({ type: "requestHostTool", tool: "read_file", input: { path: "a.txt" }, inputRedacted: false, by: "ui" }).then([hostRequested()]);
    given([sessionStarted(), hostRequested(), hostDecided(false)])
      .when({ type: "requestHostTool", tool: "read_file", input: { path: "a.txt" }, inputRedacted: true, by: "ui", approvedBy: "ann" })
      .then([{ type: "session.native_tool.requested", data: { callId: "native-2", tool: "read_file", input: { path: "a.txt" }, by: "ui", inputRedacted: true, approvedBy: "ann" } }]);
  });

  it("the machine then owes the call's plan and gate decision", () => {
    given([sessionStarted()]).when(hostRequested()).then({ state: undefined, actions: ["decideHostTool"] });
  });

  it("is refused while a turn is open or owed", () => {
    const request = { type: "requestHostTool" as const, tool: "read_file", input: {}, inputRedacted: false, by: "ui" };
    given(held).when(request).thenThrows(SessionStateError);
    given([sessionStarted(), userMessage()]).when(request).thenThrows(SessionStateError);
  });
});
