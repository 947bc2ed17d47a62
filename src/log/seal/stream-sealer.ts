import type { Clock, EventLog } from "../event-log.js";
import { LogCorruptedError } from "../../errors/log-corrupted-error.js";
import { computeEventHash, type UnhashedEvent } from "../hash-chain.js";
import { asSeal, isSealStream, sealEventType, sealStreamOf, signSeal, type Seal } from "./seal-record.js";
import type { SealKey } from "./seal-key.js";
import type { SealWitness } from "./seal-witness.js";

/** How a log is sealed: the key that signs, and the witness that keeps the latest seals outside the log. */
export interface SealOptions {
  /** Must hold a private key. */
  key: SealKey;
  /** Without one, a removed tail, stream or log that took its seals along goes unnoticed. */
  witness?: SealWitness;
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

  /** Seals every stream appended to through this log since it was last sealed. */
  sealTouched(): Promise<void> {
    return this.#exclusive(async () => {
      for (const stream of [...this.#touched].sort()) await this.#seal(stream);
    });
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
    if (last !== undefined && version < last.version) {
      throw new LogCorruptedError(`refusing to seal stream ${stream}: it holds ${version} events, fewer than its last seal covers (${last.version}) — run verify()`);
    }
    const from = (last?.version ?? 0) + 1;
    const events = await this.log.readStream(stream, { from, to: version, maxCount: version - from + 1 });
    // A seal vouches for what it lists: it must never launder events that do not chain on from the last one.
    let prevHash = last?.hash ?? "";
    for (const [offset, event] of events.entries()) {
      if (event.meta.streamPosition !== from + offset || event.meta.prevHash !== prevHash || computeEventHash(prevHash, event as UnhashedEvent) !== event.meta.hash) {
        throw new LogCorruptedError(`refusing to seal stream ${stream}: event ${from + offset} does not chain on from its last seal — run verify()`);
      }
      prevHash = event.meta.hash;
    }
    if (events.length !== version - from + 1) throw new LogCorruptedError(`refusing to seal stream ${stream}: events ${from}..${version} are not all readable — run verify()`);
    const { key, witness, clock } = this.options;
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
      },
      key,
    );
    const sealCount = last?.sealCount ?? 0;
    await this.log.appendToStream(sealStreamOf(stream), [{ type: sealEventType, data: seal }], { expectedStreamVersion: sealCount });
    // After the seal is durable in the log: a crash in between leaves the witness behind the log, never ahead.
    await witness?.record(seal);
    this.#heads.set(stream, { version, hash: seal.hash, signature: seal.signature, sealCount: sealCount + 1 });
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
