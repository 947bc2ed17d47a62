import { describe, expect, it } from "vitest";
import { createRequire } from "node:module";
import type * as BytePairEncoding from "gpt-tokenizer/BytePairEncodingCore";
import { countTokens } from "gpt-tokenizer/encoding/o200k_base";
import {
  defaultTokenEstimator,
  estimateMessageTokens,
  maxPieceLength,
  messageOverheadTokens,
  partOverheadTokens,
  tokenEstimatorFor,
  truncateToTokens,
  wholeTextTokenEstimator,
  type TokenEstimator,
} from "../../src/history/token-estimator.js";

// The estimator loads gpt-tokenizer's CommonJS build on its first count (token-estimator.ts), so the
// encoder it merges with is that build's: the byte-pair merge is watched there. The counts it is
// compared with come from the ES build, which is the same code.
const { BytePairEncodingCore } = createRequire(import.meta.url)("gpt-tokenizer/BytePairEncodingCore") as typeof BytePairEncoding;

/** Runs `work` and returns the longest piece (in bytes) gpt-tokenizer's byte-pair merge was handed meanwhile. */
function longestMerge(work: () => void): number {
  const prototype = BytePairEncodingCore.prototype as unknown as { bytePairMerge: (this: unknown, piece: Uint8Array) => number[] };
  const original = prototype.bytePairMerge;
  let longest = 0;
  prototype.bytePairMerge = function recorded(this: unknown, piece: Uint8Array) {
    longest = Math.max(longest, piece.length);
    return original.call(this, piece);
  };
  try {
    work();
  } finally {
    prototype.bytePairMerge = original;
  }
  return longest;
}

const words: TokenEstimator = { count: (text) => text.split(/\s+/).filter(Boolean).length };

describe("defaultTokenEstimator", () => {
  it("counts o200k_base tokens, not characters divided by four", () => {
    expect(defaultTokenEstimator.count("")).toBe(0);
    expect(defaultTokenEstimator.count("hello world")).toBe(2);
    // Digits and JSON punctuation cost far more than chars/4 says.
    const json = JSON.stringify({ ids: Array.from({ length: 20 }, (_, index) => 1_000_003 * index) });
    expect(defaultTokenEstimator.count(json)).toBeGreaterThan(json.length / 4);
  });

  it("reads special-token strings in content as plain text instead of throwing", () => {
    expect(defaultTokenEstimator.count("a <|endoftext|> b")).toBeGreaterThan(3);
  });

  it("counts 200 KB and 800 KB runs of one character in bounded pieces (this took minutes), and ordinary text exactly", () => {
    // A tool call's arguments: one long string of one character, as the 200 KB and 800 KB.
    // The longest piece merged over all of them (the encoder caches a piece it merged once).
    let watched = 0;
    for (const size of [200_000, 800_000]) {
      for (const unit of ["x", " ", "!", "中"]) {
        let count = 0;
        const longest = longestMerge(() => (count = defaultTokenEstimator.count(JSON.stringify({ content: unit.repeat(size) }))));
        expect(longest).toBeLessThanOrEqual(3 * maxPieceLength);
        watched = Math.max(watched, longest);
        expect(count).toBeGreaterThan(size / 256);
      }
    }
    // Pieces reached the merge watched: it is the encoder the estimator counts with.
    expect(watched).toBe(3 * maxPieceLength);
    expect(defaultTokenEstimator.count("x".repeat(800_000))).toBe(100_000);
    // Text whose pre-tokenizer pieces are all short keeps the encoder's exact count, however long.
    const ordinary = `${"The quick brown fox, 42 times; ".repeat(4_000)}\n${JSON.stringify({ path: "src/a.ts", content: "const a = 1;\n".repeat(500) })}`;
    expect(defaultTokenEstimator.count(ordinary)).toBe(countTokens(ordinary, { disallowedSpecial: new Set() }));
  });

  it("gives the same count every time (it is cached, and pure)", () => {
    const text = "the same text ".repeat(50);
    expect(defaultTokenEstimator.count(text)).toBe(defaultTokenEstimator.count(text));
  });
});

describe("the estimator of a decisions version", () => {
  const plain = { disallowedSpecial: new Set<string>() };

  it("versions 1 to 5 count each text whole with the encoder, as they recorded; version 6 on counts a long piece in chunks", () => {
    for (const version of [1, 2, 3, 4, 5]) expect(tokenEstimatorFor(version)).toBe(wholeTextTokenEstimator);
    expect(tokenEstimatorFor(6)).toBe(defaultTokenEstimator);
    // A write of 4 000 `+`: one pre-tokenizer piece, which the two rules count 5 tokens apart.
    const text = JSON.stringify({ path: "banner.txt", content: "+".repeat(4_000) });
    expect(tokenEstimatorFor(5).count(text)).toBe(countTokens(text, plain));
    expect(tokenEstimatorFor(6).count(text)).toBe(countTokens(text, plain) + 5);
  });

  it("keeps the two kinds of count apart: whichever is asked first, each gives its own", () => {
    for (const text of [`${"=".repeat(300)} first bounded`, `${"-".repeat(300)} first whole`]) {
      const order = text.endsWith("bounded") ? [defaultTokenEstimator, wholeTextTokenEstimator] : [wholeTextTokenEstimator, defaultTokenEstimator];
      for (const estimator of order) estimator.count(text);
      expect(wholeTextTokenEstimator.count(text)).toBe(countTokens(text, plain));
      expect(defaultTokenEstimator.count(text)).toBe(countTokens(text, plain) + 1);
    }
  });

  it("a text without a piece longer than 256 code units counts the same under both", () => {
    const ordinary = `${"The quick brown fox, 42 times; ".repeat(400)}\n${"=".repeat(256)}`;
    expect(defaultTokenEstimator.count(ordinary)).toBe(wholeTextTokenEstimator.count(ordinary));
  });
});

describe("estimateMessageTokens", () => {
  it("adds a per-message overhead to the text", () => {
    expect(estimateMessageTokens({ role: "user", content: "one two three" }, words)).toBe(3 + messageOverheadTokens);
  });

  it("counts tool names, arguments, IDs and results, and a part overhead per call or block", () => {
    const openAi = { role: "assistant", content: null, tool_calls: [{ id: "c1", type: "function", function: { name: "read", arguments: "a b" } }] };
    expect(estimateMessageTokens(openAi, words)).toBe(messageOverheadTokens + partOverheadTokens + 4);
    const anthropic = { role: "assistant", content: [{ type: "tool_use", id: "c1", name: "read", input: { path: "a b" } }] };
    // id, name, and the input as JSON text ({"path":"a b"} is two words).
    expect(estimateMessageTokens(anthropic, words)).toBe(messageOverheadTokens + partOverheadTokens + 4);
  });
});

describe("truncateToTokens", () => {
  it("keeps a text that fits and cuts one that does not, with an ellipsis", () => {
    expect(truncateToTokens("one two three", 3, words)).toBe("one two three");
    const cut = truncateToTokens("one two three four five", 2, words);
    expect(words.count(cut)).toBeLessThanOrEqual(2);
    expect(cut.endsWith("…")).toBe(true);
    expect(truncateToTokens("anything", 0, words)).toBe("");
  });

  it("fits the default estimator's budget and never cuts a surrogate pair", () => {
    const text = "😀".repeat(200);
    const cut = truncateToTokens(text, 10, defaultTokenEstimator);
    expect(defaultTokenEstimator.count(cut)).toBeLessThanOrEqual(10);
    expect(cut).not.toMatch(/[\uD800-\uDBFF](?![\uDC00-\uDFFF])/);
  });
});
