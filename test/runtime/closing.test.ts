import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { z } from "zod";
import { afterEach, describe, expect, it } from "vitest";
import { createRuntime, defineTool, LevelEventLog, LogLockedError, RuntimeClosedError, sessionStream } from "../../src/index.js";
import type { EventLog, RecordedTurnlogEvent } from "../../src/index.js";
import { scriptedProvider } from "../../src/testing/index.js";
import { startLogChild } from "../support/log-child-process.js";
import { describeWithPostgres, postgresFixtures, requirePostgresUrl } from "../support/postgres.js";

/**
 * Who closes the log: `runtime.close()` closes a log the runtime opened itself, and leaves a log
 * the host passed in open for the host. A second open of a log this process still holds says so,
 * instead of blaming another process.
 */
const directories: string[] = [];
afterEach(async () => {
  await Promise.all(directories.splice(0).map((directory) => rm(directory, { recursive: true, force: true })));
});

async function freshDirectory(): Promise<string> {
  const directory = await mkdtemp(path.join(tmpdir(), "turnlog-closing-"));
  directories.push(directory);
  return directory;
}

describe("closing", () => {
  it("runtime.close() leaves a log the host passed in open: the host can still read and write it", async () => {
    const log = await LevelEventLog.open(await freshDirectory());
    const runtime = await createRuntime({ log, provider: scriptedProvider([{ content: "hello" }]) });
    await (await runtime.openSession("s1")).send("hi");
    await runtime.close();

    expect((await log.readStream("session-s1", { maxCount: 100 })).at(-1)?.type).toBe("turn.completed");
    await log.appendToStream("host-notes", [{ type: "note", data: {} }]);
    await log.close();
  });

  it("opening a log this process still holds names this process, and how to free it", async () => {
    const directory = await freshDirectory();
    const log = await LevelEventLog.open(directory);
    const runtime = await createRuntime({ log, provider: scriptedProvider([]) });
    await runtime.close();

    const reopened = LevelEventLog.open(directory);
    await expect(reopened).rejects.toSatisfy((error: unknown) => LogLockedError.isInstance(error) && error.inThisProcess);
    await expect(reopened).rejects.toThrow(/already open in this process.*runtime\.close\(\) does not close a log passed to createRuntime/);

    await log.close();
    const again = await LevelEventLog.open(directory);
    await again.close();
  });

  it("runtime.close() closes a log the runtime opened itself: the directory can be opened again at once", async () => {
    const directory = await freshDirectory();
    const previous = process.env.TURNLOG_DIR;
    process.env.TURNLOG_DIR = directory;
    try {
      const runtime = await createRuntime({ provider: scriptedProvider([]) });
      await runtime.close();
    } finally {
      if (previous === undefined) delete process.env.TURNLOG_DIR;
      else process.env.TURNLOG_DIR = previous;
    }
    const log = await LevelEventLog.open(directory);
    await log.close();
  });
});

/**
 * Issue 31: `runtime.close()` ends every wait. A `waitForAnswers()` rejects with
 * `RuntimeClosedError` (it never resolves later, when someone else answers); a `session.events()`
 * loop ends; a turn under way is cancelled and recorded before close resolves; calls made after
 * close are refused; and a process that closes while it waits exits by itself.
 */
const deploy = defineTool({
  name: "deploy",
  description: "Deploy a version",
  risk: "external-side-effect",
  input: z.object({ version: z.string() }),
  run: async ({ version }, context) => {
    // Runs until the turn is cancelled (or the test lets it go).
    await new Promise<void>((resolve) => {
      context.signal.addEventListener("abort", () => resolve(), { once: true });
      releaseDeploy.push(resolve);
    });
    return `deployed ${version}`;
  },
});
const releaseDeploy: Array<() => void> = [];
afterEach(() => {
  for (const release of releaseDeploy.splice(0)) release();
});
const deployCall = { toolCalls: [{ id: "call_d", name: "deploy", arguments: '{"version":"v2"}' }] };

async function parkedSession(log: EventLog) {
  const root = await freshDirectory();
  const policy = { approvalMode: "ask" as const, workspace: { root, trusted: true } };
  const runtime = await createRuntime({ log, provider: scriptedProvider([deployCall, { content: "Deployed." }]), tools: [deploy], policy });
  const session = await runtime.openSession("s1");
  expect(await session.send("deploy v2")).toMatchObject({ status: "awaiting-approval" });
  const reviewer = await createRuntime({ log, provider: scriptedProvider([]), tools: [deploy], policy });
  return { runtime, session, reviewer };
}

