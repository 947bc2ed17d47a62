import type { HistoryUnit, HistoryToolResult } from "./history-units.js";
import { truncateToTokens, type TokenEstimator } from "./token-estimator.js";

/**
 * Summarizes history units that no longer fit the token budget into one text that replaces them
 * (recorded as `session.history.compacted`). Units are summarized whole, never split.
 *
 * `summarize` is synchronous on purpose: it runs inside `requestProvider`, a replayable decision,
 * which has no I/O. A model-backed compressor is therefore an adapter: the host runs its model
 * ahead of time (for instance on the units `selectSuffix` says will drop next) and hands the
 * result in through a synchronous function — see `precomputedCompressor`. Its `name` is recorded
 * with the summary; replay recomputes only the `deterministic` one and takes any other as logged.
 *
 * @example
 * const short: HistoryCompressor = { name: "count-only", summarize: (units) => `${units.length} earlier messages.` };
 */
export interface HistoryCompressor {
  name: string;
  summarize(units: readonly HistoryUnit[], options: { maxTokens: number; estimator: TokenEstimator }): string;
}

const requestChars = 160;
const answerChars = 200;

/**
 * The default compressor, deterministic: which tools ran how often with which outcome, the user
 * requests and the final answers (each shortened), and the previous summary, cut to `maxTokens`.
 * When everything does not fit, the oldest requests and answers are left out whole (and counted),
 * so every unit is either in the summary or counted as omitted — never half of one. Arguments,
 * tool results and replay echo are never copied into it.
 *
 * @example
 * deterministicCompressor.summarize(droppedUnits, { maxTokens: 512, estimator: defaultTokenEstimator });
 */
export const deterministicCompressor: HistoryCompressor = {
  name: "deterministic",
  summarize(units, { maxTokens, estimator }) {
    const previous: string[] = [];
    const tools = new Map<string, Map<string, number>>();
    const items: { label: "Request" | "Answer"; text: string }[] = [];
    for (const unit of units) {
      switch (unit.kind) {
        case "summary":
          previous.push(unit.summary);
          break;
        case "user":
          items.push({ label: "Request", text: shorten(unit.content, requestChars) });
          break;
        case "assistant":
          items.push({ label: "Answer", text: shorten(unit.content, answerChars) });
          break;
        case "tool-group":
        case "flat":
          unit.calls.forEach((call, index) => {
            const outcomes = tools.get(call.name) ?? new Map<string, number>();
            const outcome = outcomeOf(unit.results[index]);
            outcomes.set(outcome, (outcomes.get(outcome) ?? 0) + 1);
            tools.set(call.name, outcomes);
          });
          break;
      }
    }
    const head: string[] = [`${units.length} earlier unit${units.length === 1 ? "" : "s"} summarized.`];
    if (previous.length > 0) head.push(`Before that: ${truncateToTokens(previous.join("\n"), Math.floor(maxTokens / 2), estimator)}`);
    if (tools.size > 0) {
      const parts = [...tools].map(([name, outcomes]) => {
        const total = [...outcomes.values()].reduce((sum, count) => sum + count, 0);
        return `${name === "" ? "(unnamed tool)" : name} ×${total} (${[...outcomes].map(([outcome, count]) => `${outcome} ${count}`).join(", ")})`;
      });
      head.push(`Tools used: ${parts.join("; ")}.`);
    }
    // The newest requests and answers matter most: add them newest first while they fit.
    const budget = maxTokens - estimator.count(head.join("\n"));
    const kept: string[] = [];
    let used = 0;
    let omitted = 0;
    for (let index = items.length - 1; index >= 0; index -= 1) {
      const item = items[index] as { label: string; text: string };
      const line = `${item.label}: ${item.text}`;
      const cost = estimator.count(line) + 1;
      if (omitted === 0 && used + cost <= budget - 8) {
        kept.unshift(line);
        used += cost;
      } else {
        omitted += 1;
      }
    }
    const omittedLine = omitted > 0 ? [`(${omitted} older ${omitted === 1 ? "request or answer" : "requests and answers"} left out.)`] : [];
    return truncateToTokens([...head, ...omittedLine, ...kept].join("\n"), maxTokens, estimator);
  },
};

function outcomeOf(result: HistoryToolResult | undefined): string {
  if (result === undefined) return "no result";
  if (result.ok) return "ok";
  return result.errorCode ?? "error";
}

function shorten(text: string, maxChars: number): string {
  const line = text.replace(/\s+/g, " ").trim();
  if (line.length <= maxChars) return JSON.stringify(line);
  let end = maxChars - 1;
  if (/[\uD800-\uDBFF]/.test(line.charAt(end - 1))) end -= 1;
  return JSON.stringify(`${line.slice(0, end)}…`);
}

/**
 * A compressor whose summaries were computed ahead of time (by a model, asynchronously, outside
 * the decision): `lookup` returns the stored summary for the units. The result is cut to the
 * budget like any other. The summary is recorded as given, and replay takes it as logged.
 *
 * @example
 * const summaries = new Map<string, string>(); // filled by the host's own model calls
 * const compressor = precomputedCompressor("my-model", (units) => summaries.get(keyOf(units)) ?? fallback(units));
 */
export function precomputedCompressor(name: string, lookup: (units: readonly HistoryUnit[], options: { maxTokens: number }) => string): HistoryCompressor {
  if (name === "deterministic") throw new TypeError('"deterministic" is the built-in compressor\'s name; give a precomputed compressor its own');
  return {
    name,
    summarize(units, { maxTokens, estimator }) {
      return truncateToTokens(lookup(units, { maxTokens }), maxTokens, estimator);
    },
  };
}

/**
 * The text a summary unit shows the model (as a user-role message: it is context, never an
 * instruction with system authority, since it quotes users and tools).
 *
 * @example
 * summaryUnitText({ summary: "2 earlier units summarized." });
 */
export function summaryUnitText(summary: { summary: string }): string {
  return `Summary of the earlier conversation (older messages were compacted):\n${summary.summary}`;
}
