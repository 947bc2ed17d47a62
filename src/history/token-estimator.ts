import { countTokens } from "gpt-tokenizer/encoding/o200k_base";

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

/** Counts are cached per text: the same history is counted again on every request. */
const cacheLimit = 4096;

/**
 * The default estimator: the `o200k_base` encoding (gpt-tokenizer), exact for current OpenAI
 * models and a close proxy for others. Characters divided by four is not used because it is off
 * by a factor of two or more exactly where budgets matter — JSON, code, non-Latin text and long
 * IDs — so a history chosen by it would overflow the context window or waste it.
 *
 * @example
 * defaultTokenEstimator.count("hello world"); // 2
 */
export const defaultTokenEstimator: TokenEstimator = (() => {
  const cache = new Map<string, number>();
  return {
    count(text: string): number {
      if (text === "") return 0;
      const cached = cache.get(text);
      if (cached !== undefined) return cached;
      const count = countTokens(text, asPlainText);
      if (cache.size >= cacheLimit) cache.delete(cache.keys().next().value as string);
      cache.set(text, count);
      return count;
    },
  };
})();

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
