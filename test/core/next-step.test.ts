import { describe, expect, it } from "vitest";
import { z } from "zod";
import type { TurnlogEvent } from "../../src/contracts/events.js";
import { nextStep } from "../../src/core/next-step.js";
import { SessionFold } from "../../src/core/session-fold.js";
import { recordForTest } from "../../src/testing/given-when-then.js";
import { defineTool } from "../../src/tools/define-tool.js";
import { ToolRegistry } from "../../src/tools/tool-registry.js";
import {
  gated,
  granted,
  normalized,
  packetized,
  providerRequested,
  providerResponded,
  sessionStarted,
  toolStarted,
  toolSucceeded,
  turnContinued,
  turnStarted,
  userMessage,
} from "../support/events.js";

const readFile = defineTool({ name: "read_file", description: "read", risk: "read-only-local", input: z.object({}), run: () => "ok" });
const writeFile = defineTool({ name: "write_file", description: "write", risk: "workspace-write", input: z.object({}), run: () => "ok" });
const registry = new ToolRegistry([readFile, writeFile]);

function stepAfter(events: readonly TurnlogEvent[], concurrency = 4) {
  const fold = new SessionFold();
  const started = events[0]?.type === "session.started" ? [sessionStarted({ concurrency }), ...events.slice(1)] : events;
  for (const event of recordForTest(started)) fold.apply(event);
  return nextStep(fold, registry);
}

const planned = (calls: Record<string, string>): TurnlogEvent => ({
  type: "turn.tool_calls.planned",
  data: { turnId: "turn-1", plans: Object.entries(calls).map(([callId, tool]) => ({ callId, status: "planned", tool, input: {} })) },
});

/** A turn whose response asked for these calls (id → tool), planned and gated as given. */
function turnWith(calls: Record<string, string>, decisions: Record<string, "allow" | "ask">): TurnlogEvent[] {
  const ids = Object.keys(calls);
  return [
    sessionStarted(),
    userMessage(),
    turnStarted(),
    providerRequested(),
    providerResponded(ids.map((id) => ({ id, name: calls[id] as string, argumentsText: "{}" }))),
    normalized(ids, Object.values(calls)),
    planned(calls),
    gated(decisions),
  ];
}

describe("nextStep: what a session owes next", () => {
  it("owes nothing before a user message, and a new turn after one", () => {
    expect(stepAfter([sessionStarted()])).toEqual({ kind: "none" });
    expect(stepAfter([sessionStarted(), userMessage()])).toEqual({ kind: "decision", action: "startTurn" });
  });

  it("owes the request decision when a turn starts, and then the provider call as an effect", () => {
    const started = [sessionStarted(), userMessage(), turnStarted()];
    expect(stepAfter(started)).toEqual({ kind: "decision", action: "requestProvider" });
    expect(stepAfter([...started, providerRequested()])).toEqual({ kind: "effect", action: "callProvider" });
  });

  it("waits for a person while any held call is unanswered, after each answer too", () => {
    const held = turnWith({ a: "write_file", b: "write_file" }, { a: "ask", b: "ask" });
    expect(stepAfter(held)).toEqual({ kind: "wait", action: "awaitApprovals" });
    expect(stepAfter([...held, granted("a")])).toEqual({ kind: "wait", action: "awaitApprovals" });
    expect(stepAfter([...held, granted("a"), granted("b")])).toEqual({ kind: "decision", action: "startTool" });
  });

  it("starts reads of one group one after another, then owes their ends", () => {
    const reads = turnWith({ a: "read_file", b: "read_file" }, { a: "allow", b: "allow" });
    expect(stepAfter(reads)).toEqual({ kind: "decision", action: "startTool" });
    expect(stepAfter([...reads, toolStarted("a")])).toEqual({ kind: "decision", action: "startTool" });
    expect(stepAfter([...reads, toolStarted("a"), toolStarted("b")])).toEqual({
      kind: "effect",
      action: "runToolCalls",
      reason: "no cleared call is left to start in turn-1",
    });
  });

  it("holds a read after a write until the write has ended (call order), and bounds concurrency", () => {
    const writeThenRead = turnWith({ w: "write_file", r: "read_file" }, { w: "allow", r: "allow" });
    const writing = [...writeThenRead, toolStarted("w")];
    expect(stepAfter(writing)).toEqual({ kind: "effect", action: "runToolCalls", reason: "r cannot start while a call of an earlier group runs" });
    expect(stepAfter([...writing, toolSucceeded("w")])).toEqual({ kind: "decision", action: "startTool" });

    const reads = turnWith({ a: "read_file", b: "read_file" }, { a: "allow", b: "allow" });
    expect(stepAfter([...reads, toolStarted("a")], 1)).toEqual({ kind: "effect", action: "runToolCalls", reason: "b cannot start: 1 calls already run" });
  });

  it("owes the packets once the last call ended, and a new turn after a continued one", () => {
    const reads = turnWith({ a: "read_file" }, { a: "allow" });
    const ended = [...reads, toolStarted("a"), toolSucceeded("a")];
    expect(stepAfter(ended)).toEqual({ kind: "decision", action: "packetizeResults" });
    expect(stepAfter([...ended, packetized()])).toEqual({ kind: "decision", action: "decideContinuation" });
    expect(stepAfter([...ended, packetized(), turnContinued()])).toEqual({ kind: "decision", action: "startTurn" });
  });

  it("owes the decision of a host-routed call once it is requested", () => {
    const requested: TurnlogEvent = { type: "session.native_tool.requested", data: { callId: "native-1", tool: "read_file", input: {}, by: "ui" } };
    expect(stepAfter([sessionStarted(), requested])).toEqual({ kind: "decision", action: "decideHostTool" });
  });
});
