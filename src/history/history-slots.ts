import type { SessionMessage, TurnState } from "../projections/session-state.js";
import { unitAt, type HistorySource, type HistoryUnit, type UnitSurroundings } from "./history-units.js";
import { firstAtOrAfter, turnsOf, walkOf, type Walk } from "./history-walk.js";

/**
 * A session's history units, one slot per message, kept from one build to the next (docs/performance.md#what-makes-a-tool-call-cheap-issue-15:
 * the next request's history is extended from the last one). Where `buildHistoryUnits` lays out
 * every unit on every build, the slots are updated: appended messages add slots, and only the
 * groups whose unit may have changed are looked at again — a group that got a result, whose turn
 * changed, or that left the working set. A build then reads the units by index range: the
 * earlier history is `[historyStart, current)`, the current user message `current`, the working
 * set the rest.
 *
 * Slots start at `base`: the messages a recorded summary replaced when the slots were made have
 * no slot (nothing reads their units), as `buildHistoryUnits` does not build them.
 */
export interface HistorySlots {
  /** The first message with a slot. */
  readonly base: number;
  /** Messages covered: slots are `[base, length)`. */
  readonly length: number;
  /** The unit of message `index`, or `undefined` for a tool result (its group's unit holds it). */
  unit(index: number): HistoryUnit | undefined;
  /** How many messages in `[base, index)` have a unit. */
  unitsBefore(index: number): number;
  /** Index of the current user message (the session's last), or -1. */
  readonly current: number;
  /** Index of the first message of earlier history the recorded summary does not replace (`base` without one). */
  readonly historyStart: number;
  /** Tool results that were not used, by why (as `HistoryLayout.ignoredResults`). */
  readonly ignoredResults: { orphan: number; duplicate: number };
  /** Counts the updates that changed or added a slot. */
  readonly epoch: number;
  /** The lowest index whose slot changed or was added after `epoch`; `Infinity` when none was. */
  changedSince(epoch: number): number;
}

/**
 * The slots of `source`, updated to it; `undefined` when they cannot describe its history (a
 * summary with messages out of position order: then the units it replaces are not a prefix).
 *
 * The slots are kept per walk (history-walk.ts): a state whose messages extend the walked ones
 * updates them, any other gets new ones. An update costs the messages appended since the last one,
 * the groups it looks at again, and one pointer comparison per message and per turn (whether the
 * messages extend the walked ones, which turns changed).
 *
 * @example
 * const slots = historySlots(session.state());
 * const current = slots === undefined || slots.current < 0 ? undefined : slots.unit(slots.current);
 */
export function historySlots(source: HistorySource): HistorySlots | undefined {
  const walk = walkOf(source.messages);
  const summary = source.historySummary ?? null;
  if (summary !== null && !walk.ordered) return undefined;
  const historyStart = historyStartOf(source, walk);
  let slots = slotsByWalk.get(walk);
  // A summary that replaces less than when the slots were made needs slots they do not have.
  if (slots === undefined || historyStart < slots.base) {
    slots = new Slots(historyStart);
    slotsByWalk.set(walk, slots);
  }
  slots.update(source, walk, historyStart);
  return slots;
}

/** Where earlier history starts: after what the summary replaces, and never after the current message. */
function historyStartOf(source: HistorySource, walk: Walk): number {
  const summary = source.historySummary ?? null;
  if (summary === null) return 0;
  const start = firstAtOrAfter(walk, source.messages, summary.beforePosition);
  return walk.lastUser >= 0 && walk.lastUser < start ? walk.lastUser : start;
}

const slotsByWalk = new WeakMap<Walk, Slots>();

class Slots implements HistorySlots {
  readonly base: number;
  current = -1;
  historyStart: number;
  ignoredResults = { orphan: 0, duplicate: 0 };
  epoch = 0;
  /** Per slot (index − base). */
  readonly #units: (HistoryUnit | undefined)[] = [];
  /** Units before each slot, and one entry more for the end. */
  readonly #unitsBefore: number[] = [0];
  /** The lowest slot changed by each update that changed one (the update that made epoch e + 1 is at e). */
  readonly #lowestChanged: number[] = [];
  /** Groups (message indexes) by the call IDs they answer and by their turn: whose unit a new result or a changed turn may change. */
  readonly #groupsByCall = new Map<string, number[]>();
  readonly #groupsByTurn = new Map<string, number[]>();
  /** The turns as they were at the last update (a fold in place changes its array and turns in place). */
  readonly #turns: TurnSeen[] = [];
  /** `id\0format` of the provider at the last update; `undefined` before the first. */
  #provider: string | null | undefined;

  constructor(base: number) {
    this.base = base;
    this.historyStart = base;
  }

  get length(): number {
    return this.base + this.#units.length;
  }

  unit(index: number): HistoryUnit | undefined {
    return this.#units[index - this.base];
  }

  unitsBefore(index: number): number {
    return this.#unitsBefore[index - this.base] as number;
  }

