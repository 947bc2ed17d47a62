import type { Clock, EventLog } from "../event-log.js";
import { LogCorruptedError } from "../../errors/log-corrupted-error.js";
import { ExpectedVersionConflictError } from "../../errors/expected-version-conflict-error.js";
import { computeEventHash, type UnhashedEvent } from "../hash-chain.js";
import { announcedEventOf, asSeal, type AnnouncedEvent, currentSealFormat, isSealStream, sealEventType, sealStreamOf, signSeal, type Seal } from "./seal-record.js";
import type { SealKey } from "./seal-key.js";
import type { SealWitnessStore } from "./seal-witness.js";
import type { SealedLogRecord } from "./sealed-log-record.js";

/** How a log is sealed: the key that signs, and the witness that keeps the latest seals outside the log. */
export interface SealOptions {
  /** Must hold a private key. */
  key: SealKey;
  /**
   * Without one, a removed tail, stream or log that took its seals along goes unnoticed. The file
   * beside the key (`SealWitness`), a directory (`DirectoryWitness`) or an HTTP service
   * (`HttpWitness`); see `witnessAt` and docs/security.md, "Where the witness is kept".
   */
  witness?: SealWitnessStore;
  /** The seal key's record of this log (`SealedLogRecord`), written once its first seal is durable. */
  record?: SealedLogRecord;
}

interface SealedHead {
  version: number;
  hash: string;
  signature: string;
  /** The version of the seal stream. */
  sealCount: number;
}

/**
 * Appends signed seals ({@link Seal}) for the streams of one log: `seal(stream)` at each turn end,
 * `sealTouched()` at close for every stream appended to since its last seal. Each seal is appended
 * durably to the stream's seal stream, then recorded by the witness. A stream already sealed at
 * its version is not sealed again, so sealing is idempotent.
 *
 * `announce(stream, version, events)` comes before an append of always-sealed events (an answer, a
 * turn's end) or of a stream's first events: a seal of the stream as it is that lists what is
 * about to follow. It is appended without its own fsync — the log is written in order, so the
 * events' durable append makes it durable first — and it is not witnessed (the seal after the
 * events is). After a crash, what the log holds is then never an always-sealed event without the
 * seal that announced it (docs/log.md, "Always-sealed events").
 *
 * @example
 * const sealer = new StreamSealer(log, { key, witness });
 * await sealer.seal("session-s1");
 * await sealer.sealTouched();
 * sealer.dispose();
 */
export class StreamSealer {
  readonly #touched = new Set<string>();
  readonly #heads = new Map<string, SealedHead>();
  readonly #unsubscribe: () => void;
  #queue: Promise<unknown> = Promise.resolve();
  #witnessOpened = false;
  #recorded = false;

