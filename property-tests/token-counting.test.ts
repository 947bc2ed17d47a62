import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createRequire } from "node:module";
import type * as BytePairEncoding from "gpt-tokenizer/BytePairEncodingCore";
import { countTokens } from "gpt-tokenizer/encoding/o200k_base";
import { O200K_TOKEN_SPLIT_REGEX } from "gpt-tokenizer/encodingParams/constants";
import { boundedCount, countByPieces, defaultTokenEstimator, maxPieceLength } from "../src/history/token-estimator.js";
import { realisticScript } from "../bench/realistic-workload.js";

// The estimator loads gpt-tokenizer's CommonJS build on its first count (token-estimator.ts), so the
// encoder it merges with is that build's: the byte-pair merge is watched there. The counts it is
// compared with come from the ES build, which is the same code.
const { BytePairEncodingCore } = createRequire(import.meta.url)("gpt-tokenizer/BytePairEncodingCore") as typeof BytePairEncoding;

/*
 * The work of counting is bounded per character without timing anything: byte-pair merging is
 * the only part quadratic in its input (gpt-tokenizer's `bytePairMerge` scans the piece for every
 * merge), so the test records every piece the encoder merges. No piece longer than
 * `maxPieceLength` characters (3 UTF-8 bytes each at most, 4 per surrogate pair) may reach it, and
 * never more bytes in all than the text holds: the merging work is then at most a constant times
 * `maxPieceLength` per character, whatever the text.
 */
const merged: number[] = [];
type Merge = (this: unknown, piece: Uint8Array) => number[];
const prototype = BytePairEncodingCore.prototype as unknown as { bytePairMerge: Merge };
const original = prototype.bytePairMerge;

beforeAll(() => {
  prototype.bytePairMerge = function recorded(this: unknown, piece: Uint8Array) {
    merged.push(piece.length);
    return original.call(this, piece);
  };
});
afterAll(() => {
  prototype.bytePairMerge = original;
});

/** A run of one character, long enough to be a pathological piece or not. */
const run = fc
  .tuple(fc.constantFrom("a", "A", "é", " ", "\n", "\t", "!", "/", "-", "=", "中", "😀", "\u0301", "1", "aA", " a", "!\n", "ab"), fc.integer({ min: 1, max: 1_500 }))
  .map(([unit, count]) => unit.repeat(count));
/** Ordinary text: words, numbers, punctuation, JSON, whatever unicode. */
const ordinary = fc.oneof(fc.string({ unit: "grapheme", maxLength: 60 }), fc.constantFrom("hello world. ", '{"path":"a.txt","content":"x"}', "  indented\n", "naïve café 123 "), fc.string({ maxLength: 40 }));
const text = fc.array(fc.oneof(run, ordinary), { minLength: 1, maxLength: 8 }).map((parts) => parts.join(""));

const utf8 = (value: string) => Buffer.byteLength(value, "utf8");
const longestPiece = (value: string) => Math.max(0, ...[...value.matchAll(O200K_TOKEN_SPLIT_REGEX)].map(([piece]) => piece.length));

describe("counting tokens", () => {
  it("never hands the byte-pair merge a piece longer than maxPieceLength, nor more bytes than the text holds", () => {
    fc.assert(
      fc.property(text, fc.nat(), (value, salt) => {
        // A text counted for the first time (the estimator caches counts per text).
        const fresh = `${value}${salt}`;
        merged.length = 0;
        defaultTokenEstimator.count(fresh);
        expect(Math.max(0, ...merged)).toBeLessThanOrEqual(3 * maxPieceLength);
        expect(merged.reduce((sum, bytes) => sum + bytes, 0)).toBeLessThanOrEqual(utf8(fresh));
      }),
      { numRuns: 300 },
    );
  });

  it("counts every text without a piece longer than maxPieceLength exactly as the encoder does", () => {
    fc.assert(
      fc.property(text, (value) => {
        fc.pre(longestPiece(value) <= maxPieceLength);
        expect(defaultTokenEstimator.count(value)).toBe(countTokens(value, { disallowedSpecial: new Set() }));
      }),
      { numRuns: 300 },
    );
  });

  /*
   * The piece-by-piece count (`countByPieces`, what the default estimator runs) against its
   * reference, `boundedCount` over the encoder: the same count for every text — ordinary, long
   * runs, special-token strings, contractions and whitespace the pre-tokenizer's lookaheads read,
   * lone surrogates, realistic tool outputs — whatever its pieces' cache already holds.
   */
  const encoderCount = (value: string) => countTokens(value, { disallowedSpecial: new Set() });
  const tricky = fc.constantFrom("<|endoftext|>", "<|im_start|>", "'s", "'LL", "don't", "  \n", "\r\n", " \t ", "\n\n  x", "   ", " 1234567", "ǅungla", "İstanbul", "\uD800", "\uDC00x", "a\u0301", "😀😀", "中文字", "\u00a0 ", "{\"a\":1}");
  const realistic = realisticScript(8).flat().map((call) => call.output);
  const mixed = fc.array(fc.oneof(run, ordinary, tricky, fc.constantFrom(...realistic), fc.string({ unit: "binary", maxLength: 30 })), { minLength: 1, maxLength: 10 }).map((parts) => parts.join(""));

  it("counts piece by piece exactly what boundedCount counts with the encoder", () => {
    for (const output of realistic) expect(countByPieces(output)).toBe(boundedCount(output, encoderCount));
    fc.assert(
      fc.property(mixed, (value) => {
        expect(countByPieces(value)).toBe(boundedCount(value, encoderCount));
        // Again, with every piece of it now in the cache.
        expect(countByPieces(value)).toBe(boundedCount(value, encoderCount));
      }),
      { numRuns: 400 },
    );
  });
});
