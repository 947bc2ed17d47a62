import { describe, expect, it } from "vitest";
import type { ProviderFormat } from "../../src/contracts/provider.js";
import { buildNativeHistory } from "../../src/providers/format-history.js";
import { applyEvent, applyEventInPlace, foldEvents } from "../../src/projections/projection.js";
import { sessionStateProjection, type SessionState } from "../../src/projections/session-state.js";
import { recordForTest } from "../../src/testing/given-when-then.js";
import { HistorySession } from "../support/history-sessions.js";

/**
 * A session with every case a history build carries from one message to the next: results that
 * arrive after their group, a call ID used again, a second result for one call, several user messages, and a recorded compaction part way.
 */
function session(): HistorySession {
  const built = new HistorySession();
  for (let round = 0; round < 6; round += 1) {
    built
      .user(`question ${round}`)
      .toolTurn({ content: `looking ${round}`, calls: [{ id: `call_${round}_a` }, { id: `call_${round}_b`, arguments: `{"path":"f${round}.txt"}` }], results: [{ content: `alpha ${round} `.repeat(20) }, { content: "beta", ok: round % 2 === 0 }] })
      .answer(`answer ${round}`);
    if (round === 2) built.toolTurn({ calls: [{ id: "call_0_a" }], results: [{ content: "again" }] });
    if (round === 3) {
      built.push({ type: "turn.started", data: { turnId: "turn-stray", turnSeq: 99, iteration: 1 } });
      built.push({ type: "turn.results.packetized", data: { turnId: "turn-stray", packets: [{ callId: "call_1_a", tool: "read_file", ok: true, content: "second", truncated: false, originalChars: 6 }] } });
      built.push({ type: "turn.continued", data: { turnId: "turn-stray", reason: "tool-results" } });
    }
    if (round === 4) built.push({ type: "session.history.compacted", data: { beforePosition: 30, summary: "what happened before", unitsSummarized: 5, compressor: "deterministic" } });
  }
  return built.toolTurn({ calls: [{ id: "call_open" }], results: "none" });
}

const formats: ProviderFormat[] = ["openai-chat", "anthropic-messages", "ai-sdk"];
const build = (state: SessionState, format: ProviderFormat, maxTokens: number) =>
  JSON.stringify(buildNativeHistory(state, { format, provider: { id: "scripted", format }, maxTokens }));

describe("the request history extended from the last build", () => {
  it.each(formats)("equals a build from scratch after every event, in an immutable and a mutable fold (%s)", (format) => {
    const events = recordForTest(session().events);
    for (const maxTokens of [Infinity, 600]) {
      let immutable = sessionStateProjection.initialState();
      const mutable = sessionStateProjection.initialState();
      for (let count = 1; count <= events.length; count += 1) {
        const event = events[count - 1]!;
        immutable = applyEvent(sessionStateProjection, immutable, event);
        applyEventInPlace(sessionStateProjection, mutable, event);
        if (immutable.provider === null) continue;
        // A fold of the same events from scratch: new message objects, so nothing is reused.
        const fresh = build(foldEvents(sessionStateProjection, events.slice(0, count)), format, maxTokens);
        expect(build(immutable, format, maxTokens)).toBe(fresh);
        expect(build(mutable, format, maxTokens)).toBe(fresh);
      }
      // The cases are there: the summary, the repeated ID, the second result.
      const last = build(immutable, format, maxTokens);
      expect(last).toContain("what happened before");
      if (maxTokens === Infinity) expect(last).toContain("invalid_id");
      expect(last).toContain("duplicate_result_dropped");
    }
  });

  it("follows a compaction that replaces less than the one before it", () => {
    const built = session();
    const events = recordForTest(built.events);
    let state = foldEvents(sessionStateProjection, events);
    // First built after the compaction at 30: nothing before it was needed then.
    build(state, "openai-chat", 600);
    const later = recordForTest([{ type: "session.history.compacted", data: { beforePosition: 5, summary: "less replaced", unitsSummarized: 1, compressor: "deterministic" } }], { startPosition: events.length + 1 });
    state = applyEvent(sessionStateProjection, state, later[0]!);
    for (const maxTokens of [600, Infinity]) {
      expect(build(state, "openai-chat", maxTokens)).toBe(build(foldEvents(sessionStateProjection, [...events, ...later]), "openai-chat", maxTokens));
    }
    expect(build(state, "openai-chat", Infinity)).toContain("question 1");
  });

  it("derives a group again when its turn is answered again, also in a fold in place", () => {
    const built = new HistorySession().user("go").toolTurn({ calls: [{ id: "call_a" }] });
    const events = recordForTest(built.events);
    const mutable = sessionStateProjection.initialState();
    for (const event of events) applyEventInPlace(sessionStateProjection, mutable, event);
    expect(build(mutable, "openai-chat", Infinity)).toContain('"tool_call_id":"call_a"');
    const again = recordForTest([{ type: "turn.provider.responded", data: { turnId: "turn-1", attempt: 2, content: "", toolCalls: [], finishReason: "length" } }], { startPosition: events.length + 1 });
    applyEventInPlace(sessionStateProjection, mutable, again[0]!);
    const expected = build(foldEvents(sessionStateProjection, [...events, ...again]), "openai-chat", Infinity);
    expect(expected).toContain("length_truncated");
    expect(build(mutable, "openai-chat", Infinity)).toBe(expected);
  });

  it("gives an earlier state its own history after a later one was built", () => {
    const events = recordForTest(session().events);
    const states: SessionState[] = [];
    let state = sessionStateProjection.initialState();
    for (const event of events) states.push((state = applyEvent(sessionStateProjection, state, event)));
    const later = build(states.at(-1)!, "openai-chat", Infinity);
    for (const earlier of [states[20]!, states[45]!, states[10]!]) {
      expect(build(earlier, "openai-chat", Infinity)).toBe(build(foldEvents(sessionStateProjection, events.slice(0, earlier.position)), "openai-chat", Infinity));
    }
    expect(build(states.at(-1)!, "openai-chat", Infinity)).toBe(later);
  });
});
