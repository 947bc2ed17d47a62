import { describe, expect, it } from "vitest";
import { concurrentRuns, describeConcurrentRun } from "../../src/cli/concurrent-runs.js";
import { readEvents, type RecordedEvent, type RecordedTurnlogEvent } from "../../src/index.js";

/** Recorded tool events, positioned in the order given. */
function recorded(...events: [type: string, callId: string, tool?: string, group?: number][]): RecordedTurnlogEvent[] {
  return readEvents(events.map(([type, callId, tool, group], index): RecordedEvent => ({
    type,
    data: { turnId: "turn-1", callId, ...(tool !== undefined ? { tool } : {}), ...(group !== undefined ? { group } : {}) },
    meta: {
      eventId: `e${index + 1}`,
      stream: "session-x",
      streamPosition: index + 1,
      globalPosition: index + 1,
      recordedAt: "2025-01-01T00:00:00.000Z",
      schemaVersion: 1,
      prevHash: "",
      hash: "",
    },
  })));
}

describe("concurrentRuns", () => {
  it("finds calls of one group that started before either ended, and where the last one ended", () => {
    const runs = concurrentRuns(
      recorded(
        ["turn.tool.started", "a", "read_file", 0],
        ["turn.tool.started", "b", "list_dir", 0],
        ["turn.tool.succeeded", "a"],
        ["turn.tool.failed", "b"],
        ["turn.tool.started", "c", "write_file", 1],
        ["turn.tool.succeeded", "c"],
      ),
    );
    expect(runs).toEqual([{ turnId: "turn-1", group: 0, tools: ["read_file", "list_dir"], callIds: ["a", "b"], position: 2, endPosition: 4 }]);
    expect(runs.map(describeConcurrentRun)).toEqual(["read_file and list_dir ran side by side (group 0)"]);
  });

  it("sees no overlap in calls that ran one after the other, or in different groups", () => {
    expect(
      concurrentRuns(
        recorded(
          ["turn.tool.started", "a", "read_file", 0],
          ["turn.tool.succeeded", "a"],
          ["turn.tool.started", "b", "read_file", 0],
          ["turn.tool.succeeded", "b"],
          ["turn.tool.started", "c", "write_file", 1],
          ["turn.tool.interrupted", "c"],
        ),
      ),
    ).toEqual([]);
  });

  it("names three calls in a list, and leaves the end open while one still runs", () => {
    const [run] = concurrentRuns(
      recorded(
        ["turn.tool.started", "a", "read_file", 0],
        ["turn.tool.started", "b", "read_file", 0],
        ["turn.tool.succeeded", "a"],
        ["turn.tool.started", "c", "list_dir", 0],
      ),
    );
    expect(run).toMatchObject({ callIds: ["a", "b", "c"], position: 2 });
    expect(run?.endPosition).toBeUndefined();
    expect(describeConcurrentRun(run!)).toBe("read_file, read_file and list_dir ran side by side (group 0)");
  });
});
