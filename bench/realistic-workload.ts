/**
 * The script of the realistic-calls scenario (issue 35, docs/performance.md#the-scenarios): N model
 * answers of 4 tool calls each — reads and writes mixed, arguments of about 80 characters of JSON —
 * then a final answer, and every tool output precomputed, so that a tool costs nothing when it runs
 * and the time measured is the runtime's own.
 *
 * The outputs are a seeded, deterministic mix of what real tools return — source code, log lines,
 * JSON — from a few hundred to a few thousand characters, with identifiers and numbers that vary,
 * so that the secret scanner, the token counter and the hash see text of real variety (one repeated
 * character compresses, scans and tokenizes unlike anything a tool returns).
 */

/** One tool call of the script: which tool, its arguments as the model sends them, and what it returns. */
export interface RealisticCall {
  id: string;
  tool: RealisticToolName;
  /** JSON text, about 80 characters. */
  arguments: string;
  output: string;
}

export type RealisticToolName = "read_file" | "search_code" | "write_file";

/** The tools' names, descriptions and whether they only read (the write is a workspace write). */
export const realisticTools: readonly { name: RealisticToolName; description: string; readOnly: boolean }[] = [
  { name: "read_file", description: "Read a range of lines of a file in the workspace", readOnly: true },
  { name: "search_code", description: "Search the workspace for a pattern; returns matching lines", readOnly: true },
  { name: "write_file", description: "Write a file in the workspace; returns the diff it made", readOnly: false },
];

export const realisticCallsPerTurn = 4;

/**
 * mulberry32: a 32-bit seeded generator, so that every run (and the AI SDK's reference) gets the same
 * script. Written here because it is four lines and a library would be a dependency for a bench.
 */
function seededRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let mixed = Math.imul(state ^ (state >>> 15), 1 | state);
    mixed = (mixed + Math.imul(mixed ^ (mixed >>> 7), 61 | mixed)) ^ mixed;
    return ((mixed ^ (mixed >>> 14)) >>> 0) / 4294967296;
  };
}

// No word a secret rule reads as a credential ("token", "key", "secret"): the scenario measures text
// that is scanned and found clean, as most tool output is; a redaction would change what is logged.
const words = ["session", "event", "stream", "history", "budget", "offset", "policy", "gate", "plan", "call", "result", "writer", "reader", "snapshot", "fold", "append", "request", "message", "turn", "approval", "lease", "chain", "hash", "record", "cursor", "batch", "buffer", "handler", "config", "schema"];
const types = ["string", "number", "boolean", "SessionState", "RecordedEvent", "ToolCall", "Map<string, number>", "readonly string[]", "Promise<void>", "Uint8Array"];
const levels = ["INFO", "INFO", "INFO", "DEBUG", "WARN", "ERROR"];
const services = ["api", "worker", "scheduler", "gateway", "indexer", "auth"];

/** A seeded text generator: each method returns a piece of realistic text. */
class TextSource {
  readonly #random: () => number;

  constructor(seed: number) {
    this.#random = seededRandom(seed);
  }

