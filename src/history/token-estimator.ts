import { createRequire } from "node:module";
import type * as O200kEncoding from "gpt-tokenizer/encoding/o200k_base";
import type * as EncodingConstants from "gpt-tokenizer/encodingParams/constants";

/**
 * Counts the tokens of a text. Pluggable so a host can use its model's own tokenizer; it must be
 * pure (the same text always gives the same count), because history selection is a replayable
 * decision.
 *
 * @example
 * const wordCount: TokenEstimator = { count: (text) => text.split(/\s+/).filter(Boolean).length };
 */
export interface TokenEstimator {
  count(text: string): number;
}

/** Special-token strings (`<|endoftext|>`) in content are ordinary text, never a reason to throw. */
const asPlainText = { disallowedSpecial: new Set<string>() };

/**
 * gpt-tokenizer's `o200k_base` encoder and its pre-tokenizer pattern, loaded on the first count
 * rather than when turnlog is imported: building the encoder's tables costs a few hundred
 * milliseconds, which a host that never budgets a history (and every CLI command that counts
 * nothing) would otherwise pay at start-up (docs/performance.md, "Start-up"). Counting is
 * synchronous, so the package's CommonJS build is loaded with `require` (its `exports` map offers
 * one for every subpath); it is the same code as the ES build, so the counts are the same.
 */
interface Encoder {
  countTokens: typeof O200kEncoding.countTokens;
  splitPattern: RegExp;
}

let encoder: Encoder | undefined;

function loadEncoder(): Encoder {
  if (encoder === undefined) {
    const requireHere = createRequire(import.meta.url);
    const { countTokens } = requireHere("gpt-tokenizer/encoding/o200k_base") as typeof O200kEncoding;
    const { O200K_TOKEN_SPLIT_REGEX } = requireHere("gpt-tokenizer/encodingParams/constants") as typeof EncodingConstants;
    encoder = { countTokens, splitPattern: O200K_TOKEN_SPLIT_REGEX };
  }
  return encoder;
}

/** The encoder's count of `text`, with special-token strings counted as ordinary text. */
function countTokens(text: string): number {
  return loadEncoder().countTokens(text, asPlainText);
}

/** Counts are cached per text: the same history is counted again on every request. */
const cacheLimit = 4096;

/**
 * The longest piece, in UTF-16 code units, handed whole to the BPE encoder. Byte-pair merging is
 * quadratic in a piece's length (gpt-tokenizer scans every pair of the piece for each merge), and
 * the pre-tokenizer puts a run of one kind of character — 200 KB of `a`, of spaces, of `!` — in one
 * piece: counting such a text took minutes. Ordinary text has no piece this long (a word, a
 * number, a run of punctuation or spaces), so its count is exactly the encoder's.
 */
export const maxPieceLength = 256;

/**
 * Counts `text` with `countPiece` (the encoder's count) so that no piece of the pre-tokenizer
 * longer than `maxPieceLength` reaches it, and every character is handed over once: linear in the
 * text, whatever it holds (docs/history.md, "Counting tokens"). A text whose pieces are all short
 * is counted whole, exactly as the encoder counts it. Otherwise the text is counted in parts: the
 * runs between long pieces, as they are (the pre-tokenizer splits a text the same from any piece
 * boundary), and each long piece in chunks of at most `maxPieceLength`, never splitting a
 * surrogate pair — an estimate close to the encoder's, which merges across the chunk boundaries
 * too.
 *
 * @example
 * boundedCount("a".repeat(1_000_000), (text) => countTokens(text)); // counted in 256-character chunks
 */
export function boundedCount(text: string, countPiece: (text: string) => number): number {
  if (text.length <= maxPieceLength) return countPiece(text);
  const { splitPattern } = loadEncoder();
  const pieces = new RegExp(splitPattern.source, splitPattern.flags);
  let count = 0;
  let counted = 0;
  for (let match = pieces.exec(text); match !== null; match = pieces.exec(text)) {
    const piece = match[0];
    if (piece.length === 0) {
      // A zero-length match never comes from this pattern; stepping on keeps the scan finite.
      pieces.lastIndex += 1;
      continue;
    }
    if (piece.length <= maxPieceLength) continue;
    if (match.index > counted) count += countPiece(text.slice(counted, match.index));
    for (let start = 0; start < piece.length; ) {
      let end = Math.min(piece.length, start + maxPieceLength);
      // Never cut a surrogate pair in half.
      if (end < piece.length && /[\uD800-\uDBFF]/.test(piece.charAt(end - 1))) end -= 1;
      count += countPiece(piece.slice(start, end));
      start = end;
    }
    counted = match.index + piece.length;
  }
  if (counted === 0) return countPiece(text);
  if (counted < text.length) count += countPiece(text.slice(counted));
  return count;
}

