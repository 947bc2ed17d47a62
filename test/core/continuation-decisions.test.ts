import { describe, it } from "vitest";
import { resolveBudgets } from "../../src/contracts/budgets.js";
import type { TurnlogEvent } from "../../src/contracts/events.js";
import { given } from "../../src/testing/given-when-then.js";
import { ToolRegistry } from "../../src/tools/tool-registry.js";
import { gated, normalized, packetized, planned, providerRequested, providerResponded, sessionStarted, toolFailed, toolStarted, toolSucceeded, turnStarted, userMessage } from "../support/events.js";
import { workspace } from "../support/tools.js";

/*
 * How a turn goes on after its results (decideContinuation), stated on the events alone. The
 * events of `given` are recorded one second apart, from the user's message on.
 */

const registry = new ToolRegistry(workspace().tools);
/** One turn that ran one read and packetized its result: 9 seconds after the user's message. */
const oneTurn: TurnlogEvent[] = [
  userMessage(),
  turnStarted(),
  providerRequested(),
  providerResponded([{ id: "c1", name: "read_file", argumentsText: '{"path":"a.txt"}' }]),
  normalized(["c1"]),
  planned(["c1"]),
  gated({ c1: "allow" }),
  toolStarted("c1"),
  toolSucceeded("c1"),
  packetized(),
];
const startedWith = (budgets: Parameters<typeof resolveBudgets>[0]) => sessionStarted({ budgets: resolveBudgets(budgets) });
const stopped = (reason: string): TurnlogEvent => ({ type: "turn.stopped", data: { turnId: "turn-1", reason } });
const continued: TurnlogEvent = { type: "turn.continued", data: { turnId: "turn-1", reason: "tool-results" } };

describe("decideContinuation", () => {
  it("goes on while every budget holds", () => {
    given([startedWith({}), ...oneTurn]).whenDeciding("decideContinuation", { registry }).then(continued);
  });

  it("stops on wall-clock time measured from recorded event times", () => {
    given([startedWith({ wallClockMs: 5000 }), ...oneTurn]).whenDeciding("decideContinuation", { registry }).then(stopped("budget:wall-clock"));
    given([startedWith({ wallClockMs: 10_000 }), ...oneTurn]).whenDeciding("decideContinuation", { registry }).then(continued);
  });

  it("stops after maxRepeatedFailures of the same tool and error code", () => {
    const failing = oneTurn.map((event) => (event.type === "turn.tool.succeeded" ? toolFailed("c1") : event));
    given([startedWith({ maxRepeatedFailures: 1 }), ...failing]).whenDeciding("decideContinuation", { registry }).then(stopped("budget:repeated-failures"));
    given([startedWith({ maxRepeatedFailures: 2 }), ...failing]).whenDeciding("decideContinuation", { registry }).then(continued);
  });

  it("stops at maxIterations, and at maxToolCalls, before it looks at the clock", () => {
    given([startedWith({ maxIterations: 1, wallClockMs: 5000 }), ...oneTurn]).whenDeciding("decideContinuation", { registry }).then(stopped("budget:max-iterations"));
    given([startedWith({ maxToolCalls: 1, wallClockMs: 5000 }), ...oneTurn]).whenDeciding("decideContinuation", { registry }).then(stopped("budget:max-tool-calls"));
  });
});
