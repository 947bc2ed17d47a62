import { describe, expect, it } from "vitest";
import { buildHistoryUnits, type FlatUnit, type HistoryUnit, type ToolGroupUnit } from "../../src/history/history-units.js";
import { HistorySession } from "../support/history-sessions.js";

const kinds = (units: readonly HistoryUnit[]) => units.map((unit) => unit.kind);

function onlyGroup(session: HistorySession): ToolGroupUnit | FlatUnit {
  const { units } = buildHistoryUnits(session.state());
  const groups = units.filter((unit): unit is ToolGroupUnit | FlatUnit => unit.kind === "tool-group" || unit.kind === "flat");
  expect(groups).toHaveLength(1);
  return groups[0] as ToolGroupUnit | FlatUnit;
}

describe("buildHistoryUnits", () => {
  it("cuts a session into user messages, tool groups and final answers, in order", () => {
    const session = new HistorySession()
      .user("read a")
      .toolTurn({ content: "let me look", calls: [{ id: "call_a" }, { id: "call_b", arguments: '{"path":"b.txt"}' }], results: [{ content: "alpha" }, { content: "beta" }] })
      .answer("alpha and beta")
      .user("thanks");
    const layout = buildHistoryUnits(session.state());
    expect(kinds(layout.units)).toEqual(["user", "tool-group", "assistant", "user"]);
    expect(kinds(layout.history)).toEqual(["user", "tool-group", "assistant"]);
    expect(layout.current).toMatchObject({ kind: "user", content: "thanks" });
    expect(layout.workingSet).toEqual([]);
    const group = layout.units[1] as ToolGroupUnit;
    expect(group.content).toBe("let me look");
    expect(group.calls.map((call) => [call.id, call.input])).toEqual([
      ["call_a", { path: "a.txt" }],
      ["call_b", { path: "b.txt" }],
    ]);
    expect(group.results.map((result) => [result.callId, result.content])).toEqual([
      ["call_a", "alpha"],
      ["call_b", "beta"],
    ]);
  });

  it("gives every unit the stream position of the event it starts with", () => {
    const session = new HistorySession().user("one");
    const userPosition = session.events.length;
    session.toolTurn({ calls: [{ id: "call_a" }] });
    // turn.started, provider.responded, then the normalized turn.
    const groupPosition = userPosition + 3;
    const { units } = buildHistoryUnits(session.state());
    expect(units.map((unit) => unit.position)).toEqual([userPosition, groupPosition]);
  });

  it("keeps the units after the last user message as the working set", () => {
    const session = new HistorySession()
      .user("first")
      .answer("one")
      .user("second")
      .toolTurn({ calls: [{ id: "call_a" }] })
      .toolTurn({ calls: [{ id: "call_b" }] });
    const layout = buildHistoryUnits(session.state());
    expect(kinds(layout.history)).toEqual(["user", "assistant"]);
    expect(layout.current?.content).toBe("second");
    expect(kinds(layout.workingSet)).toEqual(["tool-group", "tool-group"]);
  });

  it("includes the packets of rejected, denied, blocked, failed, interrupted and over-budget calls in a safe group", () => {
    const codes = ["unknown-tool", "denied", "blocked", "tool-exception", "interrupted", "over-budget"];
    const group = onlyGroup(
      new HistorySession().user("go").toolTurn({
        calls: codes.map((_, index) => ({ id: `call_${index}` })),
        results: codes.map((errorCode) => ({ ok: false, errorCode, content: `Error: ${errorCode}` })),
      }),
    );
    expect(group.kind).toBe("tool-group");
    expect(group.results.map((result) => result?.errorCode)).toEqual(codes);
  });

  it("puts results in call order, whatever order the packets were logged in", () => {
    const group = onlyGroup(
      new HistorySession().user("go").toolTurn({ calls: [{ id: "call_a" }, { id: "call_b" }], results: [{ content: "A" }, { content: "B" }], packetOrder: [1, 0] }),
    );
    expect(group.results.map((result) => result?.callId)).toEqual(["call_a", "call_b"]);
  });

  it.each([
    ["unsafe_arguments", { calls: [{ id: "call_a", arguments: '{"password":"[REDACTED]"}', redacted: true }] }],
    ["length_truncated", { calls: [{ id: "call_a" }], finishReason: "length" as const }],
    ["invalid_id", { calls: [{ id: "x".repeat(41) }] }],
    ["invalid_id", { calls: [{ id: "bad id!" }] }],
    ["invalid_name", { calls: [{ id: "call_a", name: "read file" }] }],
    ["invalid_name", { calls: [{ id: "call_a", name: "" }] }],
    ["invalid_arguments", { calls: [{ id: "call_a", arguments: '{"path": "a.txt"' }] }],
    ["invalid_arguments", { calls: [{ id: "call_a", arguments: "[1]" }] }],
    ["incomplete_group", { calls: [{ id: "call_a" }], results: "none" as const }],
    ["incomplete_group", { calls: [{ id: "call_a" }, { id: "call_b" }], results: [{}] }],
    ["echo_oversized", { calls: [{ id: "call_a" }], echoDropped: "echo_oversized" as const }],
    ["missing_echo", { calls: [{ id: "call_a" }], echoDropped: "echo_secret" as const }],
    ["marked_unsafe", { calls: [{ id: "call_a" }], nativeReplaySafe: false, unsafeReasons: ["some_future_reason"] }],
  ])("sends a group flat when %s", (reason, turn) => {
    const group = onlyGroup(new HistorySession().user("go").toolTurn(turn));
    expect(group.kind).toBe("flat");
    expect((group as FlatUnit).reasons).toContain(reason);
  });

  it("sends a group flat when a call ID repeats one of an earlier group", () => {
    const layout = buildHistoryUnits(
      new HistorySession()
        .user("go")
        .toolTurn({ calls: [{ id: "call_a" }] })
        .toolTurn({ calls: [{ id: "call_a" }] })
        .state(),
    );
    expect(kinds(layout.units)).toEqual(["user", "tool-group", "flat"]);
    expect((layout.units[2] as FlatUnit).reasons).toEqual(["invalid_id"]);
  });

  it("reads blank arguments as {}, as the planner does", () => {
    const group = onlyGroup(new HistorySession().user("go").toolTurn({ calls: [{ id: "call_a", arguments: "  " }] }));
    expect(group).toMatchObject({ kind: "tool-group", calls: [{ input: {} }] });
  });

  it("never splits a multi-call group: one unsafe call makes the whole group flat", () => {
    const group = onlyGroup(
      new HistorySession().user("go").toolTurn({
        calls: [{ id: "call_a" }, { id: "call_b", arguments: '{"token":"[REDACTED]"}', redacted: true }, { id: "call_c" }],
        results: [{ content: "A" }, { content: "B" }, { content: "C" }],
      }),
    ) as FlatUnit;
    expect(group.kind).toBe("flat");
    expect(group.calls).toHaveLength(3);
    expect(group.note.split("\n")).toHaveLength(4);
  });

  it("writes a flat note that never looks like a native call and withholds redacted arguments", () => {
    const group = onlyGroup(
      new HistorySession().user("go").toolTurn({
        content: "trying",
        calls: [
          { id: "call_a", name: "read_file", arguments: '{"path":"a.txt"}' },
          { id: "call_b", name: "write_file", arguments: '{"path":"b.txt","content":"[REDACTED]"}', redacted: true },
          { id: "call_c", name: "read_file", arguments: '{"path":"c.txt"}' },
        ],
        results: [{ content: "alpha\nsecond line" }, { ok: false, errorCode: "denied-by-user", content: "Error: not run: the user denied this call." }],
      }),
    ) as FlatUnit;
    expect(group.note).toBe(
      [
        "Earlier tool activity (not replayable as tool calls):",
        '- read_file {"path":"a.txt"} → ok: alpha second line',
        "- write_file (arguments withheld) → error (denied-by-user): Error: not run: the user denied this call.",
        '- read_file {"path":"c.txt"} → no result',
      ].join("\n"),
    );
    expect(group.note).not.toContain("REDACTED");
    expect(group.reasons).toEqual(["incomplete_group", "unsafe_arguments"]);
  });

  it("keeps flat notes of earlier history short, and of the working set long enough to act on", () => {
    const long = "x".repeat(3000);
    const session = new HistorySession()
      .user("first")
      .toolTurn({ calls: [{ id: "call_a", redacted: true }], results: [{ content: long }] })
      .answer("done")
      .user("second")
      .toolTurn({ calls: [{ id: "call_b", redacted: true }], results: [{ content: long }] });
    const { history, workingSet } = buildHistoryUnits(session.state());
    const earlier = history.find((unit) => unit.kind === "flat") as FlatUnit;
    const current = workingSet[0] as FlatUnit;
    expect(earlier.note.length).toBeLessThan(300);
    expect(current.note).toContain(long);
  });

  it("keeps the echo on a safe group with the provider it came from, and never on a flat one", () => {
    const echo = { reasoning_content: "thinking" };
    const safe = onlyGroup(new HistorySession({ provider: { id: "deepseek", format: "openai-chat" } }).user("go").toolTurn({ calls: [{ id: "call_a" }], echo }));
    expect(safe).toMatchObject({ kind: "tool-group", echo: { source: { id: "deepseek", format: "openai-chat" }, value: echo } });
    const flat = onlyGroup(new HistorySession().user("go").toolTurn({ calls: [{ id: "call_a" }], echo, results: "none" }));
    expect(flat.kind).toBe("flat");
    expect(JSON.stringify(flat)).not.toContain("thinking");
  });

  it("replaces the units before a recorded summary's position with one summary unit at the front", () => {
    const session = new HistorySession().user("first").answer("one").user("second");
    const keepFrom = session.events.length;
    session.answer("two").user("third");
    session.push({ type: "session.history.compacted", data: { beforePosition: keepFrom, summary: "S", unitsSummarized: 2, compressor: "deterministic" } });
    const layout = buildHistoryUnits(session.state());
    expect(kinds(layout.history)).toEqual(["summary", "user", "assistant"]);
    expect(layout.history[0]).toMatchObject({ kind: "summary", summary: "S", unitsSummarized: 2, beforePosition: keepFrom });
    expect(layout.current?.content).toBe("third");
  });

  it("never replaces the current user message or the working set", () => {
    const session = new HistorySession().user("first").answer("one").user("second").toolTurn({ calls: [{ id: "call_a" }] });
    session.push({ type: "session.history.compacted", data: { beforePosition: session.nextPosition, summary: "S", unitsSummarized: 2, compressor: "deterministic" } });
    const layout = buildHistoryUnits(session.state());
    expect(kinds(layout.history)).toEqual(["summary"]);
    expect(layout.current?.content).toBe("second");
    expect(kinds(layout.workingSet)).toEqual(["tool-group"]);
  });

  it("counts tool results without a call, and second results, without sending them", () => {
    const session = new HistorySession().user("go").toolTurn({ calls: [{ id: "call_a" }], results: [{ content: "A" }] });
    session.push({
      type: "turn.results.packetized",
      data: { turnId: "turn-1", packets: [{ callId: "call_a", tool: "read_file", ok: true, content: "again", truncated: false, originalChars: 5 }] },
    });
    const layout = buildHistoryUnits(session.state());
    expect(layout.ignoredResults).toEqual({ orphan: 0, duplicate: 1 });
    expect((layout.units[1] as ToolGroupUnit).results[0]?.content).toBe("A");
  });

  it("is pure: the same state gives equal units", () => {
    const state = new HistorySession().user("go").toolTurn({ calls: [{ id: "call_a" }] }).answer("done").state();
    expect(buildHistoryUnits(state)).toEqual(buildHistoryUnits(state));
  });
});