  constructor(
    private readonly log: EventLog,
    private readonly options: SealOptions & { clock?: Clock },
  ) {
    if (options?.key?.privateKey === undefined) throw new TypeError("sealing needs a seal key with its private key");
    this.#unsubscribe = log.subscribe((event) => {
      if (!isSealStream(event.meta.stream)) this.#touched.add(event.meta.stream);
    });
  }

  /** Seals `stream` at its current version; resolves with the seal, or `undefined` when there was nothing new. */
  seal(stream: string): Promise<Seal | undefined> {
    return this.#exclusive(() => this.#seal(stream));
  }

  /**
   * Seals `stream` as it stands at `version`, announcing `events` as the ones about to be appended
   * after it; does nothing when the stream is not at `version` (that append will lose its race).
   */
  announce(stream: string, version: number, events: readonly { type: string; data: unknown }[]): Promise<void> {
    return this.#exclusive(async () => {
      if ((await this.log.streamVersion(stream)) !== version) return;
      await this.#sign(stream, events.map((event) => announcedEventOf(event)));
    });
  }

  /** Seals every stream appended to through this log since it was last sealed. */
  sealTouched(): Promise<void> {
    return this.#exclusive(async () => {
      for (const stream of [...this.#touched].sort()) await this.#seal(stream);
    });
  }

  /**
   * Forgets the last seal it remembers of `stream` (a runtime released the session from memory):
   * the next seal of it reads that seal back from the log, as a new sealer would.
   */
  forget(stream: string): void {
    this.#heads.delete(stream);
  }

  /** Stops following the log (call before closing it). */
  dispose(): void {
    this.#unsubscribe();
  }

  async #seal(stream: string): Promise<Seal | undefined> {
    if (isSealStream(stream)) throw new TypeError(`${stream} is a seal stream; seals are not sealed`);
    const version = await this.log.streamVersion(stream);
    const last = await this.#lastSeal(stream);
    if (version === 0 || version === (last?.version ?? 0)) {
      this.#touched.delete(stream);
      return undefined;
    }
    return this.#sign(stream);
  }

  /**
   * Signs and appends a seal of `stream` at its version: durably and witnessed, or — with
   * `announced` — as an announcement of the events about to follow (see the class).
   */
  async #sign(stream: string, announced?: readonly AnnouncedEvent[]): Promise<Seal> {
    try {
      return await this.#signOnce(stream, announced);
    } catch (error) {
      if (!ExpectedVersionConflictError.isInstance(error) || error.stream !== sealStreamOf(stream)) throw error;
      // Another process on the same log (an approver, another host) sealed the stream since this
      // sealer last did: its remembered head is stale. Sign again from the log's last seal.
      this.#heads.delete(stream);
      return this.#signOnce(stream, announced);
    }
  }

  async #signOnce(stream: string, announced?: readonly AnnouncedEvent[]): Promise<Seal> {
    if (isSealStream(stream)) throw new TypeError(`${stream} is a seal stream; seals are not sealed`);
    const version = await this.log.streamVersion(stream);
    const last = await this.#lastSeal(stream);
    if (last !== undefined && version < last.version) {
      throw new LogCorruptedError(`refusing to seal stream ${stream}: it holds ${version} events, fewer than its last seal covers (${last.version}) — run verify()`);
    }
    const from = (last?.version ?? 0) + 1;
    const events = version >= from ? await this.log.readStream(stream, { from, to: version, maxCount: version - from + 1 }) : [];
    // A seal vouches for what it lists: it must never launder events that do not chain on from the last one.
    let prevHash = last?.hash ?? "";
    for (const [offset, event] of events.entries()) {
      if (event.meta.streamPosition !== from + offset || event.meta.prevHash !== prevHash || computeEventHash(prevHash, event as UnhashedEvent) !== event.meta.hash) {
        throw new LogCorruptedError(`refusing to seal stream ${stream}: event ${from + offset} does not chain on from its last seal — run verify()`);
      }
      prevHash = event.meta.hash;
    }
    if (events.length !== Math.max(0, version - from + 1)) throw new LogCorruptedError(`refusing to seal stream ${stream}: events ${from}..${version} are not all readable — run verify()`);
    const { key, witness, clock, record } = this.options;
    if (witness !== undefined && !this.#witnessOpened) {
      // Before any seal names the witness, so a witness that is missing later was deleted.
      await witness.open?.();
      this.#witnessOpened = true;
    }
    const seal = signSeal(
      {
        stream,
        version,
        hash: prevHash,
        from,
        hashes: events.map((event) => event.meta.hash),
        previousSignature: last?.signature ?? "",
        sealedAt: new Date((clock ?? Date).now()).toISOString(),
        keyId: key.keyId,
        format: currentSealFormat,
        ...(announced !== undefined && announced.length > 0 ? { next: [...announced] } : {}),
        ...(witness !== undefined ? { witness: witness.file } : {}),
      },
      key,
    );
    const sealCount = last?.sealCount ?? 0;
    await this.log.appendToStream(sealStreamOf(stream), [{ type: sealEventType, data: seal }], { expectedStreamVersion: sealCount, ...(announced !== undefined ? { durable: false } : {}) });
    this.#heads.set(stream, { version, hash: seal.hash, signature: seal.signature, sealCount: sealCount + 1 });
    if (announced !== undefined) return seal;
    // After the seal is durable in the log: a crash in between leaves the witness behind the log, never ahead.
    await witness?.record(seal);
    if (record !== undefined && !this.#recorded) {
      await record.write(witness?.file ?? null, seal.sealedAt);
      this.#recorded = true;
    }
    this.#touched.delete(stream);
    return seal;
  }

  async #lastSeal(stream: string): Promise<SealedHead | undefined> {
    const cached = this.#heads.get(stream);
    if (cached !== undefined) return cached;
    const [event] = await this.log.readStream(sealStreamOf(stream), { direction: "backwards", maxCount: 1 });
    if (event === undefined) return undefined;
    const seal = asSeal(event.data);
    if (seal === undefined) throw new LogCorruptedError(`refusing to seal stream ${stream}: its last seal is malformed — run verify()`);
    const head = { version: seal.version, hash: seal.hash, signature: seal.signature, sealCount: event.meta.streamPosition };
    this.#heads.set(stream, head);
    return head;
  }

  #exclusive<T>(work: () => Promise<T>): Promise<T> {
    const result = this.#queue.then(work);
    this.#queue = result.catch(() => undefined);
    return result;
  }
}
