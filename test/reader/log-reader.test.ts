import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import {
  createLogReader,
  createRuntime,
  ExpectedVersionConflictError,
  generateSealKey,
  LevelEventLog,
  LogClosedError,
  LogLockedError,
  LogNotFoundError,
  openLog,
  PositionOutOfRangeError,
  SealWitness,
  UnknownSessionError,
  type SealKey,
} from "../../src/index.js";
import { scriptedProvider } from "../../src/testing/index.js";
import { sequentialIds, steppingClock, workspace } from "../support/tools.js";

const read = (path: string) => ({ name: "read_file", arguments: JSON.stringify({ path }) });
const write = (path: string, content: string) => ({ name: "write_file", arguments: JSON.stringify({ path, content }) });

let dir: string;
let keyDirectory: string;
let key: SealKey;
let witness: SealWitness;

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), "turnlog-reader-"));
  keyDirectory = await mkdtemp(join(tmpdir(), "turnlog-reader-keys-"));
  key = generateSealKey();
  witness = SealWitness.forLogDirectory(dir, { directory: keyDirectory });
});

afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
  await rm(keyDirectory, { recursive: true, force: true });
});

/** A sealing runtime over the LevelDB log at `dir`, with the workspace tools (in `auto-edit` unless told). */
async function runtimeAt(script: Parameters<typeof scriptedProvider>[0] = [], tools = workspace().tools, approvalMode: "ask" | "auto-edit" = "auto-edit") {
  return createRuntime({
    log: await LevelEventLog.open(dir, { durability: "relaxed" }),
    provider: scriptedProvider(script),
    tools,
    policy: { approvalMode, workspace: { root: "/workspace", trusted: true } },
    clock: steppingClock(),
    ids: sequentialIds("r"),
    seals: { key, witness },
  });
}

/**
 * Records two sessions on disk, closing each runtime: "done" reads, reads and writes, and
 * completes (auto-edit); "held" asks to write (ask) and waits for a person.
 */
async function recordSessions() {
  const ws = workspace();
  const runtime = await runtimeAt([{ toolCalls: [read("a.txt"), read("b.txt")] }, { toolCalls: [read("a.txt"), write("c.txt", "ab")] }, { content: "done" }], ws.tools);
  const recorded = await (async () => {
    try {
      const done = await runtime.openSession("done");
      expect(await done.send("combine")).toMatchObject({ status: "completed" });
      return {
        tools: ws.tools,
        state: done.state(),
        history: { openai: done.history({ format: "openai-chat" }), anthropic: done.history({ format: "anthropic-messages", maxTokens: 50 }) },
      };
    } finally {
      await runtime.close();
      await runtime.log.close();
    }
  })();
  const asking = await runtimeAt([{ toolCalls: [write("d.txt", "x")] }], ws.tools, "ask");
  try {
    const held = await asking.openSession("held");
    expect(await held.send("write d")).toMatchObject({ status: "awaiting-approval" });
    return { ...recorded, held: held.state() };
  } finally {
    await asking.close();
    await asking.log.close();
  }
}

