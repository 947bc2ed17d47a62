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

  it("stops after maxRepeatedFailures of the same tool and error code, rejections included", () => {
    // The model sends `{bad` for read_file again and again: each plan is rejected as malformed, and
    // each rejection counts as a failure of read_file with that code.
    const reasonOfParse = (() => {
      try {
        JSON.parse("{bad");
      } catch (error) {
        return (error as Error).message;
      }
      return "";
    })();
    const rejected = (turnId: string, callId: string): TurnlogEvent => ({
      type: "turn.tool_calls.planned",
      data: { turnId, plans: [{ callId, status: "rejected", reason: "malformed-arguments", issues: [{ path: "", message: `arguments are not valid JSON: ${reasonOfParse}` }], tool: "read_file" }] },
    });
    /** Iteration `seq` up to its plan: a provider answer with one call whose arguments are `{bad`. */
    const answered = (seq: number): TurnlogEvent[] => {
      const turnId = `turn-${seq}`;
      return [
        turnStarted(seq),
        providerRequested(1, turnId),
        providerResponded([{ id: `c${seq}`, name: "read_file", argumentsText: "{bad" }], "", turnId),
        {
          type: "turn.tool_calls.normalized",
          data: { turnId, content: "", calls: [{ index: 0, id: `c${seq}`, idSource: "provider", providerId: `c${seq}`, name: "read_file", argumentsText: "{bad" }], nativeReplaySafe: true, unsafeReasons: [] },
        },
      ];
    };
    /** Iteration `seq` whole, up to the results the model is shown. */
    const iteration = (seq: number): TurnlogEvent[] => {
      const turnId = `turn-${seq}`;
      return [
        ...answered(seq),
        rejected(turnId, `c${seq}`),
        { type: "turn.tool_calls.gated", data: { turnId, approvalMode: "ask", decisions: [] } },
        { type: "turn.results.packetized", data: { turnId, packets: [] } },
      ];
    };
    const goOn = (seq: number): TurnlogEvent => ({ type: "turn.continued", data: { turnId: `turn-${seq}`, reason: "tool-results" } });
    const start = [startedWith({ maxRepeatedFailures: 3 }), userMessage("go")];

    // Arguments that are not JSON are a rejected plan, not a run.
    given([...start, ...answered(1)]).whenDeciding("planToolCalls", { registry }).then(rejected("turn-1", "c1"));
    // One and two rejections: the turn goes on; the third stops it.
    given([...start, ...iteration(1)]).whenDeciding("decideContinuation", { registry }).then(goOn(1));
    given([...start, ...iteration(1), goOn(1), ...iteration(2)]).whenDeciding("decideContinuation", { registry }).then(goOn(2));
    given([...start, ...iteration(1), goOn(1), ...iteration(2), goOn(2), ...iteration(3)])
      .whenDeciding("decideContinuation", { registry })
      .then({ type: "turn.stopped", data: { turnId: "turn-3", reason: "budget:repeated-failures" } });
  });

  it("stops at maxIterations, and at maxToolCalls, before it looks at the clock", () => {
    given([startedWith({ maxIterations: 1, wallClockMs: 5000 }), ...oneTurn]).whenDeciding("decideContinuation", { registry }).then(stopped("budget:max-iterations"));
    given([startedWith({ maxToolCalls: 1, wallClockMs: 5000 }), ...oneTurn]).whenDeciding("decideContinuation", { registry }).then(stopped("budget:max-tool-calls"));
  });
});
