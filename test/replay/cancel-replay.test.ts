import { describe, expect, it } from "vitest";
import { createRuntime } from "../../src/index.js";
import type { Provider } from "../../src/providers/provider.js";
import { verifyReplay } from "../../src/replay/replay-verifier.js";
import { MemoryEventLog, scriptedProvider } from "../../src/testing/index.js";
import { ToolRegistry } from "../../src/tools/tool-registry.js";
import { sessionStream } from "../../src/core/session-stream.js";
import { cancellingTool, sequentialIds, steppingClock, workspace } from "../support/tools.js";

/*
 * A host's cancel is its own input event (turn.cancel.requested); the turn.stopped after it is the
 * decision the machine owes then, recomputed by replay like any other. Logs written before the
 * request existed hold only the stop, and still replay identical (upcastStream, docs/replay.md).
 */

/** A provider that cancels the send while it is being called, and answers only when aborted. */
function cancellingProvider(controller: AbortController): Provider {
  return {
    id: "scripted",
    format: "openai-chat",
    complete: (_request, { signal }) =>
      new Promise((_resolve, reject) => {
        signal.addEventListener("abort", () => reject(new Error("aborted")));
        controller.abort();
      }),
  };
}

async function cancelledSession(where: "tool" | "provider") {
  const controller = new AbortController();
  const ws = workspace();
  const tools = [...ws.tools, cancellingTool(controller)];
  const log = new MemoryEventLog({ clock: steppingClock(), ids: sequentialIds("event") });
  const provider = where === "tool" ? scriptedProvider([{ toolCalls: [{ name: "slow", arguments: "{}" }] }]) : cancellingProvider(controller);
  const runtime = await createRuntime({ log, provider, tools, clock: steppingClock() });
  const session = await runtime.openSession("s1");
  const outcome = await session.send("go", { signal: controller.signal });
  const events = await runtime.events("s1");
  await runtime.close();
  return { outcome, events, registry: new ToolRegistry(tools) };
}

describe("a cancelled turn", () => {
  for (const where of ["tool", "provider"] as const) {
    it(`cancelled during the ${where} call: the request and the stop it owes, in one append, and the session replays identical`, async () => {
      const { outcome, events, registry } = await cancelledSession(where);
      expect(outcome).toMatchObject({ status: "stopped", reason: "cancelled" });
      expect(events.slice(-2).map((event) => [event.type, event.data])).toEqual([
        ["turn.cancel.requested", { turnId: "turn-1" }],
        ["turn.stopped", { turnId: "turn-1", reason: "cancelled" }],
      ]);
      expect(events.at(-1)?.meta.recordedAt).toBe(events.at(-2)?.meta.recordedAt);
      const report = await verifyReplay(events, { registry });
      expect(report).toMatchObject({ identical: true, divergences: [] });
      // The stop is a decision replay recomputed, not an input taken as given.
      const withoutTheStop = await verifyReplay(events.slice(0, -1), { registry });
      expect(report.compared).toBe(withoutTheStop.compared + 1);
    });
  }

  it("a stop after the host's cancel that says anything but cancelled is a divergence", async () => {
    const { events, registry } = await cancelledSession("tool");
    const forged = events.map((event, index) => (index === events.length - 1 ? { ...event, data: { turnId: "turn-1", reason: "budget:max-iterations" } } : event));
    const report = await verifyReplay(forged, { registry });
    expect(report.identical).toBe(false);
    expect(report.divergences).toEqual([expect.objectContaining({ type: "turn.stopped", path: "data.reason", expected: "budget:max-iterations", actual: "cancelled" })]);
  });

  for (const where of ["tool", "provider"] as const) {
    it(`a log an older turnlog wrote (cancelled during the ${where} call: a bare turn.stopped, no request) still replays identical`, async () => {
      const { events, registry } = await cancelledSession(where);
      // Written again as an older turnlog wrote it: every event but the cancel request, in order.
      const older = new MemoryEventLog({ clock: steppingClock(), ids: sequentialIds("old") });
      const stream = sessionStream("s1");
      await older.appendToStream(
        stream,
        events.filter((event) => event.type !== "turn.cancel.requested").map((event) => ({ type: event.type, data: event.data })),
      );
      const recorded = await older.readStream(stream);
      expect(recorded.map((event) => event.type)).not.toContain("turn.cancel.requested");
      expect(recorded.at(-1)).toMatchObject({ type: "turn.stopped", data: { reason: "cancelled" } });
      const report = await verifyReplay(recorded, { registry });
      expect(report).toMatchObject({ identical: true, divergences: [] });
      // The old stop is checked as the decision the upcast request owes, as a new one is.
      const today = await verifyReplay(events, { registry });
      expect(report.compared).toBe(today.compared);
    });
  }
});
