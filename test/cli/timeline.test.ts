import { describe, expect, it } from "vitest";
import { formatOffset, formatTimeline } from "../../src/cli/timeline.js";
import { demoTools } from "../../src/cli/demo/demo-runtime.js";
import { demoScript } from "../../src/cli/demo/demo-script.js";
import { createRuntime, latestDecisionsVersion, type RecordedEvent, type RecordedTurnlogEvent } from "../../src/index.js";
import { MemoryEventLog, scriptedProvider } from "../../src/testing/index.js";

/** The demo session recorded in memory, with a clock that advances 5 ms per reading. */
async function demoEvents(): Promise<RecordedTurnlogEvent[]> {
  let now = Date.parse("2025-01-01T00:00:00.000Z");
  const clock = { now: () => (now += 5) };
  const runtime = await createRuntime({
    log: new MemoryEventLog({ clock }),
    provider: scriptedProvider(demoScript(), { id: "scripted-demo" }),
    tools: demoTools(),
    policy: { workspace: { root: "/virtual-workspace" } },
    clock,
  });
  const session = await runtime.openSession("t1");
  let outcome = await session.send("Summarize the notes");
  while (outcome.status === "awaiting-approval") {
    for (const pending of outcome.pendingApprovals) await session.approve(pending.callId, { by: "ana", note: "fine" });
    outcome = await session.resume();
  }
  return runtime.events("t1");
}

/** The summary column of the line for the first event of `type`. */
function summaryOf(lines: string[], events: RecordedTurnlogEvent[], type: string): string {
  const index = events.findIndex((event) => event.type === type);
  const line = lines[index] ?? "";
  return line.slice(line.indexOf(type) + type.length).trim();
}

describe("formatTimeline", () => {
  it("gives one line per event with position, offset from the session start and type", async () => {
    const events = await demoEvents();
    const lines = formatTimeline(events);
    expect(lines).toHaveLength(events.length);
    lines.forEach((line, index) => {
      const event = events[index]!;
      expect(line).toMatch(new RegExp(`^ *#${event.meta.streamPosition}  +\\+\\d+\\.\\d{3}s  ${event.type.replaceAll(".", "\\.")}\\b`));
    });
    expect(lines[0]).toMatch(/^ #1 {2}\+0\.000s {2}session\.started/);
  });

  it("summarizes what each event says", async () => {
    const events = await demoEvents();
    const lines = formatTimeline(events);
    expect(summaryOf(lines, events, "session.started")).toBe(`scripted-demo (openai-chat) · mode ask · decisions v${latestDecisionsVersion} · tools: read_file, list_dir, run_command, write_file`);
    expect(summaryOf(lines, events, "turn.provider.responded")).toMatch(/^tool_calls · 5 tool calls · "I'll read the notes/);
    expect(summaryOf(lines, events, "turn.tool_calls.normalized")).toBe(
      "5 calls: read_file, list_dir, read_file, delete_everything, write_file · 1 ID derived",
    );
    expect(summaryOf(lines, events, "turn.tool_calls.planned")).toBe("3 planned · rejected: read_file malformed-arguments, delete_everything unknown-tool");
    expect(summaryOf(lines, events, "turn.tool_calls.gated")).toBe("read_file allow (mode:ask) · list_dir allow (mode:ask) · write_file ask (mode:ask)");
    expect(summaryOf(lines, events, "turn.approval.granted")).toBe('write_file call_save_sum… approved by ana · "fine"');
    expect(summaryOf(lines, events, "turn.tool.started")).toBe("read_file call_read_notes · group 0");
    expect(summaryOf(lines, events, "turn.tool.succeeded")).toMatch(/^read_file · \d+ms · "# Project notes/);
    expect(summaryOf(lines, events, "turn.results.packetized")).toBe("3 ok, 2 errors");
    expect(summaryOf(lines, events, "turn.completed")).toMatch(/^"Done\. .{20,}…"$/);
  });

  it("is plain text unless asked for color", async () => {
    const events = await demoEvents();
    expect(formatTimeline(events).join("\n")).not.toContain("\u001b[");
    const colored = formatTimeline(events, { color: true });
    expect(colored.join("\n")).toContain("\u001b[");
    // Color changes the look, never the words.
    expect(colored.map((line) => line.replace(/\u001b\[\d+m/g, ""))).toEqual(formatTimeline(events));
  });

  it("describes an event it cannot read instead of throwing (events a host built by hand, past the read's check)", () => {
    const meta = (streamPosition: number) => ({
      eventId: `e${streamPosition}`,
      stream: "session-x",
      streamPosition,
      globalPosition: streamPosition,
      recordedAt: "2025-01-01T00:00:00.000Z",
      schemaVersion: 1,
      prevHash: "",
      hash: "",
    });
    const unread: RecordedEvent[] = [
      { type: "turn.tool_calls.gated", data: { decisions: "not an array" }, meta: meta(1) },
      { type: "vendor.thing.happened", data: {}, meta: meta(2) },
    ];
    const lines = formatTimeline(unread as RecordedTurnlogEvent[]);
    expect(lines[0]).toContain("(data does not match the event catalogue)");
    expect(lines[1]).toContain("(not in this turnlog's event catalogue)");
  });
});

describe("formatOffset", () => {
  it.each([
    [12, "+0.012s"],
    [59_999, "+59.999s"],
    [125_300, "+2m05.300s"],
    [3 * 3_600_000 + 7 * 60_000, "+3h07m"],
    [Number.NaN, "+?"],
  ])("%d ms → %s", (milliseconds, text) => {
    expect(formatOffset(milliseconds)).toBe(text);
  });
});
