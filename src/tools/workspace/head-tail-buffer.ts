/**
 * Collects streamed text in bounded memory, keeping the first and the last characters: the head
 * says what a command set out to do, the tail how it ended (the error, the summary line). A
 * command that prints gigabytes costs at most about twice `maxChars` of memory.
 *
 * @example
 * const output = new HeadTailBuffer(20);
 * output.append("0123456789".repeat(5));
 * output.toString(); // "0123456789\n…[30 characters of output removed]…\n0123456789"
 */
export class HeadTailBuffer {
  readonly #headLimit: number;
  readonly #tailLimit: number;
  #head = "";
  #tail = "";
  #total = 0;

  constructor(readonly maxChars: number) {
    if (!Number.isInteger(maxChars) || maxChars < 2) throw new TypeError("HeadTailBuffer needs maxChars ≥ 2");
    this.#headLimit = Math.ceil(maxChars / 2);
    this.#tailLimit = maxChars - this.#headLimit;
  }

  append(text: string): void {
    this.#total += text.length;
    let rest = text;
    if (this.#head.length < this.#headLimit) {
      const room = this.#headLimit - this.#head.length;
      this.#head += rest.slice(0, room);
      rest = rest.slice(room);
    }
    if (rest === "") return;
    this.#tail += rest;
    // Trimmed only once it doubles, so appending many small chunks stays linear.
    if (this.#tail.length > 2 * this.#tailLimit) this.#tail = this.#tail.slice(-this.#tailLimit);
  }

  /** Every character appended so far, kept or not. */
  get totalChars(): number {
    return this.#total;
  }

  get truncated(): boolean {
    return this.#total > this.maxChars;
  }

  /** The text, or its head and tail around a marker that says how much was removed. */
  toString(): string {
    if (!this.truncated) return this.#head + this.#tail;
    const tail = this.#tailLimit === 0 ? "" : this.#tail.slice(-this.#tailLimit);
    const removed = this.#total - this.#head.length - tail.length;
    return `${this.#head}\n…[${removed} characters of output removed]…\n${tail}`;
  }
}
