import { OrderedMap } from "immutable";

/**
 * The session's calls (`SessionState.calls`): a `Map` to every reader — `get`, `has`, `size`,
 * iteration in insertion order — but persistent underneath (an Immutable.js `OrderedMap`), so a
 * new state that changes one call shares every other with the state before it.
 *
 * Why not a plain `Map` drafted by immer, as the rest of the projection: immer copies a whole
 * `Map` the first time a draft writes to it, and the live fold makes one draft per event, so every
 * event about a call cost a copy of every call of the session (DESIGN.md §15: flat in history
 * length). Here a change costs O(log n), and a state taken earlier still never changes.
 *
 * It is frozen: `set`, `delete` and `clear` throw, as they do on immer's frozen maps. The
 * projection changes calls with `with` and `without`, which return a new map.
 */
export class CallMap<Value> extends Map<string, Value> {
  readonly #entries: OrderedMap<string, Value>;

  constructor(entries: OrderedMap<string, Value> = OrderedMap()) {
    super();
    this.#entries = entries;
    Object.freeze(this);
  }

  /** A persistent copy of any map (insertion order kept). */
  static from<Value>(map: ReadonlyMap<string, Value>): CallMap<Value> {
    if (map instanceof CallMap) return map as CallMap<Value>;
    return new CallMap(OrderedMap<string, Value>().withMutations((entries) => {
      for (const [key, value] of map) entries.set(key, value);
    }));
  }

  /** This map with `key` set to `value` (a new key goes last; an existing one keeps its place). */
  with(key: string, value: Value): CallMap<Value> {
    return new CallMap(this.#entries.set(key, value));
  }

  /** This map without `keys`. */
  without(keys: Iterable<string>): CallMap<Value> {
    return new CallMap(this.#entries.deleteAll(keys));
  }

  override get(key: string): Value | undefined {
    return this.#entries.get(key);
  }

  override has(key: string): boolean {
    return this.#entries.has(key);
  }

  override get size(): number {
    return this.#entries.size;
  }

  override keys(): MapIterator<string> {
    return this.#entries.keys() as MapIterator<string>;
  }

  override values(): MapIterator<Value> {
    return this.#entries.values() as MapIterator<Value>;
  }

  override entries(): MapIterator<[string, Value]> {
    return this.#entries.entries() as MapIterator<[string, Value]>;
  }

  override [Symbol.iterator](): MapIterator<[string, Value]> {
    return this.entries();
  }

  override forEach(callback: (value: Value, key: string, map: Map<string, Value>) => void, thisArg?: unknown): void {
    for (const [key, value] of this.#entries) callback.call(thisArg, value, key, this);
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
}
