import type { EventLog, RecordedEvent } from "./event-log.js";

/** Options of {@link followStream}. */
export interface FollowStreamOptions {
  /**
   * The stream position to start after (exclusive): the first event yielded is the one at
   * `after + 1`. Default 0: the whole stream. A UI that already shows events up to position `n`
   * passes `n` and misses nothing.
   */
  after?: number;
  /** Ends the iteration (it finishes, it does not throw) and unsubscribes. */
  signal?: AbortSignal;
  /** Events read per `readStream` call while catching up. Default 1 000. */
  pageSize?: number;
}

/**
 * Follows one stream of a log: first the events already recorded after `after`, then each event
 * as it is appended, in stream order, with no gap and no duplicate — even when an append lands
 * while the recorded part is still being read. It ends when `signal` aborts or the iterator is
 * returned (`break` in `for await`), and then unsubscribes from the log.
 *
 * Why this is written by hand: it is a small merge of two sources of one log (a paged
 * `readStream` and the `subscribe` tail), keyed by stream position; no library knows the log's
 * positions. The listener is registered *before* the first read, so every event is in the read,
 * in the live buffer, or in both (then the position drops the second copy).
 *
 * When the log closes, the iteration ends after the events it was handed; when the log stops after
 * a failed write, the next `next()` rejects with that error (`LogWriteError`) after them.
 *
 * @example
 * const controller = new AbortController();
 * for await (const event of followStream(log, "session-s1", { after: 10, signal: controller.signal })) {
 *   console.log(event.meta.streamPosition, event.type);
 * }
 */
export function followStream(log: EventLog, stream: string, options: FollowStreamOptions = {}): AsyncIterableIterator<RecordedEvent> {
  const after = options.after ?? 0;
  if (!Number.isSafeInteger(after) || after < 0) throw new TypeError(`after must be a stream position (an integer ≥ 0), got ${String(options.after)}`);
  const pageSize = options.pageSize ?? 1_000;
  if (!Number.isSafeInteger(pageSize) || pageSize < 1) throw new TypeError(`pageSize must be a positive integer, got ${String(options.pageSize)}`);
  return new StreamFollower(log, stream, after, pageSize, options.signal);
}

class StreamFollower implements AsyncIterableIterator<RecordedEvent> {
  /** Live events told by the log, not yet merged. */
  #live: RecordedEvent[] = [];
  /** Events merged in order, waiting to be yielded. */
  #ready: RecordedEvent[] = [];
  /** The stream position of the last event queued in `#ready` (or yielded). */
  #last: number;
  /** Whether the recorded part has been read: from now on, live events suffice (unless a gap shows). */
  #caughtUp = false;
  #done = false;
  /** The log ended the live tail: `undefined` while it runs, `{ error }` once it stopped. */
  #ended: { error: unknown } | undefined;
  #wake: (() => void) | undefined;
  readonly #unsubscribe: () => void;
  readonly #onAbort = () => this.#finish();
  /** `next()` calls run one after another, so two callers never read the same page. */
  #turn: Promise<unknown> = Promise.resolve();

  constructor(
    private readonly log: EventLog,
    private readonly stream: string,
    after: number,
    private readonly pageSize: number,
    private readonly signal: AbortSignal | undefined,
  ) {
    this.#last = after;
    this.#unsubscribe = log.subscribe(
      (event) => {
        if (this.#done) return;
        this.#live.push(event);
        this.#wakeUp();
      },
      {
        stream,
        onEnd: (error) => {
          this.#ended = { error };
          this.#wakeUp();
        },
      },
    );
    if (signal?.aborted) this.#finish();
    else signal?.addEventListener("abort", this.#onAbort, { once: true });
  }

  [Symbol.asyncIterator](): AsyncIterableIterator<RecordedEvent> {
    return this;
  }

  next(): Promise<IteratorResult<RecordedEvent>> {
    const result = this.#turn.then(() => this.#next());
    this.#turn = result.catch(() => undefined);
    return result;
  }

  async return(): Promise<IteratorResult<RecordedEvent>> {
    this.#finish();
    return { done: true, value: undefined };
  }

  async #next(): Promise<IteratorResult<RecordedEvent>> {
    try {
      for (;;) {
        if (this.#done) return { done: true, value: undefined };
        const ready = this.#ready.shift();
        if (ready !== undefined) return { done: false, value: ready };
        if (!this.#caughtUp) {
          await this.#readPage();
          continue;
        }
        this.#mergeLive();
        if (this.#ready.length > 0 || !this.#caughtUp) continue;
        if (this.#ended !== undefined) {
          // Everything the log was handed is yielded; nothing more will come.
          const { error } = this.#ended;
          this.#finish();
          if (error !== undefined) throw error;
          return { done: true, value: undefined };
        }
        await new Promise<void>((resolve) => {
          this.#wake = resolve;
        });
      }
    } catch (error) {
      this.#finish();
      throw error;
    }
  }

  /** Reads the next page of recorded events; a short page means the recorded part is read. */
  async #readPage(): Promise<void> {
    const page = await this.log.readStream(this.stream, { from: this.#last + 1, maxCount: this.pageSize });
    for (const event of page) this.#queue(event);
    if (page.length < this.pageSize) this.#caughtUp = true;
  }

  /**
   * Moves the live events that follow the last one queued into `#ready`, dropping those already
   * read. A live event further ahead means events in between were never seen (they were appended
   * between a short page and the listener's first call, or a listener was skipped): read again.
   */
  #mergeLive(): void {
    const live = this.#live;
    this.#live = [];
    for (const [index, event] of live.entries()) {
      const position = event.meta.streamPosition;
      if (position <= this.#last) continue;
      if (position > this.#last + 1) {
        this.#caughtUp = false;
        // Keep the rest: the read will cover some of it, and the position drops what it covers.
        this.#live = [...live.slice(index), ...this.#live];
        return;
      }
      this.#queue(event);
    }
  }

  #queue(event: RecordedEvent): void {
    this.#ready.push(event);
    this.#last = event.meta.streamPosition;
  }

  #wakeUp(): void {
    const wake = this.#wake;
    this.#wake = undefined;
    wake?.();
  }

  #finish(): void {
    if (this.#done) return;
    this.#done = true;
    this.#unsubscribe();
    this.signal?.removeEventListener("abort", this.#onAbort);
    this.#live = [];
    this.#ready = [];
    this.#wakeUp();
  }
}
