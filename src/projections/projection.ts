import { produce, type Draft } from "immer";
import type { RecordedTurnlogEvent } from "../log/event-log.js";

/**
 * A projection: state rebuilt from the log by evolving one event at a time (with immer, so old
 * states stay cheap and frozen). Snapshots of a projection are caches that can be thrown away.
 */
export interface Projection<State> {
  name: string;
  version: number;
  initialState(): State;
  evolve(draft: Draft<State>, event: RecordedTurnlogEvent): void;
}

/** Evolves a state by one event, returning a new frozen state (the old one is untouched). */
export function applyEvent<State>(projection: Projection<State>, state: State, event: RecordedTurnlogEvent): State {
  return produce(state, (draft) => projection.evolve(draft, event));
}

/**
 * Evolves a state by several events in one immer draft, returning one new frozen state: each
 * collection is copied once for the whole batch instead of once per event (a page of a long
 * session's `stateAt` costs one copy of its calls, not a thousand).
 */
export function applyEvents<State>(projection: Projection<State>, state: State, events: Iterable<RecordedTurnlogEvent>): State {
  return produce(state, (draft) => {
    for (const event of events) projection.evolve(draft, event);
  });
}

/**
 * Evolves a state in place, without immer: for a fold that owns its state and keeps no older one
 * (replay, a long rebuild). immer copies a collection on every write to it, so a fold that keeps
 * every intermediate state costs time in proportion to the collections' size per event — fine for
 * a live session, quadratic over a million-event log.
 */
export function applyEventInPlace<State>(projection: Projection<State>, state: State, event: RecordedTurnlogEvent): void {
  projection.evolve(state as Draft<State>, event);
}

/**
 * Folds events into a projection's state from its initial state (or a given one), in one immer
 * draft (see `applyEvents`): the CLI folds whole sessions with it, and a draft per event would copy
 * the session's collections once per event.
 */
export function foldEvents<State>(projection: Projection<State>, events: Iterable<RecordedTurnlogEvent>, from?: State): State {
  return applyEvents(projection, from ?? projection.initialState(), events);
}
