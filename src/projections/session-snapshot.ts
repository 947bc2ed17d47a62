import { createHash } from "node:crypto";
import { setImmediate as nextTurn } from "node:timers/promises";
import { deserialize, serialize } from "node:v8";
import { freeze } from "immer";
import type { EventLog } from "../log/event-log.js";
import type { SnapshotStore } from "../log/snapshot-store.js";
import { CallMap } from "./call-map.js";
import { sessionStateProjection, type SessionState } from "./session-state.js";

/**
 * Snapshots of the session-state projection on disk (docs/design.md#5-projections): the encoding,
 * and the checks that make a snapshot safe to use.
 *
 * **Encoding.** A state of a long session is mostly five lists that only grow at their end —
 * messages, turns, calls, host calls, `tool` approvals — and a little else. Each list is cut into
 * chunks of `chunkSize` elements; a chunk is stored once, named by the SHA-256 of its bytes, and
 * every later snapshot whose list holds the very same elements there names it again instead of
 * writing it. A record (one snapshot) holds the rest of the state (the "head"), each list's chunk
 * names and its last, partial chunk inline. So a snapshot costs what changed since the one before
 * it, not the size of the session (a 200 000-event session's state is 33 MB as one v8 value). Values
 * are `node:v8`'s serialization (the structured-clone algorithm: `Map`, `Set`, `undefined` and
 * shared references kept exactly, no JSON round trip).
 *
 * **Checks.** A record is `sha-256(payload) ‖ payload`; a chunk's name is its digest. A record is used
 * only when its digest holds, it decodes, it is of this format and this projection's name and
 * version, it is of the stream and position asked for, the log's event at that position has the
 * hash it names (the hash chain makes that hash stand for every event up to it), and every chunk it
 * names is there with the right digest. Anything else — a missing, stale, damaged or foreign
 * snapshot — is passed over (and its record deleted, so it is written again), never an error.
 */

/** Version of this encoding: a record of another is passed over. */
export const snapshotFormat = 1;

/**
 * The parts of a state that grow with the session, stored in chunks: lists as they are, maps
 * (`calls` a CallMap, the others plain) as their `[key, value]` entries, in order.
 */
const listKinds = {
  messages: "array",
  turns: "array",
  hostCalls: "array",
  toolApprovals: "array",
  calls: "calls",
  hostRules: "map",
  realPaths: "map",
  gitLinks: "map",
} as const satisfies Partial<Record<keyof SessionState, "array" | "calls" | "map">>;
type ListName = keyof typeof listKinds;
const listNames = Object.keys(listKinds) as ListName[];

/** How many snapshots' calls a reader keeps to build the next ones on (see SessionSnapshotReader). */
const maxCallPrefixes = 16;

/** Chunks read at once when a snapshot is loaded (files, or rows over a pool of connections). */
const chunkReadsAtOnce = 16;

/** Default elements per chunk: small enough that a record's partial chunks stay small. */
export const defaultChunkSize = 256;

interface ListRecord {
  /** Digests of the full chunks, in order. */
  chunks: string[];
  /** The elements after the last full chunk. */
  tail: unknown[];
}

interface RecordPayload {
  format: number;
  projection: string;
  version: number;
  stream: string;
  position: number;
  /** The hash of the event at `position`. */
  hash: string;
  chunkSize: number;
  /** What the session fold owes at this position (it is between turns): see SessionFold.resting. */
  pending: string[];
  head: Omit<SessionState, ListName>;
  lists: Record<ListName, ListRecord>;
}

/** The chunks of each list a snapshot is made of: their elements (by reference) and digests. */
export type SnapshotChunks = ReadonlyMap<ListName, ReadonlyArray<{ readonly elements: readonly unknown[]; readonly digest: string }>>;

/** A snapshot read back: the state after the event at `position`, and what the fold owed then. */
export interface LoadedSnapshot {
  position: number;
  /** The hash of the event at `position` (checked against the log). */
  hash: string;
  state: SessionState;
  pending: string[];
  /** Its chunks, for a writer that goes on from it (`SessionSnapshotWriter.remember`). */
  chunks: SnapshotChunks;
}

/** Bytes decoded, or undefined when they do not decode (a check that fails, not an error). */
function decoded(bytes: Uint8Array): unknown {
  try {
    return deserialize(bytes) as unknown;
  } catch {
    return undefined;
  }
}

