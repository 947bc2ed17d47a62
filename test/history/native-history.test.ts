import { describe, expect, it } from "vitest";
import type { ProviderFormat } from "../../src/contracts/provider.js";
import { buildNativeHistory, type NativeHistoryOptions } from "../../src/providers/format-history.js";
import type { SessionState } from "../../src/projections/session-state.js";
import { assertValidAnthropicMessages, assertValidOpenAiChat } from "../support/history-validators.js";
import { HistorySession } from "../support/history-sessions.js";

const formats: ProviderFormat[] = ["openai-chat", "anthropic-messages"];
const options = (format: ProviderFormat, maxTokens: number, extra: Partial<NativeHistoryOptions> = {}): NativeHistoryOptions => ({
  format,
  provider: { id: "scripted", format },
  maxTokens,
  ...extra,
});

/** A session of `rounds` user messages, each answered after one tool group. */
function longSession(rounds: number): HistorySession {
  const session = new HistorySession();
  for (let round = 0; round < rounds; round += 1) {
    session
      .user(`request ${round}: please read file ${round}`)
      .toolTurn({ content: `reading ${round}`, calls: [{ id: `call_${round}`, arguments: `{"path":"f${round}.txt"}` }], results: [{ content: `contents of file ${round} `.repeat(5) }] })
      .answer(`file ${round} says hello`);
  }
  return session.user("the current question").toolTurn({ calls: [{ id: "call_now" }], results: [{ content: "current result" }] });
}

function validate(format: ProviderFormat, built: { messages: unknown[]; system?: string }) {
  if (format === "openai-chat") assertValidOpenAiChat(built.messages);
  else assertValidAnthropicMessages({ ...(built.system !== undefined ? { system: built.system } : {}), messages: built.messages });
}

function withCompaction(state: SessionState, compaction: NonNullable<ReturnType<typeof buildNativeHistory>["compaction"]>): SessionState {
  return { ...state, historySummary: compaction };
}

const diagnostic = (built: ReturnType<typeof buildNativeHistory>, suffix: string) => built.diagnostics.find((entry) => entry.name === `structured-tool-history-${suffix}`);

