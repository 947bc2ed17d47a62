import { OrderedMap } from "immutable";

/** Passed to the constructor by `CallMap.thawed` only. */
const thaw = Symbol("thaw");

/** The entries of a lazy map's base (`CallMap.lazy`): built once, on first need, for every map made from it. */
class LazyBase<Value> {
  #build: (() => OrderedMap<string, Value>) | undefined;
  #built: OrderedMap<string, Value> | undefined;

  constructor(build: () => OrderedMap<string, Value>) {
    this.#build = build;
  }

  entries(): OrderedMap<string, Value> {
    if (this.#built === undefined) {
      this.#built = (this.#build as () => OrderedMap<string, Value>)();
      this.#build = undefined;
    }
    return this.#built;
  }
}

/** Passed to the constructor by `CallMap.lazy` and `with` on a lazy map only: a base, and what was set on it since. */
class LazyEntries<Value> {
  constructor(
    readonly base: LazyBase<Value>,
    readonly overlay: OrderedMap<string, Value>,
  ) {}
}

/** The entries of any map as an `OrderedMap`, built in one pass (insertion order kept). */
function persistentEntries<Value>(map: ReadonlyMap<string, Value>): OrderedMap<string, Value> {
  return OrderedMap<string, Value>().withMutations((entries) => {
    for (const [key, value] of map) entries.set(key, value);
  });
}

/**
 * The session's calls (`SessionState.calls`): a `Map` to every reader — `get`, `has`, `size`,
 * iteration in insertion order — but persistent underneath (an Immutable.js `OrderedMap`), so a
 * new state that changes one call shares every other with the state before it.
 *
 * Why not a plain `Map` drafted by immer, as the rest of the projection: immer copies a whole
 * `Map` the first time a draft writes to it, and the live fold makes one draft per event, so every
 * event about a call cost a copy of every call of the session (docs/performance.md#what-makes-a-tool-call-cheap-issue-15: flat in history
 * length). Here a change costs O(log n), and a state taken earlier still never changes.
 *
 * It is frozen: `set`, `delete` and `clear` throw, as they do on immer's frozen maps. The
 * projection changes calls with `with` and `without`, which return a new map.
 *
 * A fold that changes its state in place and hands out no older state (`SessionFold({ mutable:
 * true })`, `stateAt` folding far from a snapshot) pays for persistence without using it: each
 * change allocates a path of the trie and a new map (folding events in memory went from 662 000
 * to 299 000 events/s when the calls became persistent, docs/performance.md). Such a fold holds a
 * **thawed** map instead (`CallMap.thawed`): the entries are the `Map`'s own, `put` and `remove`
 * change them in place, and `CallMap.from` makes it persistent once, when the fold is done. A
 * thawed map is still a read-only `Map` to its readers (`set`, `delete` and `clear` throw), but it
 * is the fold's working state, not a snapshot: it changes as the fold goes on.
 *
 * A state read back from a snapshot on disk holds a **lazy** map (`CallMap.lazy`): the calls of
 * every earlier turn are decoded and built only when someone reads them, and the calls its new
 * turns set are kept apart until then — opening a long session no longer decodes every call it
 * ever made (docs/performance.md#snapshots-on-disk-issue-35-first-measurement).
 */
export class CallMap<Value> extends Map<string, Value> {
  /**
   * The persistent entries. Undefined while the map is thawed (the entries are then the Map's own)
   * and while a lazy map's are not yet built (`CallMap.lazy`): set once, when first needed.
   */
  #entries: OrderedMap<string, Value> | undefined;
  readonly #thawed: boolean;
  /** A lazy map's entries, until they are built: its base, and what was set on it since (in the order first set). */
  #lazy: LazyEntries<Value> | undefined;

  /** A persistent map of `entries`; `thaw` (module-private) makes a thawed one, see `CallMap.thawed`. */
  constructor(entries: OrderedMap<string, Value> | typeof thaw | LazyEntries<Value> = OrderedMap()) {
    super();
    this.#thawed = entries === thaw;
    if (entries === thaw) return;
    if (entries instanceof LazyEntries) this.#lazy = entries;
    else this.#entries = entries;
    // Frozen as a Map: its private fields (a lazy map's entries, once built) are not properties.
    Object.freeze(this);
  }