describe("runtime.close() ends every wait", () => {
  it("a pending waitForAnswers() rejects with RuntimeClosedError, and does not resolve when another runtime answers later", async () => {
    const log = await LevelEventLog.open(await freshDirectory());
    try {
      const { runtime, session, reviewer } = await parkedSession(log);
      const waiting = session.waitForAnswers().then((outcome) => outcome, (error: unknown) => error);
      await runtime.close();
      await (await reviewer.openSession("s1", { create: false })).approve("call_d", { by: "bob" });
      const ended = await waiting;
      expect(RuntimeClosedError.isInstance(ended), String(ended)).toBe(true);
      expect(ended).toMatchObject({ code: "TURNLOG_RUNTIME_CLOSED", actor: "host" });
      await reviewer.close();
    } finally {
      await log.close();
    }
  });

  it("a session.events() loop ends when the runtime closes, after every event recorded so far", async () => {
    const log = await LevelEventLog.open(await freshDirectory());
    try {
      const { runtime, session, reviewer } = await parkedSession(log);
      const recorded = (await log.readStream(sessionStream("s1"))).length;
      const seen: RecordedTurnlogEvent[] = [];
      let caughtUp!: () => void;
      const reading = new Promise<void>((resolve) => (caughtUp = resolve));
      const loop = (async () => {
        for await (const event of session.events()) {
          seen.push(event);
          if (seen.length === recorded) caughtUp();
        }
        return "ended";
      })();
      await reading;
      await runtime.close();
      expect(await loop).toBe("ended");
      expect(seen.map((event) => event.meta.streamPosition)).toEqual(Array.from({ length: recorded }, (_, index) => index + 1));
      // A loop started after close ends at once, having yielded nothing.
      const after: RecordedTurnlogEvent[] = [];
      for await (const event of session.events()) after.push(event);
      expect(after).toEqual([]);
      await reviewer.close();
    } finally {
      await log.close();
    }
  });

  it("a send under way is cancelled: close() resolves once the turn is recorded stopped (cancelled), the call's end included", async () => {
    const log = await LevelEventLog.open(await freshDirectory());
    try {
      const root = await freshDirectory();
      const runtime = await createRuntime({ log, provider: scriptedProvider([deployCall, { content: "Deployed." }]), tools: [deploy], policy: { approvalMode: "full-auto", workspace: { root, trusted: true } } });
      let started!: () => void;
      const running = new Promise<void>((resolve) => (started = resolve));
      const unsubscribe = log.subscribe((event) => event.type === "turn.tool.started" && started(), { stream: sessionStream("s1") });
      const sending = (await runtime.openSession("s1")).send("deploy v2");
      await running;
      unsubscribe();
      await runtime.close();
      // Recorded before close resolved: the log the host closes next holds the whole turn.
      const events = await log.readStream(sessionStream("s1"));
      expect(events.at(-1)).toMatchObject({ type: "turn.stopped", data: { reason: "cancelled" } });
      expect(events.filter((event) => event.type.startsWith("turn.tool.")).map((event) => event.type)).toEqual(["turn.tool.started", "turn.tool.failed"]);
      expect(await sending).toMatchObject({ status: "stopped", reason: "cancelled" });
    } finally {
      await log.close();
    }
  });

  it("after close(), opening a session and every operation of a session are refused with RuntimeClosedError, appending nothing", async () => {
    const log = await LevelEventLog.open(await freshDirectory());
    try {
      const { runtime, session, reviewer } = await parkedSession(log);
      await runtime.close();
      await runtime.close(); // twice is harmless
      const version = await log.streamVersion(sessionStream("s1"));
      const closedError = (error: unknown) => RuntimeClosedError.isInstance(error);
      await expect(session.approve("call_d", { by: "bob" })).rejects.toSatisfy(closedError);
      await expect(session.resume()).rejects.toSatisfy(closedError);
      await expect(session.send("again")).rejects.toSatisfy(closedError);
      await expect(session.waitForAnswers()).rejects.toSatisfy(closedError);
      await expect(runtime.openSession("s2")).rejects.toSatisfy(closedError);
      await expect(runtime.events("s1")).rejects.toSatisfy(closedError);
      expect(await log.streamVersion(sessionStream("s1"))).toBe(version);
      expect(await log.streamVersion(sessionStream("s2"))).toBe(0);
      await reviewer.close();
    } finally {
      await log.close();
    }
  });

  it("a process that parks a session, waits for answers (and autoResume waits too), follows its events and closes, exits by itself", async () => {
    const child = startLogChild("close-while-waiting-child.ts", ["level", await freshDirectory()]);
    const { code } = await child.exited;
    expect({ code, lines: child.lines.filter((line) => line !== "") }, child.stderr()).toEqual({
      code: 0,
      lines: ["parked", "waiting", "closed", "wait TURNLOG_RUNTIME_CLOSED", "events ended", "done"],
    });
  });
});

describeWithPostgres("runtime.close() ends every wait, on PostgreSQL", () => {
  const fixtures = postgresFixtures();
  it("a process that waits on a PostgreSQL log (LISTEN) and closes exits by itself", async () => {
    const schema = fixtures.schema("close_waits");
    await (await fixtures.open(schema)).close();
    const child = startLogChild("close-while-waiting-child.ts", ["postgres", requirePostgresUrl(), schema]);
    const { code } = await child.exited;
    expect({ code, lines: child.lines.filter((line) => line !== "") }, child.stderr()).toEqual({
      code: 0,
      lines: ["parked", "waiting", "closed", "wait TURNLOG_RUNTIME_CLOSED", "events ended", "done"],
    });
  });
});
