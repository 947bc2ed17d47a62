import assert from "node:assert/strict";
import type { TurnlogEvent } from "../contracts/events.js";
import { parseEvent } from "../contracts/events.js";
import type { RecordedTurnlogEvent } from "../log/event-log.js";
import { resolveBudgets } from "../contracts/budgets.js";
import { resolvePolicy } from "../policy/default-policy.js";
import { decide } from "../core/decide.js";
import { type DecisionAction } from "../core/actions.js";
import { SessionFold } from "../core/session-fold.js";
import { decideCommand, type SessionCommand } from "../core/session-decider.js";
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

/** What `given(…).when(command)` checks: the events the session decider returns, or its refusal. */
export interface CommandExpectation {
  /** The events `decideCommand` returns, compared as the event schemas parse them. */
  then(expected: readonly TurnlogEvent[]): TurnlogEvent[];
  /** `decideCommand` refuses the command with this error class (e.g. `SessionStateError`). */
  thenThrows(errorClass: abstract new (...args: never[]) => Error): void;
}

/** What `given(…).when(event)` checks: the turn machine's state and the actions owed after the event. */
export interface EventExpectation {
  then(expected: ThenExpectation): SessionFold;
  thenThrows(errorClass: abstract new (...args: never[]) => Error): void;
}

/**
 * Specification-style tests for the session decider, the turn machine and the decisions (emmett's
 * `given(events).when(command).then(events)`). `when` takes a session command (what
 * `decideCommand` decides) or an event (as if logged next: what the machine then owes).
 *
 * @example
 * given([sessionStarted]).when({ type: "sendMessage", content: "hi" }).then([{ type: "session.user_message.added", data: { content: "hi" } }]);
 * given([sessionStarted]).when({ type: "approveCall", callId: "c1", by: "ann" }).thenThrows(SessionStateError);
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
  function when(command: SessionCommand): CommandExpectation;
  function when(event: TurnlogEvent): EventExpectation;
  function when(input: SessionCommand | TurnlogEvent): CommandExpectation | EventExpectation {
    if (!("data" in input)) {
      const decided = () => decideCommand(input, foldGiven());
      return {
        then(expected: readonly TurnlogEvent[]): TurnlogEvent[] {
          const actual = decided();
          assert.deepEqual(
            actual.map((event) => parseEvent(event)),
            expected.map((event) => parseEvent(event)),
            `events decided for ${input.type}`,
          );
          return actual;
        },
        thenThrows(errorClass: abstract new (...args: never[]) => Error): void {
          assert.throws(decided, (error: unknown) => error instanceof errorClass);
        },
      };
    }
    const event = input;
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
  }
  return {
    /** Decides a session command on the given events, or feeds one more event (as if logged next). */
    when,
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
