import { activeTurn } from "../projections/session-state.js";
import type { SessionStore } from "./session-store.js";

/**
 * Whether another writer on the log (another runtime, another host) appended to the session's
 * active turn while this store had the session loaded: that writer may be driving the turn, so an
 * effect whose start this process did not append is left to it (docs/embedding.md, "Many hosts,
 * one log").
 */
export function turnWrittenElsewhere(store: SessionStore): boolean {
  const turn = activeTurn(store.state);
  return turn !== undefined && store.appendedElsewhereSince(turn.startPosition);
}

/**
 * Whether the work a session owes is another writer's to do as far as this process can tell: the
 * session's latest event, or the start of a call still running, was appended by another writer
 * while this store had the session loaded — that writer is in the middle of the turn (between two
 * steps, waiting on its provider request, or running the call). A turn this process left
 * unfinished, or one it loaded as it stood (recovered after a crash), is not: its latest events
 * are this store's own or its history.
 *
 * Without a lease a process cannot tell a writer still running from one that died; a lease
 * (`sessionLease: "fail"`) does, and an operation holding it knows the turn's last driver is gone.
 */
export function turnInProgressElsewhere(store: SessionStore): boolean {
  const state = store.state;
  if (store.appendedElsewhere(state.position)) return true;
  const turn = activeTurn(state);
  if (turn === undefined) return false;
  return turn.callIds.some((callId) => {
    const call = state.calls.get(callId);
    // A running call's position is its `turn.tool.started`: nothing else about it is logged until it ends.
    return call?.status === "running" && store.appendedElsewhere(call.position);
  });
}