describe("buildNativeHistory", () => {
  it.each(formats)("keeps everything that fits, with no compaction (%s)", (format) => {
    const state = longSession(3).state();
    const built = buildNativeHistory(state, options(format, 100_000));
    expect(built.compaction).toBeUndefined();
    expect(diagnostic(built, "selected")).toMatchObject({ counts: { history_units: 9, units_selected: 9, units_dropped: 0, working_set_units: 1, groups_native: 4, groups_flat: 0 }, reasons: [] });
    validate(format, built);
  });

  it("puts the system text first for OpenAI and apart for Anthropic", () => {
    const state = longSession(1).state();
    const openAi = buildNativeHistory(state, options("openai-chat", 10_000, { system: "SYS" }));
    expect(openAi.messages[0]).toEqual({ role: "system", content: "SYS" });
    expect(openAi.system).toBeUndefined();
    const anthropic = buildNativeHistory(state, options("anthropic-messages", 10_000, { system: "SYS" }));
    expect(anthropic.system).toBe("SYS");
    expect(JSON.stringify(anthropic.messages)).not.toContain("SYS");
  });

  it.each(formats)("appends the current user message once, after the history, with the working set after it (%s)", (format) => {
    const built = buildNativeHistory(longSession(4).state(), options(format, 400));
    const text = JSON.stringify(built.messages);
    expect(text.split("the current question")).toHaveLength(2);
    expect(text.indexOf("the current question")).toBeLessThan(text.indexOf("current result"));
    expect(text.lastIndexOf("current result")).toBeGreaterThan(text.lastIndexOf("file 3 says hello"));
  });

  it.each(formats)("drops the oldest units to a proposed summary, and builds the messages as if it were applied (%s)", (format) => {
    const session = longSession(6);
    const state = session.state();
    const built = buildNativeHistory(state, options(format, 500));
    const compaction = built.compaction;
    expect(compaction).toBeDefined();
    if (compaction === undefined) return;
    expect(compaction.compressor).toBe("deterministic");
    expect(compaction.unitsSummarized).toBeGreaterThan(0);
    const selected = diagnostic(built, "selected");
    expect(selected?.counts.units_dropped).toBe(compaction.unitsSummarized);
    expect(selected?.reasons).toEqual(["budget_fallback", "compaction_proposed"]);
    // The first kept unit starts at beforePosition: a whole user message, never a piece of a group.
    const first = JSON.stringify(built.messages[0]);
    expect(first).toContain("Summary of the earlier conversation");
    expect(first).toContain(`${compaction.unitsSummarized} earlier unit`);
    validate(format, built);
  });

  it.each(formats)("contract: applying the proposed compaction and building again gives byte-identical messages and no new compaction (%s)", (format) => {
    let compacted = 0;
    for (const maxTokens of [60, 150, 300, 500, 800, 1200, 2000]) {
      for (const system of [undefined, "You are terse."]) {
        const state = longSession(8).state();
        const opts = options(format, maxTokens, system !== undefined ? { system } : {});
        const first = buildNativeHistory(state, opts);
        expect(JSON.stringify(buildNativeHistory(state, opts))).toBe(JSON.stringify(first));
        validate(format, first);
        if (first.compaction === undefined) continue;
        const second = buildNativeHistory(withCompaction(state, first.compaction), opts);
        expect(JSON.stringify(second.messages)).toBe(JSON.stringify(first.messages));
        expect(second.system).toBe(first.system);
        expect(second.compaction).toBeUndefined();
        compacted += 1;
      }
    }
    expect(compacted).toBeGreaterThan(6);
  });

  it("compacts again on top of a recorded summary, carrying it forward", () => {
    const session = longSession(6);
    const first = buildNativeHistory(session.state(), options("openai-chat", 400));
    expect(first.compaction).toBeDefined();
    if (first.compaction === undefined) return;
    session.push({ type: "session.history.compacted", data: first.compaction });
    for (let round = 0; round < 4; round += 1) session.answer(`more ${round} `.repeat(30)).user(`follow-up ${round}`);
    const state = session.state();
    expect(state.historySummary).toMatchObject({ summary: first.compaction.summary });
    const second = buildNativeHistory(state, options("openai-chat", 400));
    expect(second.compaction).toBeDefined();
    expect(second.compaction?.unitsSummarized).toBeGreaterThan(first.compaction.unitsSummarized);
    expect(second.compaction?.summary).toContain("Before that:");
    expect(second.compaction?.beforePosition).toBeGreaterThan(first.compaction.beforePosition);
    const third = buildNativeHistory({ ...state, historySummary: second.compaction ?? null }, options("openai-chat", 400));
    expect(JSON.stringify(third.messages)).toBe(JSON.stringify(second.messages));
    expect(third.compaction).toBeUndefined();
  });

  it("stops at the first unit that does not fit: a huge old answer sends everything before it to the summary", () => {
    const session = new HistorySession().user("a").answer("tiny").user("b").answer("huge ".repeat(2000)).user("c").answer("small").user("now");
    const built = buildNativeHistory(session.state(), options("openai-chat", 300));
    const text = JSON.stringify(built.messages);
    expect(text).not.toContain("huge huge");
    // "tiny" and its request would fit, but they are older than the unit that did not.
    expect(text).not.toContain('"content":"tiny"');
    expect(text).toContain('"content":"small"');
    expect(built.compaction?.unitsSummarized).toBe(4);
  });

  it("never drops the current message or the working set, and says when they alone exceed the budget", () => {
    const session = new HistorySession().user("old").answer("old answer").user("now ".repeat(300)).toolTurn({ calls: [{ id: "call_a" }], results: [{ content: "big ".repeat(300) }] });
    const built = buildNativeHistory(session.state(), options("anthropic-messages", 100));
    const text = JSON.stringify(built.messages);
    expect(text).toContain("now now");
    expect(text).toContain("big big");
    expect(diagnostic(built, "selected")?.reasons).toContain("over_budget");
    validate("anthropic-messages", built);
  });

  it("records flat groups and stripped echo in -skipped, with reason enums", () => {
    const provider = { id: "deepseek", format: "openai-chat" as const };
    const session = new HistorySession({ provider })
      .user("go")
      .toolTurn({ calls: [{ id: "call_a" }], echo: { reasoning_content: "thoughts" } })
      .toolTurn({ calls: [{ id: "call_b", redacted: true }] })
      .toolTurn({ calls: [{ id: "call_c" }], results: "none" });
    const built = buildNativeHistory(session.state(), { format: "openai-chat", provider: { id: "openai", format: "openai-chat" }, maxTokens: 10_000 });
    expect(diagnostic(built, "skipped")).toEqual({
      name: "structured-tool-history-skipped",
      counts: { groups_flat: 2, calls_flat: 2, echo_stripped: 1, incomplete_group: 1, provider_unsupported: 1, unsafe_arguments: 1 },
      reasons: ["incomplete_group", "provider_unsupported", "unsafe_arguments"],
    });
    const same = buildNativeHistory(session.state(), { format: "openai-chat", provider, maxTokens: 10_000 });
    expect(diagnostic(same, "skipped")?.reasons).toEqual(["incomplete_group", "unsafe_arguments"]);
    expect(diagnostic(same, "serialized")?.counts.reasoning_fields).toBe(1);
  });

  it("counts -serialized from the messages produced", () => {
    const session = new HistorySession().user("go").toolTurn({ calls: [{ id: "call_a" }, { id: "call_b" }], results: [{}, { ok: false }] }).answer("done").user("next");
    const openAi = buildNativeHistory(session.state(), options("openai-chat", 10_000, { system: "S" }));
    expect(diagnostic(openAi, "serialized")).toMatchObject({
      counts: { messages: 7, system_messages: 1, user_messages: 2, assistant_messages: 2, tool_messages: 2, tool_calls: 2, tool_results: 2 },
      reasons: ["openai_chat"],
    });
    const anthropic = buildNativeHistory(session.state(), options("anthropic-messages", 10_000, { system: "S" }));
    expect(diagnostic(anthropic, "serialized")).toMatchObject({
      counts: { messages: 5, system_messages: 1, user_messages: 3, assistant_messages: 2, tool_calls: 2, tool_results: 2, error_results: 1, text_blocks: 3 },
      reasons: ["anthropic_messages"],
    });
    expect(diagnostic(anthropic, "repaired")).toBeUndefined();
    const merged = buildNativeHistory(new HistorySession().user("go").toolTurn({ calls: [{ id: "call_a" }] }).user("next").state(), options("anthropic-messages", 10_000));
    expect(diagnostic(merged, "repaired")).toEqual({ name: "structured-tool-history-repaired", counts: { merged_consecutive_roles: 1 }, reasons: ["merged_consecutive_roles"] });
  });

  it("uses a pluggable estimator and compressor", () => {
    const state = longSession(12).state();
    const built = buildNativeHistory(state, {
      ...options("openai-chat", 2000),
      estimator: { count: (text) => text.length },
      compressor: { name: "fixed", summarize: (units) => `${units.length} units` },
    });
    expect(built.compaction).toMatchObject({ compressor: "fixed" });
    expect(built.compaction?.summary).toMatch(/^\d+ units$/);
  });
});

describe("buildNativeHistory options", () => {
  it("rejects a budget that is not a positive number, a caller's mistake", () => {
    const state = new HistorySession().user("hi").state();
    for (const maxTokens of [0, -5, Number.NaN]) expect(() => buildNativeHistory(state, options("openai-chat", maxTokens))).toThrow(TypeError);
  });
});