function digestOf(bytes: Uint8Array): string {
  return createHash("sha256").update(bytes).digest("hex");
}

/** The list's elements, in order (calls as entries); the state is immutable, so this never changes under a write. */
function* elementsOf(state: SessionState, name: ListName): Generator<unknown> {
  const list = state[name];
  if (listKinds[name] === "array") yield* list as readonly unknown[];
  else yield* (list as ReadonlyMap<string, unknown>).entries();
}

/** Whether two chunks hold the very same elements (entries compared by key and value). */
function sameElements(name: ListName, a: readonly unknown[], b: readonly unknown[]): boolean {
  if (a.length !== b.length) return false;
  for (let index = 0; index < a.length; index += 1) {
    if (listKinds[name] !== "array") {
      const [keyA, valueA] = a[index] as [string, unknown];
      const [keyB, valueB] = b[index] as [string, unknown];
      if (keyA !== keyB || valueA !== valueB) return false;
    } else if (a[index] !== b[index]) return false;
  }
  return true;
}

/**
 * Writes snapshots of one session's states to a store, remembering which chunks it has written:
 * a chunk whose elements are the very objects of one it wrote (immutable states share them) is
 * named again without being encoded again. The work is cut into turns of the event loop (one
 * chunk encoded per turn), so a write in the background never holds up an append or a tool call
 * for longer than one chunk.
 *
 * @example
 * const writer = new SessionSnapshotWriter(log.snapshots, "session-s1");
 * await writer.write(state, { hash: lastEvent.meta.hash, pending: fold.pending });
 */
export class SessionSnapshotWriter {
  readonly chunkSize: number;
  /** Per list, the chunks written so far: their elements (by reference) and digest. */
  readonly #written = new Map<ListName, Array<{ elements: readonly unknown[]; digest: string }>>();

  constructor(
    private readonly store: SnapshotStore,
    readonly stream: string,
    options: { chunkSize?: number } = {},
  ) {
    this.chunkSize = options.chunkSize ?? defaultChunkSize;
    if (!Number.isInteger(this.chunkSize) || this.chunkSize < 1) throw new TypeError("SessionSnapshotWriter: chunkSize must be an integer ≥ 1");
  }

  /**
   * Takes the chunks of a snapshot read back (of this writer's stream) as written: a session opened
   * from a snapshot writes its next one without encoding again what that one holds.
   */
  remember(loaded: LoadedSnapshot): void {
    for (const [name, chunks] of loaded.chunks) this.#written.set(name, [...chunks]);
  }

  /**
   * Stores `state` (immutable: a frozen state with a persistent CallMap, as an immutable fold hands
   * out) as the snapshot at its position, whose event has `hash`. `pending` is what the session fold
   * owes there; pass it only for a state between turns (see SessionFold.resting), else `null`.
   */
  async write(state: SessionState, { hash, pending }: { hash: string; pending: readonly string[] | null }): Promise<void> {
    if (state.position < 1) throw new TypeError("SessionSnapshotWriter: a state before any event is not kept");
    if (state.calls instanceof CallMap && state.calls.thawed) throw new TypeError("SessionSnapshotWriter: a state folded in place changes under the write; freeze it first (freezeState)");
    const lists = {} as Record<ListName, ListRecord>;
    // The calls of a state read back from a snapshot are decoded when first read (CallMap.lazy):
    // the chunks they are built from are decoded here one per turn, so reading them below builds
    // the map from decoded chunks instead of decoding every one in a single turn.
    for (const chunk of this.#written.get("calls") ?? []) {
      if (chunk instanceof LazyChunk && !chunk.decoded) {
        await nextTurn();
        void chunk.elements;
      }
    }
    for (const name of listNames) {
      const written = this.#written.get(name) ?? [];
      const chunks: string[] = [];
      let current: unknown[] = [];
      let compared = 0;
      for (const element of elementsOf(state, name)) {
        current.push(element);
        if (current.length < this.chunkSize) continue;
        const index = chunks.length;
        const known = written[index];
        if (known !== undefined && sameElements(name, known.elements, current)) {
          chunks.push(known.digest);
          // Comparing is cheap; still, a long session's lists are let go of now and then.
          if ((compared += 1) % 256 === 0) await nextTurn();
        } else {
          await nextTurn();
          const bytes = serialize(current);
          const digest = digestOf(bytes);
          await this.store.putChunk(digest, bytes);
          written[index] = { elements: current, digest };
          written.length = index + 1;
          chunks.push(digest);
        }
        current = [];
      }
      this.#written.set(name, written);
      lists[name] = { chunks, tail: current };
    }
    const head: Partial<SessionState> = { ...state };
    for (const name of listNames) delete head[name];
    const payload: RecordPayload = {
      format: snapshotFormat,
      projection: sessionStateProjection.name,
      version: sessionStateProjection.version,
      stream: this.stream,
      position: state.position,
      hash,
      chunkSize: this.chunkSize,
      pending: pending === null ? [] : [...pending],
      head: head as Omit<SessionState, ListName>,
      lists,
    };
    await nextTurn();
    const body = serialize(payload);
    await this.store.putRecord(this.stream, state.position, Buffer.concat([Buffer.from(digestOf(body), "hex"), body]));
  }
}