/**
 * Counts of the pre-tokenizer's pieces, kept across texts: a tool output is mostly pieces every
 * other output has too (words, identifiers' parts, punctuation, indentation), so most pieces of a
 * new text are counted already. Keys are copies (a piece cut from a text by a regular expression
 * can hold the whole text in memory), at most `cachedPieceLength` long; bounded and cleared when
 * full, since the texts come from tools and models.
 */
const pieceCounts = new Map<string, number>();
const pieceCacheLimit = 16_384;
const cachedPieceLength = 64;

/**
 * A piece's count is the encoder's count of the piece alone only when the pre-tokenizer, given the
 * piece alone, makes the whole of it one piece (its lookaheads read what follows a piece); the
 * sticky form checks exactly that.
 */
let alonePattern: RegExp | undefined;
let piecesPattern: RegExp | undefined;

/** The encoder's count of one piece of a text, or undefined when the piece alone would be split otherwise. */
function pieceCount(piece: string): number | undefined {
  const cached = pieceCounts.get(piece);
  if (cached !== undefined) return cached;
  const { splitPattern } = loadEncoder();
  alonePattern ??= new RegExp(splitPattern.source, `${splitPattern.flags.replace("g", "")}y`);
  alonePattern.lastIndex = 0;
  if (alonePattern.exec(piece)?.[0].length !== piece.length) return undefined;
  const counted = countTokens(piece);
  if (piece.length <= cachedPieceLength) {
    if (pieceCounts.size >= pieceCacheLimit) pieceCounts.clear();
    pieceCounts.set(Buffer.from(piece, "utf16le").toString("utf16le"), counted);
  }
  return counted;
}

/**
 * `boundedCount(text, countTokens)`, piece by piece: the encoder counts a text as the sum of its
 * pieces' counts (the byte-pair merge never crosses a piece; special-token strings are ordinary
 * text here), so a text whose pieces are all at most `maxPieceLength` long is the sum of
 * `pieceCount` over its pieces, each found by one pass of the pre-tokenizer, and most read from
 * the cache: 1.6× faster on realistic tool outputs than `boundedCount`, which splits the text once
 * to look for long pieces and the encoder once more to count it (docs/design.md#14-speed-ups-and-their-references).
 * A text with a long piece, or a piece the cache cannot answer for, is counted by `boundedCount`
 * itself, the reference; property-tests/token-counting.test.ts checks that the two agree.
 *
 * @example
 * countByPieces("hello world"); // 2, as countTokens counts it
 */
export function countByPieces(text: string): number {
  const { splitPattern } = loadEncoder();
  piecesPattern ??= new RegExp(splitPattern.source, splitPattern.flags);
  const pieces = piecesPattern;
  pieces.lastIndex = 0;
  let count = 0;
  for (let match = pieces.exec(text); match !== null; match = pieces.exec(text)) {
    const piece = match[0];
    const counted = piece.length === 0 || piece.length > maxPieceLength ? undefined : pieceCount(piece);
    if (counted === undefined) return boundedCount(text, countTokens);
    count += counted;
  }
  return count;
}

/**
 * The decisions version from which token counts split pieces longer than `maxPieceLength`
 * (`boundedCount`). Counts feed recorded decisions (history selection, the summary's cut), so a
 * session recorded under an older version keeps counting each text whole with the encoder, exactly
 * as it was recorded (docs/history.md, "Counting tokens"; docs/replay.md, "Decision versions").
 */
export const boundedCountingDecisionsVersion = 6;

/** An estimator over `count`, with its own cache: a cache keyed by text holds one kind of count only. */
function cachedEstimator(count: (text: string) => number): TokenEstimator {
  const cache = new Map<string, number>();
  return {
    count(text: string): number {
      if (text === "") return 0;
      const cached = cache.get(text);
      if (cached !== undefined) return cached;
      const counted = count(text);
      if (cache.size >= cacheLimit) cache.delete(cache.keys().next().value as string);
      cache.set(text, counted);
      return counted;
    },
  };
}

