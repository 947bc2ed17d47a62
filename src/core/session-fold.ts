import { produce, type Draft } from "immer";
import type { SnapshotFrom } from "xstate";
import { isTurnEvent } from "../contracts/events.js";
import { UnexpectedEventError } from "../errors/unexpected-event-error.js";
import type { RecordedTurnlogEvent } from "../log/event-log.js";
import { owedAfter, owedAfterEvent } from "./actions.js";
import { CallMap } from "../projections/call-map.js";
import { applyEvent, applyEventInPlace } from "../projections/projection.js";
import { evolveWithoutDraft, isDraftFreeEvent, sessionStateProjection, thawState, type SessionState } from "../projections/session-state.js";
import { providerTurnMachine, type ProviderTurnInput } from "../../machines/provider-turn.machine.js";
import { startTurn, stepTurn, type ProviderTurnState, type ProviderTurnStep } from "../../machines/provider-turn.step.js";

export type TurnSnapshot = SnapshotFrom<typeof providerTurnMachine>;

/** How a `SessionFold` evolves and what it keeps. */
export interface SessionFoldOptions {
  /**
   * Evolve the state in place (linear over any log length) for a fold that hands out no states
   * to keep — replay, benchmarks. Its calls are then a thawed CallMap, changed in place too
   * (`thawState`): each call is still a frozen object, replaced when it changes. The default keeps
   * every state immutable, so one taken earlier (a host's `session.state()`, a snapshot) never changes.
   */
  mutable?: boolean;
  /**
   * `"all"` (default): the full projection. `"live"`: only what the next decisions read, so a
   * replay's memory stays bounded by the history window instead of growing with the log — the
   * calls of a finished turn are dropped (their IDs are kept in `retiredCallIds`, so a reused
   * provider ID is still seen as used), and messages a recorded compaction replaced are dropped
   * with their turns. `turns` then holds only the recent turns; `totals.turns` still counts all.
   * Needs `mutable`.
   */
  retain?: "all" | "live";
  /**
   * Run every turn's machine under this decisions version instead of the session's own (an
   * upgrade preview: what would the newest code have done?). Default: the version the log says.
   */
  decisionsVersion?: number;
}

/**
 * Where a `SessionFold` was (see `checkpoint`): references to its immutable parts, nothing copied.
 * Opaque: only `restore` on the fold that made it reads it.
 */
export interface SessionFoldCheckpoint {
  readonly fold: SessionFold;
  readonly state: SessionState;
  readonly turn: ProviderTurnState | undefined;
  readonly pending: string[];
  readonly backlog: readonly { recorded: RecordedTurnlogEvent; input?: ProviderTurnInput }[];
  /** The backlog only grows by `push` until it is replaced: its length then is where it was. */
  readonly backlogLength: number;
}

/** `retain: "live"`: drops, in place, what no later decision reads. */
function retire(state: SessionState, recorded: RecordedTurnlogEvent): void {
  if (isTurnEvent(recorded) && turnEndings.has(recorded.type)) {
    const turnId = recorded.data.turnId;
    const turn = state.turns.findLast((candidate) => candidate.turnId === turnId);
    if (turn === undefined) return;
    const retired = (state.retiredCallIds ??= new Set());
    for (const callId of turn.callIds) retired.add(callId);
    const calls = state.calls;
    if (calls instanceof CallMap && calls.thawed) calls.remove(turn.callIds);
    else state.calls = CallMap.from(calls).without(turn.callIds);
    return;
  }
  if (recorded.type === "session.history.compacted") {
    const { beforePosition } = recorded.data;
    // Every history unit before the boundary is replaced by the summary (history-units.ts), and
    // the current message and working set are always after it.
    const kept = state.messages.filter((message) => message.position >= beforePosition);
    if (kept.length === state.messages.length) return;
    state.messages = kept;
    const referenced = new Set<string>();
    for (const message of kept) if (message.role === "agent" && message.metadata !== undefined) referenced.add(message.metadata.turnId);
    // The oldest turns the kept messages no longer need are dropped (decisions count turns with
    // `totals.turns`, not with this list): each turn is looked at about once over the whole log.
    let index = 0;
    while (index < state.turns.length) {
      const turn = state.turns[index] as SessionState["turns"][number];
      if (turn.status === "active" || referenced.has(turn.turnId)) break;
      index += 1;
    }
    if (index > 0) state.turns.splice(0, index);
  }
}