/** Options of {@link SessionSnapshotReader}. */
export interface SessionSnapshotReaderOptions {
  /** Chunks kept in memory (least recently used first out; those of calls as checked bytes until decoded), shared by the snapshots that name them. Default 8 192. */
  maxChunks?: number;
}

/**
 * Reads snapshots back, checked against the log (see the module comment), keeping the chunks it
 * decoded: a chunk is the same for every snapshot that names it, so the snapshots of one session
 * share them in memory too, and reading a second snapshot of a session decodes only what the first
 * did not hold.
 *
 * @example
 * const reader = new SessionSnapshotReader();
 * const found = await reader.newest(log, log.snapshots, "session-s1", 42_000);
 * if (found) fold.resume(found); // else fold from the start
 */
export class SessionSnapshotReader {
  readonly maxChunks: number;
  /** Chunks read here, decoded or not yet (a lazy one), least recently used first. */
  readonly #chunks = new Map<string, ChunkEntry>();
  /** The calls of the full chunks of snapshots read here, by their chunks' digests, oldest first (see #calls). */
  readonly #callPrefixes: Array<{ digests: readonly string[]; calls: CallMap<unknown> }> = [];
  #passedOver = 0;

  /** How many snapshots this reader passed over (and deleted) because a check failed: they are owed again. */
  get passedOver(): number {
    return this.#passedOver;
  }

  constructor(options: SessionSnapshotReaderOptions = {}) {
    this.maxChunks = options.maxChunks ?? 8_192;
  }

  /**
   * The newest usable snapshot of `stream` at or below `atOrBelow` and above `above` (default 0),
   * or undefined. Snapshots that do not pass the checks are passed over and deleted; a store or log
   * that fails to answer is a miss, not an error.
   */
  async newest(log: EventLog, store: SnapshotStore, stream: string, atOrBelow: number, above = 0): Promise<LoadedSnapshot | undefined> {
    let positions: number[];
    try {
      positions = await store.positions(stream);
    } catch {
      return undefined;
    }
    const candidates = positions.filter((position) => position <= atOrBelow && position > above).reverse();
    // A few tries: past that the store is likely damaged throughout, and folding is the answer.
    for (const position of candidates.slice(0, 4)) {
      let loaded: LoadedSnapshot | undefined;
      try {
        loaded = await this.#load(log, store, stream, position);
      } catch {
        // Not a check that failed but a read (the store, the log) or this code: the snapshot may
        // well be sound, so it is passed over this time and kept.
        continue;
      }
      if (loaded !== undefined) return loaded;
      // A check failed: the record is of no use to anyone, and a new one is owed.
      this.#passedOver += 1;
      await store.deleteRecord(stream, position).catch(() => undefined);
    }
    return undefined;
  }