  integer(below: number): number {
    return Math.floor(this.#random() * below);
  }

  pick<T>(items: readonly T[]): T {
    return items[this.integer(items.length)] as T;
  }

  identifier(): string {
    const first = this.pick(words);
    const second = this.pick(words);
    return `${first}${second[0]!.toUpperCase()}${second.slice(1)}${this.integer(4) === 0 ? this.integer(100) : ""}`;
  }

  path(): string {
    return `src/${this.pick(words)}/${this.pick(words)}-${this.pick(words)}${this.integer(3) === 0 ? `-${this.integer(40)}` : ""}.ts`;
  }

  /** A line of TypeScript. */
  codeLine(indent: number): string {
    const pad = "  ".repeat(indent);
    switch (this.integer(8)) {
      case 0:
        return `${pad}const ${this.identifier()} = ${this.identifier()}.${this.pick(words)}(${this.identifier()}, ${this.integer(1000)});`;
      case 1:
        return `${pad}if (${this.identifier()} === undefined || ${this.identifier()}.length > ${this.integer(256)}) return ${this.pick(["undefined", "false", "[]", "null"])};`;
      case 2:
        return `${pad}export function ${this.identifier()}(${this.identifier()}: ${this.pick(types)}, ${this.identifier()}: ${this.pick(types)}): ${this.pick(types)} {`;
      case 3:
        return `${pad}// ${this.pick(words)} the ${this.pick(words)} before the ${this.pick(words)} is ${this.pick(["appended", "folded", "read", "sent", "checked"])}, so a ${this.pick(words)} never sees it twice.`;
      case 4:
        return `${pad}for (const ${this.pick(words)} of ${this.identifier()}) ${this.identifier()}.push(${this.pick(words)}.${this.pick(words)});`;
      case 5:
        return `${pad}throw new TypeError(\`${this.pick(words)} ${this.integer(10_000)} is not a ${this.pick(words)}: \${${this.identifier()}}\`);`;
      case 6:
        return `${pad}await this.#${this.identifier()}.${this.pick(words)}({ ${this.pick(words)}: ${this.integer(100)}, ${this.pick(words)}: "${this.pick(words)}-${this.integer(1000)}" });`;
      default:
        return `${pad}}`;
    }
  }

  /** A log line with a timestamp, a level, a service and a few fields. */
  logLine(): string {
    const second = this.integer(86_400);
    const time = `2026-12-0${1 + this.integer(6)}T${String(Math.floor(second / 3600)).padStart(2, "0")}:${String(Math.floor(second / 60) % 60).padStart(2, "0")}:${String(second % 60).padStart(2, "0")}.${String(this.integer(1000)).padStart(3, "0")}Z`;
    return `${time} ${this.pick(levels).padEnd(5)} [${this.pick(services)}] ${this.pick(words)} ${this.pick(["started", "finished", "retried", "failed", "skipped"])} ${this.pick(words)}=${this.integer(100_000)} ${this.pick(words)}="${this.path()}" took=${this.integer(5000)}ms`;
  }

  /** A JSON value of a few fields, nested once. */
  json(): unknown {
    const entry: Record<string, unknown> = {};
    const fields = 3 + this.integer(5);
    for (let index = 0; index < fields; index += 1) {
      const key = this.identifier();
      switch (this.integer(5)) {
        case 0:
          entry[key] = this.integer(1_000_000);
          break;
        case 1:
          entry[key] = this.path();
          break;
        case 2:
          entry[key] = this.integer(2) === 0;
          break;
        case 3:
          entry[key] = [this.pick(words), this.pick(words), this.integer(100)];
          break;
        default:
          entry[key] = `${this.pick(words)} ${this.pick(words)} ${this.pick(words)}`;
      }
    }
    return entry;
  }

  /** A length from a few hundred to a few thousand characters, most of them under 1 500. */
  outputLength(): number {
    return Math.round(300 * Math.exp(this.#random() * Math.log(10)));
  }

  /** Lines from `line` until they reach `length` characters. */
  lines(length: number, line: () => string): string {
    const out: string[] = [];
    let size = 0;
    while (size < length) {
      const next = line();
      out.push(next);
      size += next.length + 1;
    }
    return out.join("\n");
  }
}

/** What one call returns: a file's lines, search matches, a JSON document or a log, or a diff. */
function outputOf(source: TextSource, tool: RealisticToolName, path: string): string {
  const length = source.outputLength();
  if (tool === "write_file") {
    let line = 1 + source.integer(400);
    return `wrote ${path}\n@@ -${line},6 +${line},9 @@\n${source.lines(length, () => `${source.pick(["+", "-", " "])}${source.codeLine(1 + source.integer(3))}`)}`;
  }
  if (tool === "search_code") {
    return source.lines(length, () => `${source.path()}:${1 + source.integer(900)}: ${source.codeLine(source.integer(3)).trim()}`);
  }
  switch (source.integer(3)) {
    case 0:
      return source.lines(length, () => source.codeLine(source.integer(4)));
    case 1:
      return source.lines(length, () => source.logLine());
    default: {
      const entries: unknown[] = [];
      let size = 0;
      while (size < length) {
        const entry = source.json();
        entries.push(entry);
        size += JSON.stringify(entry).length;
      }
      return JSON.stringify({ items: entries, total: entries.length }, null, 2);
    }
  }
}

/** Arguments of about 80 characters for a call of `tool` on `path`. */
function argumentsOf(source: TextSource, tool: RealisticToolName, path: string): string {
  if (tool === "read_file") return JSON.stringify({ path, offset: source.integer(800), limit: 40 + source.integer(160), encoding: "utf8" });
  if (tool === "search_code") return JSON.stringify({ pattern: `${source.identifier()}\\(`, glob: `src/${source.pick(words)}/**/*.ts`, maxResults: 50 });
  return JSON.stringify({ path, content: `export const ${source.identifier()} = ${source.integer(1000)} + ${source.integer(100)};\n` });
}

/**
 * The script: `turns` answers of 4 calls (in each turn two reads, a search and a write, in a seeded
 * order), every call with its arguments and its precomputed output. The same seed gives the same
 * script, byte for byte.
 */
export function realisticScript(turns: number, seed = 35): RealisticCall[][] {
  const source = new TextSource(seed);
  const script: RealisticCall[][] = [];
  for (let turn = 0; turn < turns; turn += 1) {
    const kinds: RealisticToolName[] = ["read_file", "read_file", "search_code", "write_file"];
    // A seeded shuffle, so reads and writes come in varying order.
    for (let index = kinds.length - 1; index > 0; index -= 1) {
      const other = source.integer(index + 1);
      [kinds[index], kinds[other]] = [kinds[other]!, kinds[index]!];
    }
    script.push(
      kinds.map((tool, index) => {
        const path = source.path();
        return { id: `call_${turn}_${index}`, tool, arguments: argumentsOf(source, tool, path), output: outputOf(source, tool, path) };
      }),
    );
  }
  return script;
}

/** The user's message and the model's final answer. */
export const realisticPrompt = "Find where the session budget is checked, fix the off-by-one in it, and update the tests.";
export const realisticAnswer = "The budget check now counts the request it is about to send; the tests cover the boundary.";