describe("the read API", () => {
  it("a reader opened on the directory, with no provider, gives the runtime's events, state, audit, history, replay and verify reports", async () => {
    const recorded = await recordSessions();
    // The runtime's own answers, from a runtime reopened on the same log.
    const runtime = await runtimeAt([], recorded.tools);
    const fromRuntime = {
      sessions: await runtime.listSessions(),
      events: await runtime.events("done"),
      audit: await runtime.audit("done"),
      replay: await runtime.replay("done"),
      stateAt: await runtime.stateAt("done", 9),
      verify: await runtime.verify(),
    };
    await runtime.close();
    await runtime.log.close();

    const reader = await openLog({ dir, tools: recorded.tools, seals: { key, witness } });
    try {
      expect(await reader.sessionIds()).toEqual(fromRuntime.sessions);
      expect(await reader.events("done")).toEqual(fromRuntime.events);
      expect(await reader.state("done")).toEqual(recorded.state);
      expect(await reader.audit("done")).toEqual(fromRuntime.audit);
      expect(fromRuntime.audit.map((row) => row.outcome)).toEqual(["succeeded", "succeeded", "succeeded", "succeeded"]);
      expect(await reader.history("done", { format: "openai-chat" })).toEqual(recorded.history.openai);
      expect(await reader.history("done", { format: "anthropic-messages", maxTokens: 50 })).toEqual(recorded.history.anthropic);
      expect(await reader.replay("done")).toEqual(fromRuntime.replay);
      expect(fromRuntime.replay).toMatchObject({ identical: true, divergences: [] });
      expect(await reader.stateAt("done", 9)).toEqual(fromRuntime.stateAt);
      expect(await reader.verify()).toEqual(fromRuntime.verify);
      expect(fromRuntime.verify).toMatchObject({ ok: true, faults: [] });
      // A slice of the events, by stream position.
      expect(await reader.events("done", { from: 2, to: 4 })).toEqual(fromRuntime.events.slice(1, 4));
    } finally {
      await reader.close();
    }
  });

  it("lists every session with its size, last activity and status, and a damaged one as unreadable without hiding the others", async () => {
    const recorded = await recordSessions();
    const log = await LevelEventLog.open(dir, { durability: "relaxed" });
    // A stream the projection cannot fold: a session.started with no data.
    await log.appendToStream("session-broken", [{ type: "session.started", data: null }]);
    const reader = createLogReader(log);
    const rows = await reader.sessions();
    await log.close();
    expect(rows.map((row) => [row.id, row.status])).toEqual(
      expect.arrayContaining([
        ["done", "completed"],
        ["held", "awaiting-approval"],
        ["broken", "unreadable"],
      ]),
    );
    expect(rows).toHaveLength(3);
    expect(rows.find((row) => row.id === "done")).toEqual({ id: "done", events: expect.any(Number), lastRecordedAt: recorded.state.lastRecordedAt, status: "completed" });
    expect(rows.find((row) => row.id === "broken")).toEqual({ id: "broken", events: 1, lastRecordedAt: null, status: "unreadable" });
  });

  it("views a session at any position: its events so far, the state, the open turn's machine state and the held calls", async () => {
    const recorded = await recordSessions();
    const reader = await openLog(dir);
    try {
      const now = await reader.view("held");
      expect(now).toMatchObject({ sessionId: "held", status: "awaiting-approval", machineState: "awaitingApproval", state: recorded.held });
      expect(now.position).toBe(now.length);
      expect(now.pendingApprovals.map((call) => call.name)).toEqual(["write_file"]);
      expect(now.audit.map((row) => [row.tool, row.decision, row.outcome])).toEqual([["write_file", "ask", "pending"]]);
      const start = await reader.view("held", { at: 1 });
      expect(start).toMatchObject({ position: 1, length: now.length, status: "idle", pendingApprovals: [] });
      expect(start.events).toEqual(now.events.slice(0, 1));
      expect(start.machineState).toBeUndefined();
      await expect(reader.view("held", { at: now.length + 1 })).rejects.toBeInstanceOf(PositionOutOfRangeError);
    } finally {
      await reader.close();
    }
  });

  it("a what-if replay through the reader gives the runtime's report: the write that a deny rule would stop", async () => {
    const recorded = await recordSessions();
    const whatIf = { policy: { deny: [{ tool: "write_file" }] } };
    const runtime = await runtimeAt([], recorded.tools);
    const fromRuntime = await runtime.replay("done", whatIf);
    const preview = await runtime.replay("done", { decisionsVersion: "latest" });
    await runtime.close();
    await runtime.log.close();

    const reader = await openLog({ dir, tools: recorded.tools });
    try {
      const report = await reader.replay("done", whatIf);
      expect(report).toEqual(fromRuntime);
      expect(report.identical).toBe(false);
      expect(report.changes.map((change) => [change.tool, change.before?.decision, change.after?.decision])).toEqual([["write_file", "allow", "deny"]]);
      expect(await reader.replay("done", { decisionsVersion: "latest" })).toEqual(preview);
    } finally {
      await reader.close();
    }
  });

  it("with no host tools, replay rebuilds every tool from the log and still finds the session identical", async () => {
    await recordSessions();
    const reader = await openLog(dir);
    try {
      const report = await reader.replay("done");
      expect(report).toMatchObject({ identical: true, divergences: [] });
      expect(report.toolsFromLog.sort()).toEqual(["read_file", "write_file"]);
    } finally {
      await reader.close();
    }
  });

  it("openLog owns the log: close() releases the directory, so a runtime can open it afterwards", async () => {
    await recordSessions();
    const reader = await openLog({ dir });
    expect(await reader.sessionIds()).toEqual(["done", "held"]);
    // While the reader holds it, the directory is locked.
    await expect(LevelEventLog.open(dir)).rejects.toSatisfy((error) => LogLockedError.isInstance(error));
    await reader.close();
    const runtime = await runtimeAt([{ content: "written" }]);
    try {
      expect(await runtime.listSessions()).toEqual(["done", "held"]);
    } finally {
      await runtime.close();
      await runtime.log.close();
    }
    await expect(reader.events("done")).rejects.toSatisfy((error) => LogClosedError.isInstance(error));
  });

  it("openLog never creates a log where there is none", async () => {
    const missing = join(dir, "nothing-here");
    await expect(openLog({ dir: missing })).rejects.toSatisfy((error) => LogNotFoundError.isInstance(error) && (error as LogNotFoundError).directory === missing);
    const created = await openLog({ dir: missing, create: true });
    expect(await created.sessions()).toEqual([]);
    await created.close();
  });

  it("createLogReader over a host's log: close() leaves that log open for the host", async () => {
    const runtime = await runtimeAt([{ content: "one" }, { content: "two" }]);
    try {
      const session = await runtime.openSession("host");
      await session.send("first");
      const reader = createLogReader(runtime.log);
      expect((await reader.state("host")).lastOutcome).toMatchObject({ status: "completed", text: "one" });
      await reader.close();
      await expect(reader.state("host")).rejects.toSatisfy((error) => LogClosedError.isInstance(error));
      // The host's log and runtime go on.
      expect(await session.send("second")).toMatchObject({ status: "completed", text: "two" });
      expect((await runtime.events("host")).length).toBeGreaterThan(0);
    } finally {
      await runtime.close();
      await runtime.log.close();
    }
  });

  it("forks through the reader: a new, sealed session a runtime then continues", async () => {
    const recorded = await recordSessions();
    const reader = await openLog({ dir, seals: { key, witness } });
    let copied: number;
    try {
      const events = await reader.events("done");
      const at = events.findIndex((event) => event.type === "turn.completed") + 1;
      const forked = await reader.fork("done", { at, to: "done-fork" });
      expect(forked).toEqual({ sessionId: "done-fork", forkedFrom: { sessionId: "done", position: at }, copied: at });
      copied = forked.copied;
      const copy = await reader.events("done-fork");
      expect(copy.map((event) => event.type)).toEqual(events.slice(0, at).map((event) => event.type));
      expect((await reader.state("done-fork")).lastOutcome).toEqual(recorded.state.lastOutcome);
      // Sealed at once: nothing of it is left unsealed.
      const report = await reader.verify();
      expect(report.ok).toBe(true);
      expect(report.unsealed.filter((tail) => tail.stream === "session-done-fork")).toEqual([]);
      await expect(reader.fork("done", { at: 1, to: "done-fork" })).rejects.toSatisfy((error) => ExpectedVersionConflictError.isInstance(error));
      await expect(reader.fork("done", { at: 1, to: "not a valid id" })).rejects.toBeInstanceOf(TypeError);
    } finally {
      await reader.close();
    }
    const runtime = await runtimeAt([{ content: "more" }], recorded.tools);
    try {
      const session = await runtime.openSession("done-fork");
      expect(await session.send("and then?")).toMatchObject({ status: "completed", text: "more" });
      expect((await runtime.events("done-fork")).length).toBeGreaterThan(copied);
    } finally {
      await runtime.close();
      await runtime.log.close();
    }
  });

  it("an unknown session is an UnknownSessionError from every method that reads one", async () => {
    await recordSessions();
    const reader = await openLog(dir);
    try {
      // Each call is made only when its rejection is awaited, so none goes unhandled meanwhile.
      const calls = [
        () => reader.events("nobody"),
        () => reader.events("nobody", { from: 1, to: 2 }),
        () => reader.state("nobody"),
        () => reader.stateAt("nobody", 1),
        () => reader.view("nobody"),
        () => reader.audit("nobody"),
        () => reader.history("nobody", { format: "openai-chat" }),
        () => reader.replay("nobody"),
        () => reader.fork("nobody", { at: 1, to: "somebody" }),
      ];
      for (const call of calls) await expect(call()).rejects.toSatisfy((error) => UnknownSessionError.isInstance(error) && (error as UnknownSessionError).sessionId === "nobody");
      expect(await reader.sessionIds()).not.toContain("somebody");
    } finally {
      await reader.close();
    }
  });
});
