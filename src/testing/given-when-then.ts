import assert from "node:assert/strict";
import type { TurnlogEvent } from "../contracts/events.js";
import { parseEvent } from "../contracts/events.js";
import type { RecordedTurnlogEvent } from "../log/event-log.js";
import { resolveBudgets } from "../contracts/budgets.js";
import { resolvePolicy } from "../policy/default-policy.js";
import { decide, type DecisionAction } from "../core/decide.js";
import { SessionFold } from "../core/session-fold.js";
import type { ToolRegistry } from "../tools/tool-registry.js";

/** Gives plain events the meta a log would add: positions from 1, one second apart from a fixed epoch. */
export function recordForTest(events: readonly TurnlogEvent[], options: { stream?: string; startAt?: number; startPosition?: number } = {}): RecordedTurnlogEvent[] {
  const start = options.startAt ?? Date.UTC(2026, 0, 1);
  const first = options.startPosition ?? 1;
  return events.map((event, offset): RecordedTurnlogEvent => {
    const position = first + offset;
    return {
      ...parseEvent(event),
      meta: {
        eventId: `event-${position}`,
        stream: options.stream ?? "session-test",
        streamPosition: position,
        globalPosition: position,
        recordedAt: new Date(start + (position - 1) * 1000).toISOString(),
        schemaVersion: 1,
        prevHash: "",
        hash: "",
      },
    };
  });
}

export interface ThenExpectation {
  /** The turn machine's state value after the event, or `undefined` when the turn has ended. */
  state?: string | undefined;
  /** The actions owed after the event. */
  actions?: string[];
}

/**
 * Specification-style tests for the turn machine and the decisions (emmett's
 * `given(events).when(command).then(events)`):
 *
 * @example
 * given([sessionStarted, userMessage, turnStarted])
 *   .when({ type: "turn.provider.requested", data: { ... } })
 *   .then({ state: "finalizing", actions: ["callProvider"] });
 */
export function given(events: readonly TurnlogEvent[]) {
  const recorded = recordForTest(events);
  const foldGiven = () => {
    const fold = new SessionFold();
    for (const event of recorded) fold.apply(event);
    fold.settle();
    return fold;
  };
  return {
    /** Feeds one more event (as if logged next). */
    when(event: TurnlogEvent) {
      const run = () => {
        const fold = foldGiven();
        const [next] = recordForTest([event], { startPosition: recorded.length + 1 });
        fold.apply(next as RecordedTurnlogEvent);
        return fold;
      };
      return {
        then(expected: ThenExpectation): SessionFold {
          const fold = run();
          if ("state" in expected) assert.equal(fold.turnState, expected.state, "turn machine state");
          if (expected.actions !== undefined) assert.deepEqual(fold.pending, expected.actions, "actions owed");
          return fold;
        },
        thenThrows(errorClass: abstract new (...args: never[]) => Error): void {
          assert.throws(run, (error: unknown) => error instanceof errorClass);
        },
      };
    },
    /** Computes the decision the given events owe next. */
    whenDeciding(action: DecisionAction, config: { registry: ToolRegistry }) {
      return {
        then(expected: TurnlogEvent): void {
          const fold = foldGiven();
          const turn = fold.turnContext;
          const actual = decide(action, {
            state: fold.state,
            ...(turn !== undefined ? { turn } : {}),
            registry: config.registry,
            policy: fold.state.policy ?? resolvePolicy(),
            budgets: fold.state.budgets ?? resolveBudgets(),
          });
          assert.deepEqual(parseEvent(actual), parseEvent(expected));
        },
      };
    },
  };
}
