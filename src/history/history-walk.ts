import type { SessionMessage, TurnState } from "../projections/session-state.js";

/** A session message that is a tool result. */
export type ToolMessage = Extract<SessionMessage, { role: "tool" }>;

/*
 * The walk over a session's messages, kept between builds and extended by the messages appended
 * since (docs/performance.md#what-makes-a-tool-call-cheap-issue-15: the next request extends the last one instead of re-reading the whole
 * session). It holds what a unit depends on beyond its own message: the first result of every
 * call ID, the IDs used by earlier groups (a repeat cannot be replayed), the last user message,
 * and the counts of unused results. Messages are only ever appended to a session (a live-retention
 * fold drops a prefix, which is a new array the walk does not extend), so a walk of a prefix of
 * the messages, object for object, is extended; anything else is walked afresh.
 */
export interface Walk {
  /** The messages walked (the array itself: a mutable fold appends to it in place). */
  messages: readonly SessionMessage[];
  length: number;
  /** The first tool message per call ID. */
  resultMessages: Map<string, ToolMessage>;
  /** Tool messages whose call ID already had one. */
  duplicates: number;
  /** Call IDs of every tool group so far. */
  callIds: Set<string>;
  /** Results whose ID is some group's call ID. */
  usedResults: number;
  /** The results of each group that has all of them (see `groupResults`). */
  completeResults: Map<SessionMessage, (ToolMessage | undefined)[]>;
  /** Groups that use an ID an earlier call (of this group or an earlier one) used. */
  repeatsId: Map<SessionMessage, boolean>;
  /** Index of the last user message, or -1. */
  lastUser: number;
  /** Whether message positions never decrease (then units before a position are a prefix). */
  ordered: boolean;
  /** The last `firstAtOrAfter` answer, where the next search starts. */
  summaryStart: { position: number; index: number } | undefined;
  /** turnId → index in the turns array last seen, for `turns` up to `turnsIndexed`. */
  turnIndex: Map<string, number>;
  turnsIndexed: number;
}

/** Walks, keyed by the session's first message object (a session's states share it). */
const walks = new WeakMap<SessionMessage, Walk>();

/**
 * The walk of `messages`: the session's last walk extended by the messages appended since, or a
 * new one when `messages` does not begin with the walked ones.
 *
 * @example
 * const walk = walkOf(state.messages); // walk.lastUser: the current user message's index
 */
export function walkOf(messages: readonly SessionMessage[]): Walk {
  const first = messages[0];
  const cached = first === undefined ? undefined : walks.get(first);
  let walk: Walk;
  if (cached !== undefined && extends_(cached, messages)) {
    walk = cached;
  } else {
    walk = {
      messages,
      length: 0,
      resultMessages: new Map(),
      duplicates: 0,
      callIds: new Set(),
      usedResults: 0,
      repeatsId: new Map(),
      completeResults: new Map(),
      lastUser: -1,
      ordered: true,
      summaryStart: undefined,
      turnIndex: new Map(),
      turnsIndexed: 0,
    };
    // The newest walk is kept: the live session's next build extends it (a build of an earlier
    // state, or of a state a speculative fold discarded, costs one walk afresh after it).
    if (first !== undefined) walks.set(first, walk);
  }
  walk.messages = messages;
  for (let index = walk.length; index < messages.length; index += 1) {
    const message = messages[index] as SessionMessage;
    if (index > 0 && message.position < (messages[index - 1] as SessionMessage).position) walk.ordered = false;
    if (message.role === "user") walk.lastUser = index;
    else if (message.role === "tool") {
      const id = message.metadata.tool_call_id;
      if (walk.resultMessages.has(id)) walk.duplicates += 1;
      else {
        walk.resultMessages.set(id, message);
        if (walk.callIds.has(id)) walk.usedResults += 1;
      }
    } else if (message.metadata !== undefined) {
      let repeatsId = false;
      for (const call of message.metadata.providerToolCalls) {
        if (walk.callIds.has(call.id)) repeatsId = true;
        else {
          walk.callIds.add(call.id);
          if (walk.resultMessages.has(call.id)) walk.usedResults += 1;
        }
      }
      walk.repeatsId.set(message, repeatsId);
    }
  }
  walk.length = messages.length;
  return walk;
}

/**
 * The tool message answering each call of a group, in call order. A call's first result never
 * changes once it is there, so a group with every result keeps one array for good: later builds
 * neither look its results up again nor compare them one by one (`sameContext`).
 */
export function groupResults(walk: Walk, message: SessionMessage & { role: "agent"; metadata: { providerToolCalls: { id: string }[] } }): (ToolMessage | undefined)[] {
  const known = walk.completeResults.get(message);
  if (known !== undefined) return known;
  const results = message.metadata.providerToolCalls.map((call) => walk.resultMessages.get(call.id));
  if (!results.includes(undefined)) walk.completeResults.set(message, results);
  return results;
}

/** Whether `messages` begins with exactly the messages `walk` walked. */
function extends_(walk: Walk, messages: readonly SessionMessage[]): boolean {
  if (messages.length < walk.length) return false;
  if (messages === walk.messages) return true;
  for (let index = 0; index < walk.length; index += 1) if (messages[index] !== walk.messages[index]) return false;
  return true;
}

/** Index of the first message at or after `position` (messages in position order). */
export function firstAtOrAfter(walk: Walk, messages: readonly SessionMessage[], position: number): number {
  let index = walk.summaryStart !== undefined && walk.summaryStart.position <= position ? walk.summaryStart.index : 0;
  while (index < messages.length && (messages[index] as SessionMessage).position < position) index += 1;
  walk.summaryStart = { position, index };
  return index;
}

/** turnId → turn, as `new Map(turns.map(...))` would give (the last turn of an ID wins). */
export function turnsOf(walk: Walk, turns: readonly TurnState[]): { get(turnId: string): TurnState | undefined } {
  const index = (from: number) => {
    for (let at = from; at < turns.length; at += 1) walk.turnIndex.set((turns[at] as TurnState).turnId, at);
    walk.turnsIndexed = turns.length;
  };
  const rebuild = () => {
    walk.turnIndex = new Map();
    index(0);
  };
  if (turns.length < walk.turnsIndexed) rebuild();
  else index(walk.turnsIndexed);
  return {
    get(turnId) {
      let at = walk.turnIndex.get(turnId);
      if (at === undefined || turns[at]?.turnId !== turnId) {
        // The turns array is not the one indexed (a live-retention fold dropped its oldest turns).
        rebuild();
        at = walk.turnIndex.get(turnId);
      }
      return at === undefined ? undefined : turns[at];
    },
  };
}