/**
 * The most events `applyAll` folds one at a time without a draft. Each such event copies the lists
 * it changes (a message added copies the messages), which one draft for the batch copies once: a
 * few events, as the live loop stages them, cost less without a draft; a page of a long session
 * read back costs less with one (linear, not quadratic, in its length).
 */
const maxDraftFreeBatch = 32;

/** Events that end a turn (the machine's final states), and what each leaves owed: the turn events of `owedAfterEvent`. */
export const turnEndings: ReadonlyMap<string, readonly string[]> = new Map(Object.entries(owedAfterEvent).filter(([type]) => type.startsWith("turn.")));

/**
 * The deterministic core shared by the live runtime and replay: folds a session's events into
 * the session-state projection and the active turn's machine snapshot, and tracks the actions the
 * last transition asked for. The log is the truth; this is only a cache of it.
 *
 * The turn machine runs lazily. A turn's events wait in a backlog until someone reads `turn`,
 * `pending` or `turnState`; the live loop and replay read them after every event, so every event
 * of theirs goes through the machine (and an event the machine refuses throws). A bulk fold
 * (`stateAt`, opening a long session, `npm run bench`) reads them only at the end, so the machine
 * runs only over the turn still open then, and a finished turn's machine state is known from the
 * event that finished it. Checking every event of a log against the machine is replay's job.
 *
 * Each event goes through the machine's compiled step (machines/provider-turn.step.ts: the
 * machine's own table of legal events per state, guards and context updates, proved equal to
 * XState's `can` + `transition` by property-tests/provider-turn-step.test.ts) rather than through
 * XState's generic `transition`, which costs tens of microseconds per event. An XState snapshot is
 * built only when someone reads `turn`.
 */
export class SessionFold {
  state: SessionState = sessionStateProjection.initialState();

  constructor(private readonly options: SessionFoldOptions = {}) {
    if (options.retain === "live" && !options.mutable) throw new TypeError('SessionFold: retain "live" needs mutable: true');
    // A fold in place keeps its calls in a map it changes in place, too (see thawState).
    if (options.mutable) this.state = thawState(this.state);
  }

  /** The active turn's machine state (value and context); undefined between turns. */
  #turn: ProviderTurnState | undefined;
  /** The XState snapshot last built for `turn`, and the state it was built from. */
  #snapshot: { of: ProviderTurnState; snapshot: TurnSnapshot } | undefined;
  #pending: string[] = [];
  /** The open turn's events not yet run through the machine (with the input its start needs). */
  #backlog: { recorded: RecordedTurnlogEvent; input?: ProviderTurnInput }[] = [];

