import { describe, expect, it } from "vitest";
import { formatTurnTable } from "../../src/cli/turn-table.js";
import { createRuntime } from "../../src/index.js";
import { SessionFold } from "../../src/core/session-fold.js";
import { MemoryEventLog, scriptedProvider } from "../../src/testing/index.js";
import { steppingClock, workspace } from "../support/tools.js";

describe("the turn table of turnlog show", () => {
  it("shows the open turn's machine state, each call's decision and outcome, and fits the width", async () => {
    const ws = workspace();
    const provider = scriptedProvider([
      { content: "reading first", toolCalls: [{ id: "call_r", name: "read_file", arguments: '{"path":"a.txt"}' }] },
      { content: "now saving a long explanation of what I am about to write and why it matters", toolCalls: [{ id: "call_w", name: "write_file", arguments: '{"path":"c.txt","content":"x"}' }] },
    ]);
    const runtime = await createRuntime({ log: new MemoryEventLog(), provider, tools: ws.tools, clock: steppingClock() });
    const session = await runtime.openSession("t1");
    expect((await session.send("go")).status).toBe("awaiting-approval");
    const events = await runtime.events("t1");
    const fold = new SessionFold();
    fold.applyAll(events);

    const lines = formatTurnTable(events, fold.state, { width: 80, machineState: fold.turnState ?? "?" });
    expect(lines[0]).toMatch(/^turn 1 {2}continued: tool-results {2}\+\d\.\d{3}s {2}\d+ms {2}1 attempt {2}"reading first"$/);
    expect(lines[1]).toMatch(/^ read_file +call_r +allow +mode:ask +succeeded +\d+ms$/);
    expect(lines[2]).toMatch(/^turn 2 {2}active · awaitingApproval +\+\d\.\d{3}s {2}1 attempt {2}"now saving a long.*…"$/);
    expect(lines[3]).toMatch(/^ write_file +call_w +ask +mode:ask +pending$/);
    for (const line of lines) expect(line.length).toBeLessThanOrEqual(80);

    await session.approve("call_w", { by: "rita" });
    await session.resume();
    const after = await runtime.events("t1");
    const done = new SessionFold();
    done.applyAll(after);
    const final = formatTurnTable(after, done.state);
    expect(final).toContainEqual(expect.stringMatching(/^ write_file +call_w +ask +mode:ask · approved by rita +succeeded +\d+ms$/));
  });
});
