import path from "node:path";
import { describe, expect, it } from "vitest";
import { LevelEventLog } from "../../src/index.js";
import { expectOneCleanLine, useDemoSession } from "./support/demo-fixture.js";

/* `turnlog show --at` and `turnlog fork`, run in-process (runCli) on the demo's log. Positions are the
   demo's: #11 is the first gate (after #10 session.environment.observed), #13 the first tool start. */

const demo = useDemoSession("fork");
const { turnlog } = demo;

describe("turnlog show --at", () => {
  it("prints the timeline up to N and the state there: turn, machine state, calls", async () => {
    const run = await turnlog("show", demo.sessionId, "--dir", demo.logDir, "--at", "13");
    expect(run.stderr).toBe("");
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(new RegExp(`session\\s+${demo.sessionId} · at #13 of \\d+`));
    expect(run.stdout).toMatch(/#13 .*turn\.tool\.started/);
    expect(run.stdout).not.toMatch(/#14 /);
    expect(run.stdout).toContain("state at #13: active · 1 user message, 1 turn · turn 1 (turn-1, iteration 1) active, machine state running");
    expect(run.stdout).toMatch(/read_file call_read_notes running/);
    expect(run.stdout).toMatch(/write_file call_save_summary allowed/);
    expect(run.stdout).toMatch(/delete_everything call_cleanup rejected/);
  });

  it("shows the held call at the gate's position", async () => {
    const run = await turnlog("show", demo.sessionId, "--dir", demo.logDir, "--at", "11");
    expect(run.stdout).toContain("machine state awaitingApproval");
    expect(run.stdout).toMatch(/write_file call_save_summary awaiting-approval/);
  });

  it("rejects a position beyond the end (exit 1) or not a position (exit 2), in one line", async () => {
    const beyond = await turnlog("show", demo.sessionId, "--dir", demo.logDir, "--at", "99999");
    expect(beyond.code).toBe(1);
    expectOneCleanLine(beyond.stderr);
    expect(beyond.stderr).toMatch(/position 99999 is beyond its end/);
    const bad = await turnlog("show", demo.sessionId, "--dir", demo.logDir, "--at", "0");
    expect(bad.code).toBe(2);
    expectOneCleanLine(bad.stderr);
  });
});

describe("turnlog fork", () => {
  it("creates the new session, prints its ID and how to show it; the log still verifies", async () => {
    const run = await turnlog("fork", demo.sessionId, "--dir", demo.logDir, "--at", "11", "--to", "fork-a");
    expect(run.stderr).toBe("");
    expect(run.code).toBe(0);
    expect(run.stdout).toContain(`forked fork-a from ${demo.sessionId} at #11 (11 events copied`);
    expect(run.stdout).toContain(`npx turnlog show fork-a --dir ${demo.logDir}`);

    const show = await turnlog("show", "fork-a", "--dir", demo.logDir);
    expect(show.code).toBe(0);
    expect(show.stdout).toMatch(/awaiting approval/);
    expect(show.stdout).not.toMatch(/#12 /);
    expect((await turnlog("verify", "--dir", demo.logDir)).code).toBe(0);

    const log = await LevelEventLog.open(path.join(demo.workDir, demo.logDir), { durability: "sync" });
    try {
      const [started] = await log.readStream("session-fork-a", { maxCount: 1 });
      expect(started?.data).toMatchObject({ sessionId: "fork-a", forkedFrom: { sessionId: demo.sessionId, position: 11 } });
    } finally {
      await log.close();
    }
  });

  it("moves a position inside a provider request's decision back to before it, and says so", async () => {
    const log = await LevelEventLog.open(path.join(demo.workDir, demo.logDir), { durability: "sync" });
    let diagnostic: number;
    let started: number;
    try {
      const events = await log.readStream(`session-${demo.sessionId}`);
      diagnostic = events.find((event) => event.type === "session.diagnostic.recorded")!.meta.streamPosition;
      started = events.findLast((event) => event.meta.streamPosition < diagnostic && event.type !== "session.diagnostic.recorded")!.meta.streamPosition;
      expect(events[started - 1]?.type).toBe("turn.started");
    } finally {
      await log.close();
    }
    const run = await turnlog("fork", demo.sessionId, "--dir", demo.logDir, "--at", String(diagnostic), "--to", "fork-inside");
    expect(run.stderr).toBe("");
    expect(run.code).toBe(0);
    expect(run.stdout).toContain(`forked fork-inside from ${demo.sessionId} at #${started} (${started} events copied`);
    expect(run.stdout).toContain(`#${diagnostic} is inside a provider request's decision (its history decisions are written with the request): the copy ends before it, at #${started}`);
    const replay = await turnlog("replay", "fork-inside", "--dir", demo.logDir);
    expect(replay.code).toBe(0);
  });

  it("refuses an existing --to, an unknown session and a bad position with one line and exit 1 / 2", async () => {
    const again = await turnlog("fork", demo.sessionId, "--dir", demo.logDir, "--at", "3", "--to", demo.sessionId);
    expect(again.code).toBe(2);
    const existing = await turnlog("fork", demo.sessionId, "--dir", demo.logDir, "--at", "3", "--to", "fork-b");
    expect(existing.code).toBe(0);
    const taken = await turnlog("fork", demo.sessionId, "--dir", demo.logDir, "--at", "3", "--to", "fork-b");
    expect(taken.code).toBe(1);
    expectOneCleanLine(taken.stderr);
    expect(taken.stderr).toContain('session "fork-b" already exists');
    const unknown = await turnlog("fork", "nope", "--dir", demo.logDir, "--at", "1", "--to", "fork-c");
    expect(unknown.code).toBe(1);
    expectOneCleanLine(unknown.stderr);
    const beyond = await turnlog("fork", demo.sessionId, "--dir", demo.logDir, "--at", "99999", "--to", "fork-c");
    expect(beyond.code).toBe(1);
    expectOneCleanLine(beyond.stderr);
    const missing = await turnlog("fork", demo.sessionId, "--dir", demo.logDir, "--to", "fork-c");
    expect(missing.code).toBe(2);
    expectOneCleanLine(missing.stderr);
    const sessions = await turnlog("sessions", "--dir", demo.logDir, "--json");
    expect(sessions.stdout).not.toContain("fork-c");
  });
});
