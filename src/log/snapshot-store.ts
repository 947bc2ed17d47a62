/**
 * Where a log keeps its projection snapshots (docs/design.md#5-projections): bytes only, beside
 * the events, as a cache that can always be thrown away. What the bytes mean, and the checks that
 * make a stale or damaged snapshot harmless, are the projection's business
 * (src/projections/session-snapshot.ts); a store only keeps what it is given and hands it back.
 *
 * Two kinds of entry:
 * - **chunks**, named by the SHA-256 of their bytes: a run of a state's list (messages, calls…)
 *   that many snapshots of a stream share, written once;
 * - **records**, one per (stream, position): a snapshot itself, naming the chunks it is made of.
 *
 * A record is written after its chunks and replaces any record at its position whole: a reader
 * sees a whole record or none (a crash while writing leaves at most an unused chunk or a file
 * the store never reads). Nothing here is durable in the log's sense: a record lost or torn is
 * only a slower open.
 */
export interface SnapshotStore {
  /** Stores a chunk under `digest` (the SHA-256 of `bytes`, hex). Storing one again changes nothing. */
  putChunk(digest: string, bytes: Uint8Array): Promise<void>;
  /** A chunk's bytes, or undefined when it is not stored. */
  getChunk(digest: string): Promise<Uint8Array | undefined>;
  /** Stores the record of `stream` at `position`, replacing whole any record there. */
  putRecord(stream: string, position: number, bytes: Uint8Array): Promise<void>;
  /** The record of `stream` at `position`, or undefined. */
  getRecord(stream: string, position: number): Promise<Uint8Array | undefined>;
  /** The positions of `stream`'s records, ascending. */
  positions(stream: string): Promise<number[]>;
  /** Forgets the record at `position` (a stale or damaged one). Its chunks stay (others may share them). */
  deleteRecord(stream: string, position: number): Promise<void>;
  /** Forgets every record and chunk (of every stream). */
  clear(): Promise<void>;
  /**
   * Runs `write` as a background write of this store: `idle()` waits for it, and `close()` waits for
   * it before the store closes. Its failure is swallowed (a snapshot not written is only a cache
   * miss). Returns at once.
   */
  track(write: () => Promise<unknown>): void;
  /** Resolves once no background write (`track`) is in flight. */
  idle(): Promise<void>;
  /** Waits for the background writes, then refuses new ones (they are dropped). */
  close(): Promise<void>;
}

/**
 * The background-write bookkeeping every store shares: `track`, `idle` and `close`.
 *
 * @example
 * class MyStore extends BackgroundWrites implements SnapshotStore { … }
 */
export abstract class BackgroundWrites {
  readonly #inFlight = new Set<Promise<unknown>>();
  #closed = false;

  /** Whether `close` was called: writes are then dropped. */
  protected get closed(): boolean {
    return this.#closed;
  }

  track(write: () => Promise<unknown>): void {
    if (this.#closed) return;
    const running: Promise<unknown> = write()
      .catch(() => undefined)
      .finally(() => this.#inFlight.delete(running));
    this.#inFlight.add(running);
  }

  async idle(): Promise<void> {
    while (this.#inFlight.size > 0) await Promise.all([...this.#inFlight]);
  }

  async close(): Promise<void> {
    await this.idle();
    this.#closed = true;
  }
}

/**
 * Snapshots in memory, for a `MemoryEventLog` (they live and die with it).
 *
 * @example
 * const store = new MemorySnapshotStore();
 * await store.putRecord("session-s1", 2_000, bytes);
 */
export class MemorySnapshotStore extends BackgroundWrites implements SnapshotStore {
  readonly #chunks = new Map<string, Uint8Array>();
  readonly #records = new Map<string, Map<number, Uint8Array>>();

  async putChunk(digest: string, bytes: Uint8Array): Promise<void> {
    if (this.closed) return;
    this.#chunks.set(digest, Uint8Array.from(bytes));
  }

  async getChunk(digest: string): Promise<Uint8Array | undefined> {
    return this.#chunks.get(digest);
  }

  async putRecord(stream: string, position: number, bytes: Uint8Array): Promise<void> {
    if (this.closed) return;
    let records = this.#records.get(stream);
    if (records === undefined) this.#records.set(stream, (records = new Map()));
    records.set(position, Uint8Array.from(bytes));
  }

  async getRecord(stream: string, position: number): Promise<Uint8Array | undefined> {
    return this.#records.get(stream)?.get(position);
  }

  async positions(stream: string): Promise<number[]> {
    return [...(this.#records.get(stream)?.keys() ?? [])].sort((a, b) => a - b);
  }

  async deleteRecord(stream: string, position: number): Promise<void> {
    this.#records.get(stream)?.delete(position);
  }

  async clear(): Promise<void> {
    this.#chunks.clear();
    this.#records.clear();
  }

  /** Every chunk's digest (for tests that damage one). */
  chunkDigests(): string[] {
    return [...this.#chunks.keys()];
  }
}
