import { describe, expect, it } from "vitest";
import { createRuntime, ExpectedVersionConflictError, PositionOutOfRangeError, UnknownSessionError } from "../../src/index.js";
import type { EventLog, RecordedEvent } from "../../src/index.js";
import { MemoryEventLog, scriptedProvider } from "../../src/testing/index.js";
import type { ScriptStep } from "../../src/testing/index.js";
import { sequentialIds, steppingClock, workspace } from "../support/tools.js";

const read = (path: string, id: string) => ({ id, name: "read_file", arguments: JSON.stringify({ path }) });
const write = (path: string, content: string, id: string) => ({ id, name: "write_file", arguments: JSON.stringify({ path, content }) });

async function runtimeOn(log: EventLog, script: ScriptStep[], prefix: string) {
  const ws = workspace();
  const provider = scriptedProvider(script);
  const runtime = await createRuntime({ log, provider, tools: ws.tools, clock: steppingClock(), ids: sequentialIds(prefix) });
  return { ws, provider, runtime };
}

const plain = (events: RecordedEvent[]) => events.map((event) => ({ type: event.type, data: event.data }));

describe("runtime.fork", () => {
  it("copies a completed message into a new session that continues with another provider", async () => {
    const log = new MemoryEventLog({ clock: steppingClock(), ids: sequentialIds("event") });
    const source = await runtimeOn(log, [{ toolCalls: [read("a.txt", "call_a")] }, { content: "a says alpha" }, { content: "source second" }], "src");
    const s1 = await source.runtime.openSession("s1");
    expect(await s1.send("what is in a.txt?")).toMatchObject({ status: "completed" });
    const cut = await log.streamVersion("session-s1");
    expect(await s1.send("and again?")).toMatchObject({ status: "completed", text: "source second" });
    const sourceBefore = await source.runtime.events("s1");

    expect(await source.runtime.fork("s1", { at: cut, to: "s2" })).toEqual({ sessionId: "s2", forkedFrom: { sessionId: "s1", position: cut }, copied: cut });

    const forked = await source.runtime.events("s2");
    expect(forked).toHaveLength(cut);
    // Its origin is recorded; every copied event points at the one it copies; its chain is its own.
    expect(forked[0]?.data).toMatchObject({ sessionId: "s2", forkedFrom: { sessionId: "s1", position: cut } });
    forked.forEach((event, index) => {
      const original = sourceBefore[index]!;
      expect(event.meta.causationId).toBe(original.meta.eventId);
      expect(event.meta.eventId).not.toBe(original.meta.eventId);
      expect(event.meta.hash).not.toBe(original.meta.hash);
      if (index > 0) expect({ type: event.type, data: event.data }).toEqual({ type: original.type, data: original.data });
    });

    // A different provider continues the fork.
    const other = await runtimeOn(log, [{ content: "fork answer" }], "other");
    const s2 = await other.runtime.openSession("s2");
    expect(s2.state().messages.map((message) => message.content)).toEqual(["what is in a.txt?", "", "alpha", "a says alpha"]);
    expect(await s2.send("something else")).toMatchObject({ status: "completed", text: "fork answer" });
    other.provider.assertConsumed();

    const sourceAfter = await source.runtime.events("s1");
    expect(plain(sourceAfter)).toEqual(plain(sourceBefore));
    expect(sourceAfter.map((event) => event.meta.hash)).toEqual(sourceBefore.map((event) => event.meta.hash));
    expect(await log.verify()).toMatchObject({ ok: true });
    expect(await other.runtime.replay("s2")).toMatchObject({ identical: true, divergences: [] });
    expect(await source.runtime.replay("s1")).toMatchObject({ identical: true });
    expect((await other.runtime.stateAt("s2", cut)).messages).toEqual((await source.runtime.stateAt("s1", cut)).messages);
  });

  it("keeps the derived IDs of copied turns, so a fork with ID-less calls replays identical", async () => {
    const log = new MemoryEventLog({ clock: steppingClock(), ids: sequentialIds("event") });
    const idless = { name: "read_file", arguments: JSON.stringify({ path: "a.txt" }) };
    const source = await runtimeOn(log, [{ toolCalls: [idless] }, { content: "done" }], "src");
    await (await source.runtime.openSession("s1")).send("read");
    // Cut right after the turn started: the fork normalizes the call itself, as the source would.
    const started = (await source.runtime.events("s1")).find((event) => event.type === "turn.started")!.meta.streamPosition;
    await source.runtime.fork("s1", { at: (await log.streamVersion("session-s1")), to: "whole" });
    await source.runtime.fork("s1", { at: started, to: "early" });
    const continued = await runtimeOn(log, [{ toolCalls: [idless] }, { content: "done" }], "other");
    expect(await (await continued.runtime.openSession("early")).resume()).toMatchObject({ status: "completed" });
    const sourceId = [...(await source.runtime.stateAt("s1", await log.streamVersion("session-s1"))).calls.keys()][0];
    const earlyId = [...(await continued.runtime.stateAt("early", await log.streamVersion("session-early"))).calls.keys()][0];
    expect(earlyId).toBe(sourceId);
    expect(await continued.runtime.replay("whole")).toMatchObject({ identical: true });
    expect(await continued.runtime.replay("early")).toMatchObject({ identical: true });
  });

  it("forks mid-turn, right after the gate asked; the fork is approved while the source is denied", async () => {
    const log = new MemoryEventLog({ clock: steppingClock(), ids: sequentialIds("event") });
    const source = await runtimeOn(log, [{ toolCalls: [write("b.txt", "new beta", "call_w")] }, { content: "not written" }], "src");
    const s1 = await source.runtime.openSession("s1");
    expect(await s1.send("update b.txt")).toMatchObject({ status: "awaiting-approval", pendingApprovals: [{ callId: "call_w" }] });
    const gated = (await source.runtime.events("s1")).find((event) => event.type === "turn.tool_calls.gated");
    expect(gated?.data).toMatchObject({ decisions: [{ callId: "call_w", decision: "ask" }] });
    const at = gated!.meta.streamPosition;

    await source.runtime.fork("s1", { at, to: "s3" });
    await s1.deny("call_w", { by: "alice" });
    expect(await s1.resume()).toMatchObject({ status: "completed", text: "not written" });
    expect(source.ws.ran).toEqual([]);

    const other = await runtimeOn(log, [{ content: "written" }], "other");
    const s3 = await other.runtime.openSession("s3");
    expect(s3.state().calls.get("call_w")?.status).toBe("awaiting-approval");
    await s3.approve("call_w", { by: "bob" });
    expect(await s3.resume()).toMatchObject({ status: "completed", text: "written" });
    expect(other.ws.ran).toEqual(["write_file b.txt"]);
    expect(other.ws.files.get("b.txt")).toBe("new beta");

    expect(await log.verify()).toMatchObject({ ok: true });
    expect(await other.runtime.replay("s3")).toMatchObject({ identical: true });
    expect(await source.runtime.replay("s1")).toMatchObject({ identical: true });
  });

  it("cut in the middle of a tool run: openSession on the fork recovers the turn as after a crash", async () => {
    const log = new MemoryEventLog({ clock: steppingClock(), ids: sequentialIds("event") });
    const source = await runtimeOn(log, [{ toolCalls: [write("b.txt", "x", "call_w")] }, { content: "done" }], "src");
    const s1 = await source.runtime.openSession("s1");
    await s1.send("write");
    await s1.approve("call_w", { by: "alice" });
    await s1.resume();
    const started = (await source.runtime.events("s1")).find((event) => event.type === "turn.tool.started");
    await source.runtime.fork("s1", { at: started!.meta.streamPosition, to: "s4" });
    const other = await runtimeOn(log, [{ content: "after the interruption" }], "other");
    const s4 = await other.runtime.openSession("s4");
    // write_file is not safe to repeat: recovery marks it interrupted and never runs it again.
    expect(s4.state().calls.get("call_w")?.status).toBe("interrupted");
    expect(await s4.resume()).toMatchObject({ status: "completed", text: "after the interruption" });
    expect(other.ws.ran).toEqual([]);
    expect(await other.runtime.replay("s4")).toMatchObject({ identical: true });
  });

  it("moves a cut inside a provider request's decision back to before it, and the fork replays identical", async () => {
    const log = new MemoryEventLog({ clock: steppingClock(), ids: sequentialIds("event") });
    const source = await runtimeOn(log, [{ toolCalls: [read("a.txt", "call_a")] }, { content: "a says alpha" }], "src");
    expect(await (await source.runtime.openSession("s1")).send("what is in a.txt?")).toMatchObject({ status: "completed" });
    const events = await source.runtime.events("s1");
    // turn.started, then the request's history decisions and the request, written in one append.
    const started = events.find((event) => event.type === "turn.started")!.meta.streamPosition;
    const requested = events.find((event) => event.type === "turn.provider.requested")!.meta.streamPosition;
    expect(events.slice(started, requested - 1).map((event) => event.type)).toEqual(["session.diagnostic.recorded", "session.diagnostic.recorded"]);

    for (const at of [started + 1, requested - 1]) {
      const to = `inside-${at}`;
      expect(await source.runtime.fork("s1", { at, to })).toEqual({ sessionId: to, forkedFrom: { sessionId: "s1", position: started }, copied: started, movedFrom: at });
      expect((await source.runtime.events(to)).at(-1)?.type).toBe("turn.started");
      const other = await runtimeOn(log, [{ content: "fork answer" }, { content: "and more" }], "other");
      const fork = await other.runtime.openSession(to);
      expect(await fork.resume()).toMatchObject({ status: "completed", text: "fork answer" });
      expect(await fork.send("more?")).toMatchObject({ status: "completed", text: "and more" });
      expect(await other.runtime.replay(to)).toMatchObject({ identical: true, divergences: [] });
    }
    // A cut at the request itself, or right after turn.started, is where the session stood: kept.
    expect(await source.runtime.fork("s1", { at: requested, to: "at-request" })).toEqual({ sessionId: "at-request", forkedFrom: { sessionId: "s1", position: requested }, copied: requested });
    expect(await source.runtime.fork("s1", { at: started, to: "at-start" })).toEqual({ sessionId: "at-start", forkedFrom: { sessionId: "s1", position: started }, copied: started });
  });

  it("keeps the spacing of the source's times, so a turn its wall-clock budget stopped replays identical in the fork", async () => {
    const log = new MemoryEventLog({ clock: steppingClock(), ids: sequentialIds("event") });
    const ws = workspace();
    const runtime = await createRuntime({ log, provider: scriptedProvider([{ toolCalls: [read("a.txt", "call_a")] }]), tools: ws.tools, clock: steppingClock(), budgets: { wallClockMs: 3 } });
    expect(await (await runtime.openSession("s1")).send("read a.txt")).toMatchObject({ status: "stopped", reason: "budget:wall-clock" });
    const source = await runtime.events("s1");
    const at = source.length;

    await runtime.fork("s1", { at, to: "s2" });
    expect(await runtime.replay("s2")).toMatchObject({ identical: true, divergences: [] });
    const forked = await runtime.events("s2");
    const spacing = (events: RecordedEvent[]) => events.map((event) => Date.parse(event.meta.recordedAt) - Date.parse(events[0]!.meta.recordedAt));
    expect(spacing(forked)).toEqual(spacing(source));
    // The last copied event is recorded at the fork's time, after the source's.
    expect(Date.parse(forked.at(-1)!.meta.recordedAt)).toBeGreaterThan(Date.parse(source.at(-1)!.meta.recordedAt));
    expect(await log.verify()).toMatchObject({ ok: true });
  });

  it("refuses an existing target, an unknown source and a position outside the stream", async () => {
    const log = new MemoryEventLog();
    const { runtime } = await runtimeOn(log, [{ content: "hi" }], "src");
    await (await runtime.openSession("s1")).send("hello");
    await runtime.openSession("taken");
    const version = await log.streamVersion("session-s1");
    await expect(runtime.fork("s1", { at: 1, to: "taken" })).rejects.toThrow(ExpectedVersionConflictError);
    await expect(runtime.fork("s1", { at: 1, to: "taken" })).rejects.toMatchObject({ expected: "STREAM_DOES_NOT_EXIST" });
    await expect(runtime.fork("ghost", { at: 1, to: "new" })).rejects.toThrow(UnknownSessionError);
    await expect(runtime.fork("s1", { at: version + 1, to: "new" })).rejects.toThrow(PositionOutOfRangeError);
    await expect(runtime.fork("s1", { at: 0, to: "new" })).rejects.toThrow(TypeError);
    await expect(runtime.fork("s1", { at: 1, to: "bad id!" })).rejects.toThrow(TypeError);
    expect(await log.streamExists("session-new")).toBe(false);
  });
});