  changedSince(epoch: number): number {
    let lowest = Infinity;
    for (let at = epoch; at < this.epoch; at += 1) lowest = Math.min(lowest, this.#lowestChanged[at] as number);
    return lowest;
  }

  update(source: HistorySource, walk: Walk, historyStart: number): void {
    const messages = source.messages;
    const covered = this.length;
    const provider = source.provider === null ? null : { id: source.provider.id, format: source.provider.format };
    const surroundings: UnitSurroundings = { walk, turns: turnsOf(walk, source.turns), provider };
    // Groups already in a slot whose unit may differ now; the slots appended below are new anyway.
    const again = new Set<number>();
    const groupsOf = (groups: readonly number[] | undefined) => {
      for (const index of groups ?? []) again.add(index);
    };

    const providerKey = provider === null ? null : `${provider.id}\u0000${provider.format}`;
    if (this.#provider !== undefined && providerKey !== this.#provider) for (const groups of this.#groupsByTurn.values()) groupsOf(groups);
    this.#provider = providerKey;

    // A group's turn is the last turn with its ID: any index where the turns differ changes the
    // groups of the IDs there, before and after. A fold in place changes a turn without making a
    // new one, so what a unit reads of a turn that is not frozen is compared too (a frozen one,
    // as immer makes them, is the same for good).
    const turns = source.turns;
    const seen = this.#turns;
    const common = Math.min(seen.length, turns.length);
    for (let index = 0; index < common; index += 1) {
      const turn = turns[index] as TurnState;
      const before = seen[index] as TurnSeen;
      if (turn === before.turn && (before.frozen || sameFields(turn, before))) continue;
      groupsOf(this.#groupsByTurn.get(before.turnId));
      groupsOf(this.#groupsByTurn.get(turn.turnId));
      seen[index] = turnSeen(turn);
    }
    for (let index = common; index < seen.length; index += 1) groupsOf(this.#groupsByTurn.get((seen[index] as TurnSeen).turnId));
    seen.length = common;
    for (let index = common; index < turns.length; index += 1) {
      const turn = turns[index] as TurnState;
      groupsOf(this.#groupsByTurn.get(turn.turnId));
      seen.push(turnSeen(turn));
    }

    // Messages are only appended (walkOf), so the current user message only moves later: the
    // groups between the old and the new one have left the working set.
    const lastUser = walk.lastUser;
    if (this.current >= 0 && lastUser !== this.current) {
      for (let index = Math.max(this.current + 1, this.base); index < Math.min(lastUser, covered); index += 1) {
        const unit = this.unit(index);
        if (unit !== undefined && (unit.kind === "tool-group" || unit.kind === "flat")) again.add(index);
      }
    }

    // A call's first result completes (or changes) every group that has the call.
    for (let index = covered; index < messages.length; index += 1) {
      const message = messages[index] as SessionMessage;
      if (message.role === "tool" && walk.resultMessages.get(message.metadata.tool_call_id) === message) groupsOf(this.#groupsByCall.get(message.metadata.tool_call_id));
    }

    let lowest = covered < messages.length ? covered : Infinity;
    for (const index of again) {
      const unit = unitAt(messages, index, surroundings);
      if (unit === this.unit(index)) continue;
      this.#units[index - this.base] = unit;
      lowest = Math.min(lowest, index);
    }
    for (let index = covered; index < messages.length; index += 1) {
      const unit = unitAt(messages, index, surroundings);
      this.#units.push(unit);
      this.#unitsBefore.push(this.unitsBefore(index) + (unit === undefined ? 0 : 1));
      const message = messages[index] as SessionMessage;
      if (message.role === "agent" && message.metadata !== undefined) {
        for (const call of message.metadata.providerToolCalls) push(this.#groupsByCall, call.id, index);
        push(this.#groupsByTurn, message.metadata.turnId, index);
      }
    }
    if (lowest !== Infinity) {
      this.#lowestChanged.push(lowest);
      this.epoch += 1;
    }

    this.current = lastUser;
    this.historyStart = historyStart;
    this.ignoredResults = { orphan: walk.resultMessages.size - walk.usedResults, duplicate: walk.duplicates };
  }
}

/** A turn as a unit reads it, at one update. */
interface TurnSeen {
  turn: TurnState;
  /** Frozen then, frozen for good: nothing in it can have changed since. */
  frozen: boolean;
  turnId: string;
  response: TurnState["response"];
  echoDropped: TurnState["echoDropped"];
}

function turnSeen(turn: TurnState): TurnSeen {
  return { turn, frozen: Object.isFrozen(turn), turnId: turn.turnId, response: turn.response, echoDropped: turn.echoDropped };
}

function sameFields(turn: TurnState, seen: TurnSeen): boolean {
  return turn.turnId === seen.turnId && turn.response === seen.response && turn.echoDropped === seen.echoDropped;
}

function push(groups: Map<string, number[]>, key: string, index: number): void {
  const known = groups.get(key);
  if (known === undefined) groups.set(key, [index]);
  else known.push(index);
}
