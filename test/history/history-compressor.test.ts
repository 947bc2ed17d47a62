import { describe, expect, it } from "vitest";
import { deterministicCompressor, precomputedCompressor, summaryUnitText } from "../../src/history/history-compressor.js";
import { buildHistoryUnits } from "../../src/history/history-units.js";
import { defaultTokenEstimator } from "../../src/history/token-estimator.js";
import { HistorySession } from "../support/history-sessions.js";

const estimator = defaultTokenEstimator;

function sampleUnits() {
  const session = new HistorySession()
    .user("Please read a.txt and b.txt")
    .toolTurn({
      calls: [{ id: "call_a" }, { id: "call_b", arguments: '{"path":"b.txt"}' }, { id: "call_w", name: "write_file", arguments: '{"path":"c.txt","content":"zz"}' }],
      results: [{ content: "alpha-content" }, { ok: false, errorCode: "tool-exception", content: "Error: boom" }, { ok: false, errorCode: "denied-by-user", content: "Error: denied" }],
    })
    .toolTurn({ calls: [{ id: "call_c", arguments: '{"path":"secret-args"}', redacted: true }], results: [{ content: "gamma-content" }] })
    .answer("Here is what I found")
    .user("now the next thing");
  return buildHistoryUnits(session.state()).history;
}

describe("deterministicCompressor", () => {
  it("summarizes tool use by tool and outcome, the requests and the answers", () => {
    const summary = deterministicCompressor.summarize(sampleUnits(), { maxTokens: 500, estimator });
    expect(summary).toContain("4 earlier units summarized.");
    expect(summary).toContain("read_file ×3 (ok 2, tool-exception 1)");
    expect(summary).toContain("write_file ×1 (denied-by-user 1)");
    expect(summary).toContain('Request: "Please read a.txt and b.txt"');
    expect(summary).toContain('Answer: "Here is what I found"');
  });

  it("never copies arguments or tool results into the summary", () => {
    const summary = deterministicCompressor.summarize(sampleUnits(), { maxTokens: 500, estimator });
    for (const text of ["alpha-content", "gamma-content", "Error: boom", "c.txt", "secret-args", "zz"]) expect(summary).not.toContain(text);
  });

  it("shortens long requests and answers", () => {
    const { history } = buildHistoryUnits(new HistorySession().user("word ".repeat(500)).answer("answer ".repeat(500)).user("next").state());
    const summary = deterministicCompressor.summarize(history, { maxTokens: 1000, estimator });
    expect(summary.length).toBeLessThan(600);
  });

  it("fits maxTokens, leaving out the oldest requests and answers whole, and says how many", () => {
    const session = new HistorySession();
    for (let index = 0; index < 40; index += 1) session.user(`request number ${index} about something`).answer(`answer number ${index}`);
    const { history } = buildHistoryUnits(session.user("last").state());
    const summary = deterministicCompressor.summarize(history, { maxTokens: 120, estimator });
    expect(estimator.count(summary)).toBeLessThanOrEqual(120);
    expect(summary).toContain("request number 39");
    expect(summary).not.toContain("request number 0 ");
    expect(summary).toMatch(/\(\d+ older requests and answers left out\.\)/);
    // Each kept request is whole.
    for (const line of summary.split("\n").filter((candidate) => candidate.startsWith("Request:"))) expect(line).toMatch(/^Request: "request number \d+ about something"$/);
  });

  it("carries the previous summary forward", () => {
    const session = new HistorySession().user("first").answer("one");
    session.push({ type: "session.history.compacted", data: { beforePosition: session.nextPosition, summary: "PREVIOUS-SUMMARY", unitsSummarized: 2, compressor: "deterministic" } });
    const { history } = buildHistoryUnits(session.user("second").answer("two").user("third").state());
    const summary = deterministicCompressor.summarize(history, { maxTokens: 300, estimator });
    expect(summary).toContain("Before that: PREVIOUS-SUMMARY");
  });

  it("is deterministic", () => {
    const units = sampleUnits();
    expect(deterministicCompressor.summarize(units, { maxTokens: 200, estimator })).toBe(deterministicCompressor.summarize(units, { maxTokens: 200, estimator }));
  });
});

describe("precomputedCompressor", () => {
  it("returns the host's precomputed summary, cut to the budget, under its own name", () => {
    const compressor = precomputedCompressor("model-x", (units) => `model summary of ${units.length} units ${"padding ".repeat(200)}`);
    expect(compressor.name).toBe("model-x");
    const summary = compressor.summarize(sampleUnits(), { maxTokens: 20, estimator });
    expect(summary.startsWith("model summary of 4 units")).toBe(true);
    expect(estimator.count(summary)).toBeLessThanOrEqual(20);
  });

  it("cannot take the deterministic compressor's name, which replay recomputes", () => {
    expect(() => precomputedCompressor("deterministic", () => "")).toThrow(TypeError);
  });
});

describe("summaryUnitText", () => {
  it("frames the summary as context about the earlier conversation", () => {
    expect(summaryUnitText({ summary: "S" })).toBe("Summary of the earlier conversation (older messages were compacted):\nS");
  });
});
