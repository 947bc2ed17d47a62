import { initialTransition, transition, type SnapshotFrom } from "xstate";
import type { TurnEvent } from "../contracts/events.js";
import { hasCode, TurnlogError } from "../errors/turnlog-error.js";
import type { RecordedEvent } from "../log/event-log.js";
import { applyEvent, applyEventInPlace } from "../projections/projection.js";
import { sessionStateProjection, type SessionState } from "../projections/session-state.js";
import { providerTurnMachine } from "../../machines/provider-turn.machine.js";

export type TurnSnapshot = SnapshotFrom<typeof providerTurnMachine>;

/** An event the turn machine does not accept in its current state: the log and the machine disagree. */
export class UnexpectedEventError extends TurnlogError {
  readonly code = "TURNLOG_UNEXPECTED_EVENT";

  constructor(
    readonly position: number,
    readonly type: string,
    readonly machineState: string,
  ) {
    super(`event ${type} at position ${position} is not accepted by the turn machine in state "${machineState}"`);
  }

  static isInstance(value: unknown): value is UnexpectedEventError {
    return hasCode(value, "TURNLOG_UNEXPECTED_EVENT");
  }
}

/**
 * The deterministic core shared by the live runtime and replay: folds a session's events into
 * the session-state projection and the active turn's machine snapshot, and tracks the actions the
 * last transition asked for. The log is the truth; this is only a cache of it.
 */
export class SessionFold {
  state: SessionState = sessionStateProjection.initialState();

  /**
   * `mutable`: evolve the state in place (linear over any log length) for a fold that hands out
   * no states to keep — replay, benchmarks. The default keeps every state immutable, so one taken
   * earlier (a host's `session.state()`, a snapshot) never changes.
   */
  constructor(private readonly options: { mutable?: boolean } = {}) {}

  #evolve(recorded: RecordedEvent): void {
    if (this.options.mutable) applyEventInPlace(sessionStateProjection, this.state, recorded);
    else this.state = applyEvent(sessionStateProjection, this.state, recorded);
  }
  /** The active turn's machine snapshot; undefined between turns. */
  turn: TurnSnapshot | undefined;
  /** Actions owed after the last event, in order: decisions to compute or effects to perform. */
  pending: string[] = [];

  /** Folds one recorded event. Throws `UnexpectedEventError` if the machine refuses a turn event. */
  apply(recorded: RecordedEvent): void {
    const type = recorded.type;
    if (type.startsWith("turn.") && type !== "turn.started") {
      const event = { type, data: recorded.data } as TurnEvent;
      if (this.turn === undefined || !this.turn.can(event)) {
        throw new UnexpectedEventError(recorded.meta.streamPosition, type, this.turn === undefined ? "no active turn" : JSON.stringify(this.turn.value));
      }
      this.#evolve(recorded);
      const [next, actions] = transition(providerTurnMachine, this.turn, event);
      this.turn = next;
      this.pending = actionTypes(actions, recorded);
      if (next.status === "done") {
        this.turn = undefined;
        this.pending = next.value === "continued" ? ["startTurn"] : [];
      }
      return;
    }
    this.#evolve(recorded);
    if (type === "turn.started") {
      const data = recorded.data as { turnId: string; turnSeq: number; iteration: number };
      const [initial, actions] = initialTransition(providerTurnMachine, {
        turnId: data.turnId,
        turnSeq: data.turnSeq,
        iteration: data.iteration,
        maxAttempts: this.state.provider?.maxAttempts ?? 1,
      });
      this.turn = initial;
      this.pending = actionTypes(actions, recorded);
    } else if (type === "session.user_message.added") {
      this.pending = this.turn === undefined ? ["startTurn"] : this.pending;
    } else if (type === "session.native_tool.requested") {
      this.pending = ["decideNativeTool"];
    } else if (type === "session.native_tool.decided") {
      this.pending = [];
    }
  }

  /** The machine state of the active turn, e.g. `"awaitingApproval"`, or undefined between turns. */
  get turnState(): string | undefined {
    return this.turn === undefined ? undefined : String(this.turn.value);
  }
}

/** The machine owes at most one action per transition; more would mean the machine is wrong. */
function actionTypes(actions: readonly { type: string }[], recorded: RecordedEvent): string[] {
  if (actions.length > 1) {
    throw new Error(`turn machine returned ${actions.length} actions for ${recorded.type}; it must return at most one`);
  }
  return actions.map((action) => action.type);
}