  /**
   * A persistent map whose entries are `build()`'s, built when the map is first read — the calls of
   * a state read back from a snapshot, decoded only when someone reads them
   * (src/projections/session-snapshot.ts, docs/performance.md#snapshots-on-disk-issue-35-first-measurement).
   * `with` on it sets a call without building them, and `get` and `has` of a call set since read
   * it from there: a session opened from a snapshot folds the calls of its new turns without
   * decoding those of every turn before. Any other read builds them, once for every map made from
   * this one.
   */
  static lazy<Value>(build: () => CallMap<Value>): CallMap<Value> {
    return new CallMap(new LazyEntries(new LazyBase(() => build().#persistent()), OrderedMap()));
  }

  /**
   * A persistent copy of any map (insertion order kept): the map itself when it is a persistent
   * CallMap (lazy or not), else one built from its entries in a single pass (a thawed map is
   * frozen this way).
   */
  static from<Value>(map: ReadonlyMap<string, Value>): CallMap<Value> {
    if (map instanceof CallMap && !map.thawed) return map as CallMap<Value>;
    return new CallMap(persistentEntries(map));
  }

  /**
   * A persistent map of `entries`, in their order (a later entry for a key replaces the value but
   * keeps its place): a state read back from a snapshot (src/projections/session-snapshot.ts).
   */
  static fromEntries<Value>(entries: Iterable<readonly [string, Value]>): CallMap<Value> {
    return CallMap.extended(new CallMap<Value>(), entries);
  }

  /**
   * `base` (a persistent map) with `entries` set after its own, as a new persistent map sharing
   * `base`'s: what several snapshots whose calls begin alike build from one another.
   */
  static extended<Value>(base: CallMap<Value>, entries: Iterable<readonly [string, Value]>): CallMap<Value> {
    return new CallMap(
      base.#persistent().withMutations((map) => {
        for (const [key, value] of entries) map.set(key, value);
      }),
    );
  }

  /**
   * A map for a fold that changes it in place (see the class): holds `entries` (in their order)
   * and is changed with `put` and `remove` until `CallMap.from` makes it persistent.
   */
  static thawed<Value>(entries: Iterable<readonly [string, Value]> = []): CallMap<Value> {
    const map = new CallMap<Value>(thaw);
    for (const [key, value] of entries) Map.prototype.set.call(map, key, value);
    return map;
  }

  /** Whether this map is thawed: changed in place by `put` and `remove` (see the class). */
  get thawed(): boolean {
    return this.#thawed;
  }

  /** This map with `key` set to `value` (a new key goes last; an existing one keeps its place). A new persistent map. */
  with(key: string, value: Value): CallMap<Value> {
    const lazy = this.#lazy;
    // Set on a lazy map's overlay: built, the base's keys keep their places and the overlay's
    // others follow in the order first set — what setting each on the built entries gives.
    if (lazy !== undefined && this.#entries === undefined) return new CallMap(new LazyEntries(lazy.base, lazy.overlay.set(key, value)));
    return new CallMap(this.#persistent().set(key, value));
  }

  /** This map without `keys`. A new persistent map. */
  without(keys: Iterable<string>): CallMap<Value> {
    return new CallMap(this.#persistent().deleteAll(keys));
  }

  /** Sets `key` to `value` in place (a new key goes last; an existing one keeps its place). Thawed maps only. */
  put(key: string, value: Value): void {
    this.#assertThawed("put");
    super.set(key, value);
  }

  /** Removes `keys` in place. Thawed maps only. */
  remove(keys: Iterable<string>): void {
    this.#assertThawed("remove");
    for (const key of keys) super.delete(key);
  }

  override get(key: string): Value | undefined {
    if (this.#thawed) return super.get(key);
    const overlay = this.#entries === undefined ? this.#lazy?.overlay : undefined;
    if (overlay !== undefined && overlay.has(key)) return overlay.get(key);
    return this.#persistent().get(key);
  }

  override has(key: string): boolean {
    if (this.#thawed) return super.has(key);
    const overlay = this.#entries === undefined ? this.#lazy?.overlay : undefined;
    return (overlay !== undefined && overlay.has(key)) || this.#persistent().has(key);
  }

  override get size(): number {
    return this.#thawed ? super.size : this.#persistent().size;
  }

  override keys(): MapIterator<string> {
    return this.#thawed ? super.keys() : (this.#persistent().keys() as MapIterator<string>);
  }

  override values(): MapIterator<Value> {
    return this.#thawed ? super.values() : (this.#persistent().values() as MapIterator<Value>);
  }

  override entries(): MapIterator<[string, Value]> {
    return this.#thawed ? super.entries() : (this.#persistent().entries() as MapIterator<[string, Value]>);
  }

  override [Symbol.iterator](): MapIterator<[string, Value]> {
    return this.entries();
  }

  override forEach(callback: (value: Value, key: string, map: Map<string, Value>) => void, thisArg?: unknown): void {
    for (const [key, value] of this.entries()) callback.call(thisArg, value, key, this);
  }

  override set(): this {
    throw new TypeError("This object has been frozen and should not be mutated");
  }

  override delete(): boolean {
    throw new TypeError("This object has been frozen and should not be mutated");
  }

  override clear(): void {
    throw new TypeError("This object has been frozen and should not be mutated");
  }

  /** The persistent entries: this map's (a lazy map's built now, once), or a copy of a thawed map's. */
  #persistent(): OrderedMap<string, Value> {
    if (this.#thawed) return persistentEntries(this);
    if (this.#entries === undefined) {
      const lazy = this.#lazy as LazyEntries<Value>;
      const base = lazy.base.entries();
      this.#entries =
        lazy.overlay.size === 0
          ? base
          : base.withMutations((map) => {
              for (const [key, value] of lazy.overlay) map.set(key, value);
            });
      this.#lazy = undefined;
    }
    return this.#entries;
  }

  #assertThawed(method: string): void {
    if (!this.#thawed) throw new TypeError(`CallMap.${method}: a persistent CallMap never changes (use with / without)`);
  }
}
