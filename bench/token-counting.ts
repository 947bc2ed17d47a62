/**
 * What counting tokens costs on texts that used to stall a turn (issue 31): tool arguments of
 * 200 KB and 800 KB made of one character, of spaces, of punctuation, of CJK and of emoji, and an
 * ordinary text of the same size for comparison. Prints ms per count and ns per character; each
 * text is counted once, fresh (the estimator caches counts per text). docs/history.md, "Counting
 * tokens", gives the rule. Not part of `npm run bench`:
 *
 *   node --import tsx bench/token-counting.ts
 */
import { defaultTokenEstimator } from "../src/history/token-estimator.js";

const ordinaryLine = "The quick brown fox jumps over the lazy dog, 42 times; const a = f(b);\n";
const kinds: Record<string, (size: number) => string> = {
  "one letter": (size) => "x".repeat(size),
  spaces: (size) => " ".repeat(size),
  punctuation: (size) => "!".repeat(size),
  CJK: (size) => "中".repeat(size),
  emoji: (size) => "😀".repeat(size / 2),
  ordinary: (size) => ordinaryLine.repeat(Math.ceil(size / ordinaryLine.length)).slice(0, size),
};

// Loads the encoder and warms the JIT before anything is measured.
defaultTokenEstimator.count(ordinaryLine.repeat(100));
for (const size of [200_000, 800_000]) {
  for (const [kind, make] of Object.entries(kinds)) {
    const text = JSON.stringify({ content: make(size) });
    const started = performance.now();
    const tokens = defaultTokenEstimator.count(text);
    const ms = performance.now() - started;
    console.log(`${String(size / 1000).padStart(4)} KB ${kind.padEnd(12)} ${ms.toFixed(1).padStart(8)} ms  ${((ms * 1e6) / text.length).toFixed(0).padStart(6)} ns/char  ${tokens} tokens`);
  }
}