  /** The snapshot at `position`, or undefined when it fails a check; throws when a read (or this code) fails. */
  async #load(log: EventLog, store: SnapshotStore, stream: string, position: number): Promise<LoadedSnapshot | undefined> {
    const bytes = await store.getRecord(stream, position);
    if (bytes === undefined || bytes.length <= 32) return undefined;
    const body = bytes.subarray(32);
    if (digestOf(body) !== Buffer.from(bytes.buffer, bytes.byteOffset, 32).toString("hex")) return undefined;
    const payload = decoded(body) as RecordPayload;
    if (
      payload === null ||
      typeof payload !== "object" ||
      payload.format !== snapshotFormat ||
      payload.projection !== sessionStateProjection.name ||
      payload.version !== sessionStateProjection.version ||
      payload.stream !== stream ||
      payload.position !== position ||
      payload.head?.position !== position
    ) {
      return undefined;
    }
    const [event] = await log.readStream(stream, { from: position, maxCount: 1 });
    if (event === undefined || event.meta.streamPosition !== position || event.meta.hash !== payload.hash) return undefined;
    if (listNames.some((name) => payload.lists[name] === undefined)) return undefined;
    // The chunks not in memory, read a batch at a time rather than one after another. Those of the
    // calls are read and checked but decoded only when the calls are first read (CallMap.lazy): a
    // session opened from a snapshot reads the calls of its earlier turns only if someone asks.
    const lazy = new Set(payload.lists.calls.chunks);
    const fetched = new Map<string, ChunkEntry | undefined>();
    const missing = [...new Set(listNames.flatMap((name) => payload.lists[name].chunks))].filter((digest) => !this.#chunks.has(digest));
    for (let from = 0; from < missing.length; from += chunkReadsAtOnce) {
      const batch = missing.slice(from, from + chunkReadsAtOnce);
      const read = await Promise.all(batch.map((digest) => this.#entry(store, digest, payload.chunkSize, lazy.has(digest))));
      batch.forEach((digest, index) => fetched.set(digest, read[index]));
    }
    const lists = {} as Record<ListName, unknown[]>;
    const chunks = new Map<ListName, ChunkEntry[]>();
    for (const name of listNames) {
      const list = payload.lists[name];
      const named: ChunkEntry[] = [];
      for (const digest of list.chunks) {
        const chunk = fetched.has(digest) ? fetched.get(digest) : await this.#entry(store, digest, payload.chunkSize, lazy.has(digest));
        if (chunk === undefined) return undefined;
        named.push(chunk);
      }
      chunks.set(name, named);
      // The partial chunk is this record's own: frozen here (a CallMap's deep freeze stops at the map).
      for (const element of list.tail) freeze(element, true);
      if (listKinds[name] !== "calls") lists[name] = ([] as unknown[]).concat(...named.map((chunk) => chunk.elements), list.tail);
    }
    // The rest of the state is small: frozen all the way down. The lists' elements are frozen
    // already (each chunk's when it was decoded, the partial chunks above), so each list is frozen
    // itself only — a deep freeze would visit every element of a long session again.
    const state: Record<string, unknown> = { ...payload.head };
    for (const value of Object.values(state)) freeze(value, true);
    for (const name of listNames) {
      const kind = listKinds[name];
      const elements = lists[name];
      if (kind === "array") state[name] = Object.freeze(elements);
      else if (kind === "calls") {
        const named = chunks.get(name) ?? [];
        const tail = payload.lists[name].tail as [string, unknown][];
        state[name] = CallMap.lazy(() => this.#calls(named, tail));
      }
      else state[name] = freeze(new Map(elements as [string, unknown][]), false);
    }
    return { position, hash: payload.hash, state: Object.freeze(state) as unknown as SessionState, pending: payload.pending, chunks };
  }

  /**
   * The calls of a snapshot: its full chunks' entries, built on the map of the longest run of them
   * another snapshot read here began with (the calls of a finished turn never change, so the
   * snapshots of a session share their first chunks), then its partial chunk.
   */
  #calls(chunks: ReadonlyArray<{ readonly elements: readonly unknown[]; readonly digest: string }>, tail: readonly [string, unknown][]): CallMap<unknown> {
    const digests = chunks.map((chunk) => chunk.digest);
    let base: { digests: readonly string[]; calls: CallMap<unknown> } = { digests: [], calls: new CallMap() };
    for (const candidate of this.#callPrefixes) {
      if (candidate.digests.length > base.digests.length && candidate.digests.length <= digests.length && candidate.digests.every((digest, index) => digest === digests[index])) base = candidate;
    }
    const added = chunks.slice(base.digests.length).flatMap((chunk) => chunk.elements as [string, unknown][]);
    const full = added.length === 0 ? base.calls : CallMap.extended(base.calls, added);
    if (full !== base.calls) {
      this.#callPrefixes.push({ digests, calls: full });
      if (this.#callPrefixes.length > maxCallPrefixes) this.#callPrefixes.shift();
    }
    return tail.length === 0 ? full : CallMap.extended(full, tail);
  }

  /**
   * A chunk, from memory or read and checked (its digest, and that it is an array of `chunkSize`
   * elements in a serialization this process reads): decoded now, or — `lazy` — when its elements are first read. Kept in memory either
   * way, so the next snapshot that names it reads it no more. Undefined when a check fails.
   */
  async #entry(store: SnapshotStore, digest: string, chunkSize: number, lazy: boolean): Promise<ChunkEntry | undefined> {
    const cached = this.#chunks.get(digest);
    if (cached !== undefined) {
      this.#chunks.delete(digest);
      this.#chunks.set(digest, cached);
      return cached;
    }
    const bytes = await store.getChunk(digest);
    if (bytes === undefined || digestOf(bytes) !== digest || !readableArray(bytes, chunkSize)) return undefined;
    let entry: ChunkEntry;
    if (lazy) entry = new LazyChunk(digest, () => decodedChunk(bytes, chunkSize));
    else {
      const elements = decodedChunk(bytes, chunkSize);
      if (elements === undefined) return undefined;
      entry = { elements, digest };
    }
    this.#chunks.set(digest, entry);
    while (this.#chunks.size > this.maxChunks) {
      const oldest = this.#chunks.keys().next().value;
      if (oldest === undefined) break;
      this.#chunks.delete(oldest);
    }
    return entry;
  }
}

/** A checked chunk's elements, decoded and deeply frozen; undefined when they do not decode as a chunk of `chunkSize`. */
function decodedChunk(bytes: Uint8Array, chunkSize: number): readonly unknown[] | undefined {
  const elements = decoded(bytes);
  if (!Array.isArray(elements) || elements.length !== chunkSize) return undefined;
  for (const element of elements) freeze(element, true);
  return Object.freeze(elements);
}

/** A chunk of a snapshot: its elements (by reference) and digest. */
type ChunkEntry = { readonly elements: readonly unknown[]; readonly digest: string };

/**
 * A chunk read and checked, decoded when its elements are first read (then kept, so every reader
 * of it sees the very same elements). Its bytes passed their digest and were written by a
 * serializer this one reads, as an array of the record's chunk size (`readableArray`), so they decode as the writer's array did: a
 * chunk that still does not is a writer's bug, and throws.
 */
class LazyChunk implements ChunkEntry {
  #decode: (() => readonly unknown[] | undefined) | undefined;
  #elements: readonly unknown[] | undefined;

  constructor(
    readonly digest: string,
    decode: () => readonly unknown[] | undefined,
  ) {
    this.#decode = decode;
  }

  /** Whether its elements were decoded. */
  get decoded(): boolean {
    return this.#elements !== undefined;
  }

  get elements(): readonly unknown[] {
    if (this.#elements === undefined) {
      const elements = (this.#decode as () => readonly unknown[] | undefined)();
      if (elements === undefined) throw new Error(`session snapshot: chunk ${this.digest} passed its checks but does not decode`);
      this.#elements = elements;
      this.#decode = undefined;
    }
    return this.#elements;
  }
}

/** The version of `node:v8`'s serialization format this process writes (and reads, with every older one). */
const serializerVersion = serialize(null)[1] as number;

/**
 * Whether bytes are `node:v8` serialization, of a version this process reads, of an array of
 * `length` elements (a dense or a sparse one: the tag, then the length as a base-128 varint). What
 * a lazy chunk is checked for when it is read, so that it decodes when it is first read: a
 * snapshot a newer Node wrote, or a chunk of another length, is passed over when it is opened.
 */
function readableArray(bytes: Uint8Array, length: number): boolean {
  if (bytes[0] !== 0xff || (bytes[1] as number) > serializerVersion || (bytes[2] !== 0x41 && bytes[2] !== 0x61)) return false;
  let value = 0;
  for (let index = 3, shift = 0; index < bytes.length && shift < 35; index += 1, shift += 7) {
    const byte = bytes[index] as number;
    value += (byte & 0x7f) * 2 ** shift;
    if (byte < 0x80) return value === length;
  }
  return false;
}