  /** The active turn's machine snapshot; undefined between turns. Built when read (then kept until the turn moves). */
  get turn(): TurnSnapshot | undefined {
    this.#catchUp();
    const turn = this.#turn;
    if (turn === undefined) return undefined;
    if (this.#snapshot?.of !== turn) this.#snapshot = { of: turn, snapshot: providerTurnMachine.resolveState({ value: turn.value, context: turn.context }) };
    return this.#snapshot.snapshot;
  }

  /** Actions owed after the last event, in order: decisions to compute or effects to perform. */
  get pending(): string[] {
    this.#catchUp();
    return this.#pending;
  }

  /**
   * The active turn's machine context (what `turn.context` is), without building an XState
   * snapshot: what decisions read, once per decision. Undefined between turns.
   */
  get turnContext(): TurnSnapshot["context"] | undefined {
    this.#catchUp();
    return this.#turn?.context;
  }

  /** The machine state of the active turn, e.g. `"awaitingApproval"`, or undefined between turns. */
  get turnState(): string | undefined {
    this.#catchUp();
    return this.#turn?.value;
  }

  /** The immer draft of an `applyAll` batch in progress. */
  #draft: Draft<SessionState> | undefined;

  /**
   * Folds a batch of events. An immutable fold evolves the whole batch in one immer draft, so its
   * collections are copied once per batch rather than once per event: loading a long session
   * stays linear. Same result as `apply` on each event.
   */
  applyAll(events: Iterable<RecordedTurnlogEvent>): void {
    if (this.options.mutable) {
      for (const event of events) this.apply(event);
      return;
    }
    const batch = Array.isArray(events) ? (events as readonly RecordedTurnlogEvent[]) : [...events];
    if (batch.length <= maxDraftFreeBatch && batch.every((event) => isDraftFreeEvent(event.type))) {
      // A few of the events a live turn stages (its own, its calls'): each folds without a draft (see evolveWithoutDraft).
      for (const event of batch) this.apply(event);
      return;
    }
    this.state = produce(this.state, (draft) => {
      this.#draft = draft;
      try {
        for (const event of batch) this.apply(event);
      } finally {
        this.#draft = undefined;
      }
    });
  }

  #evolve(recorded: RecordedTurnlogEvent): void {
    if (this.#draft !== undefined) sessionStateProjection.evolve(this.#draft, recorded);
    else if (this.options.mutable) applyEventInPlace(sessionStateProjection, this.state, recorded);
    else this.state = evolveWithoutDraft(this.state, recorded) ?? applyEvent(sessionStateProjection, this.state, recorded);
    if (this.options.retain === "live") retire(this.state, recorded);
  }

  /**
   * Folds one recorded event. Throws `UnexpectedEventError` if the machine refuses a turn event —
   * at once when the fold is being read event by event, else when `turn` or `pending` is next read.
   */
  apply(recorded: RecordedTurnlogEvent): void {
    const type = recorded.type;
    if (type.startsWith("turn.")) {
      if (type !== "turn.started" && this.#backlog.length === 0) {
        // The machine is caught up (or no turn is open): check the event before it is folded.
        this.#step(recorded);
        return;
      }
      this.#evolve(recorded);
      if (recorded.type === "turn.started") {
        if (this.#backlog.length > 0 || this.#turn !== undefined) this.#catchUp();
        const data = recorded.data;
        const current = this.#draft ?? this.state;
        const input = {
          turnId: data.turnId,
          turnSeq: data.turnSeq,
          iteration: data.iteration,
          maxAttempts: current.provider?.maxAttempts ?? 1,
          decisionsVersion: this.options.decisionsVersion ?? current.decisionsVersion,
        };
        this.#backlog.push({ recorded, input });
        return;
      }
      const ending = turnEndings.get(type);
      if (ending !== undefined && this.#turn === undefined && this.#backlog.length > 0) {
        // Nobody looked inside this turn: its end alone says what is owed next.
        this.#backlog = [];
        this.#pending = [...ending];
        return;
      }
      this.#backlog.push({ recorded });
      return;
    }
    this.#evolve(recorded);
    const owed = owedAfter(type);
    if (owed !== undefined) {
      this.#catchUp();
      // Between turns only: an open turn keeps what its machine owes.
      if (this.#turn === undefined) this.#pending = [...owed];
    }
  }

  /**
   * The fold between turns, as a snapshot keeps it (src/projections/session-snapshot.ts): the
   * state and the actions owed. Undefined while a turn is open or not yet run through the machine
   * (a snapshot keeps no machine state: the fold is snapshotted again once the turn has ended).
   */
  resting(): { state: SessionState; pending: readonly string[] } | undefined {
    if (this.#draft !== undefined || this.#turn !== undefined || this.#backlog.length > 0) return undefined;
    return { state: this.state, pending: this.#pending };
  }

  /**
   * Starts a new fold from a snapshot of one between turns (`resting`): the state after the
   * snapshot's position and what was owed there, as if every event up to it had been folded.
   * Only on a fold that has folded nothing, and not with `retain: "live"` (a snapshot holds the
   * full projection).
   */
  resume(snapshot: { state: SessionState; pending: readonly string[] }): void {
    if (this.state.position !== 0 || this.#turn !== undefined || this.#backlog.length > 0 || this.#draft !== undefined) throw new TypeError("SessionFold.resume: only a fold that has folded nothing resumes from a snapshot");
    if (this.options.retain === "live") throw new TypeError('SessionFold.resume: a snapshot holds the full projection, not retain: "live"');
    this.state = this.options.mutable ? thawState(snapshot.state) : snapshot.state;
    this.#pending = [...snapshot.pending];
  }

  /**
   * Marks where the fold is, so that events folded after it can be undone with `restore` — e.g.
   * decisions folded ahead of an append that then fails. O(1): it keeps references to the state,
   * the turn's machine state, the pending actions and the backlog, which an immutable fold
   * replaces rather than changes. So only the default (immutable) fold has checkpoints: a
   * `mutable` fold changes its state in place and throws here, as it does inside `applyAll`.
   */
  checkpoint(): SessionFoldCheckpoint {
    this.#rollbackable("checkpoint");
    return { fold: this, state: this.state, turn: this.#turn, pending: this.#pending, backlog: this.#backlog, backlogLength: this.#backlog.length };
  }

  /**
   * Puts the fold back where `checkpoint` was taken, as if the events folded since had never
   * been: `state`, `turn`, `pending` and what the machine has still to check. O(1) but for the
   * open turn's backlog of unchecked events, copied up to its length then (none in the live loop).
   */
  restore(checkpoint: SessionFoldCheckpoint): void {
    this.#rollbackable("restore");
    if (checkpoint.fold !== this) throw new TypeError("SessionFold.restore: the checkpoint was taken on another fold");
    this.state = checkpoint.state;
    this.#turn = checkpoint.turn;
    this.#pending = checkpoint.pending;
    this.#backlog = checkpoint.backlog.slice(0, checkpoint.backlogLength);
  }

  #rollbackable(method: string): void {
    if (this.options.mutable) throw new TypeError(`SessionFold.${method}: a mutable fold changes its state in place and cannot be rolled back`);
    if (this.#draft !== undefined) throw new TypeError(`SessionFold.${method}: not available inside applyAll`);
  }

  /**
   * Runs the machine over every event folded so far, so the next event is checked by it before
   * it is folded. Throws `UnexpectedEventError` for an event the machine refuses.
   */
  settle(): void {
    this.#catchUp();
  }

  /** Runs the backlog through the machine. */
  #catchUp(): void {
    const backlog = this.#backlog;
    if (backlog.length === 0) return;
    this.#backlog = [];
    for (const { recorded, input } of backlog) {
      if (input !== undefined) {
        const initial = startTurn(input);
        this.#turn = initial;
        this.#pending = actionTypes(initial.actions, recorded);
        continue;
      }
      this.#transition(recorded);
    }
  }

  /** One turn event through the machine and then the projection (the live loop's and replay's path). */
  #step(recorded: RecordedTurnlogEvent): void {
    const next = this.#check(recorded);
    this.#evolve(recorded);
    this.#advance(recorded, next);
  }

  /** One backlogged (already folded) turn event through the machine. */
  #transition(recorded: RecordedTurnlogEvent): void {
    this.#advance(recorded, this.#check(recorded));
  }

  #check(recorded: RecordedTurnlogEvent): ProviderTurnStep {
    // The guards read only `type` and `data`: the recorded event is passed as it is.
    const next = this.#turn === undefined || !isTurnEvent(recorded) ? undefined : stepTurn(this.#turn, recorded);
    if (next === undefined) {
      throw new UnexpectedEventError(recorded.meta.streamPosition, recorded.type, this.#turn === undefined ? "no active turn" : JSON.stringify(this.#turn.value));
    }
    return next;
  }

  #advance(recorded: RecordedTurnlogEvent, next: ProviderTurnStep): void {
    if (next.done) {
      this.#turn = undefined;
      this.#pending = [...(owedAfter(recorded.type) ?? [])];
      return;
    }
    this.#turn = next;
    this.#pending = actionTypes(next.actions, recorded);
  }
}

/** The machine owes at most one action per transition; more would mean the machine is wrong. */
function actionTypes(actions: readonly string[], recorded: RecordedTurnlogEvent): string[] {
  if (actions.length > 1) {
    throw new Error(`turn machine returned ${actions.length} actions for ${recorded.type}; it must return at most one`);
  }
  return [...actions];
}