/**
 * The default estimator: the `o200k_base` encoding (gpt-tokenizer), exact for current OpenAI
 * models and a close proxy for others, counted in linear time (`boundedCount`, computed piece by
 * piece with a cache of the pieces' counts: `countByPieces`). Characters divided
 * by four is not used because it is off by a factor of two or more exactly where budgets matter —
 * JSON, code, non-Latin text and long IDs — so a history chosen by it would overflow the context
 * window or waste it. Sessions of decisions version 6 on count with it.
 *
 * @example
 * defaultTokenEstimator.count("hello world"); // 2
 */
export const defaultTokenEstimator: TokenEstimator = cachedEstimator(countByPieces);

/**
 * The estimator of decisions versions 1 to 5: the encoder's count of the whole text, whatever it
 * holds — quadratic in a long piece (minutes for 800 KB of one character), but what those sessions
 * recorded, so what they replay against.
 *
 * @example
 * wholeTextTokenEstimator.count("=".repeat(300)); // 5, where defaultTokenEstimator counts 6
 */
export const wholeTextTokenEstimator: TokenEstimator = cachedEstimator(countTokens);

/**
 * The built-in estimator a session of `decisionsVersion` counts with: `wholeTextTokenEstimator`
 * before `boundedCountingDecisionsVersion`, `defaultTokenEstimator` from it on.
 *
 * @example
 * tokenEstimatorFor(5) === wholeTextTokenEstimator; // true
 */
export function tokenEstimatorFor(decisionsVersion: number): TokenEstimator {
  return decisionsVersion >= boundedCountingDecisionsVersion ? defaultTokenEstimator : wholeTextTokenEstimator;
}

/**
 * Tokens a chat format adds around every message (role and separators): OpenAI documents 3–4 per
 * message for its chat models; 4 keeps the estimate on the safe side.
 */
export const messageOverheadTokens = 4;

/** Tokens added per structured part of a message: a tool call, a content block, a tool result. */
export const partOverheadTokens = 3;

/** Keys whose values are structure, paid for by the overheads above, not text the model reads. */
const structuralKeys = new Set(["role", "type"]);

/**
 * Estimates the tokens of one serialized provider message (either format): the text of every
 * string value in it (contents, tool names, arguments, IDs, results; a tool_use `input` object
 * counts as its JSON text), plus `messageOverheadTokens` for the message and `partOverheadTokens`
 * for each tool call or content block in it. An estimate for budgeting, not a billing count.
 *
 * @example
 * estimateMessageTokens({ role: "user", content: "hello world" }, defaultTokenEstimator); // 2 + 4
 */
export function estimateMessageTokens(message: unknown, estimator: TokenEstimator): number {
  const texts: string[] = [];
  let parts = 0;
  const walk = (value: unknown, key: string): void => {
    if (typeof value === "string") {
      if (!structuralKeys.has(key)) texts.push(value);
      return;
    }
    if (typeof value !== "object" || value === null) return;
    if (key === "input") {
      texts.push(JSON.stringify(value));
      return;
    }
    if (Array.isArray(value)) {
      for (const item of value) {
        if (typeof item === "object" && item !== null) parts += 1;
        walk(item, "");
      }
      return;
    }
    for (const [childKey, child] of Object.entries(value)) walk(child, childKey);
  };
  walk(message, "");
  return messageOverheadTokens + parts * partOverheadTokens + estimator.count(texts.join("\n"));
}

/**
 * The longest prefix of `text` (cut at a character, with `…` appended when cut) whose token count
 * is at most `maxTokens`. Binary search over the length: a few counts, whatever the text.
 *
 * @example
 * truncateToTokens("one two three four", 2, defaultTokenEstimator); // "one…"
 */
export function truncateToTokens(text: string, maxTokens: number, estimator: TokenEstimator): string {
  if (maxTokens <= 0) return "";
  if (estimator.count(text) <= maxTokens) return text;
  let low = 0;
  let high = text.length;
  while (low < high) {
    const middle = Math.ceil((low + high) / 2);
    if (estimator.count(`${text.slice(0, middle)}…`) <= maxTokens) low = middle;
    else high = middle - 1;
  }
  // Never cut a surrogate pair in half.
  if (low > 0 && /[\uD800-\uDBFF]/.test(text.charAt(low - 1))) low -= 1;
  return low === 0 ? "" : `${text.slice(0, low)}…`;
}
