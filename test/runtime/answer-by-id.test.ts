import { mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { answerHeldCall, openLog } from "../../src/index.js";
import { startLogChild, type LogChildProcess } from "../support/log-child-process.js";
import { describeWithPostgres, dropSchema, freshSchemaName, requirePostgresUrl } from "../support/postgres.js";
import { approvalFinalAnswer, approvalSessionId, approvalTools } from "../support/approval-host-script.js";
import { ensureBuiltCli, runTurnlog } from "../cli/support/turnlog-bin.js";

/**
 * Issue 33, "answer by ID from anywhere", with real processes: a host parks a session for approval
 * and keeps running; a process with no tools and no provider answers it — the built `turnlog
 * approve` / `turnlog deny`, or the read API — and the host finishes the turn without a restart.
 * On LevelDB the host holds the log the whole time, so the answer travels through its owner
 * channel and the host records it; on PostgreSQL the answering process appends it. The tool runs
 * once (by its effect, a line in a file), and the session replays identical.
 */

const directories: string[] = [];
beforeAll(async () => {
  await ensureBuiltCli();
}, 120_000);
afterAll(async () => {
  await Promise.all(directories.map((directory) => rm(directory, { recursive: true, force: true })));
});

async function scratch(): Promise<{ directory: string; effectsFile: string }> {
  const directory = await mkdtemp(join(tmpdir(), "turnlog-answer-"));
  directories.push(directory);
  const effectsFile = join(directory, "effects.txt");
  await writeFile(effectsFile, "");
  return { directory, effectsFile };
}

async function parkedCall(host: LogChildProcess): Promise<string> {
  await host.waitForLine((line) => line.startsWith("parked "));
  return host.lines.find((line) => line.startsWith("parked "))?.slice("parked ".length) ?? "";
}

/** What a session's log says once its host is done: the answers, the tool's starts, the last event, and replay. */
async function settled(location: { dir: string } | { url: string; schema: string }, effectsFile: string) {
  const reader = await openLog({ ...location, tools: approvalTools(effectsFile) });
  try {
    const events = await reader.events(approvalSessionId);
    return {
      answers: events.filter((event) => event.type === "turn.approval.granted" || event.type === "turn.approval.denied").map((event) => ({ type: event.type, by: (event.data as { by: string }).by })),
      toolStarts: events.filter((event) => event.type === "turn.tool.started").length,
      configChanges: events.filter((event) => event.type === "session.config.changed").length,
      last: events.at(-1)?.type,
      replay: (await reader.replay(approvalSessionId)).identical,
    };
  } finally {
    await reader.close();
  }
}

describe("answering a session a host holds on LevelDB, through its owner channel", () => {
  it("turnlog approve: the host (autoResume) records it, runs the tool once and finishes the turn", async () => {
    const { directory, effectsFile } = await scratch();
    const dir = join(directory, "log");
    const host = startLogChild("approval-host-child.ts", [dir, effectsFile, directory, "auto"]);
    try {
      const callId = await parkedCall(host);
      expect(await readFile(effectsFile, "utf8")).toBe("");

      // A call that is not held: one line, exit 1, nothing recorded.
      const wrong = await runTurnlog(["approve", approvalSessionId, "call_nobody_made", "--dir", dir, "--by", "ana"], { cwd: directory });
      expect(wrong.code).toBe(1);
      expect(wrong.stdout).toBe("");
      expect(wrong.stderr).toMatch(/^turnlog: call call_nobody_made is not awaiting approval in session deploy-1 — [^\n]*\n$/);

      const approve = await runTurnlog(["approve", approvalSessionId, callId, "--dir", dir, "--by", "ana", "--note", "ship it"], { cwd: directory });
      expect(approve.stderr).toBe("");
      expect(approve.code).toBe(0);
      expect(approve.stdout).toContain(`✓ approved deploy ${callId} by ana`);

      await host.waitForLine((line) => line.startsWith("final "));
      expect(await host.exited).toMatchObject({ code: 0 });
      expect(host.lines.at(-1)).toBe(`final completed ${approvalFinalAnswer}`);
    } finally {
      host.child.kill("SIGKILL");
    }
    expect(await readFile(effectsFile, "utf8")).toMatch(/^deploy-1 \S+\n$/);
    expect(await settled({ dir }, effectsFile)).toEqual({ answers: [{ type: "turn.approval.granted", by: "ana" }], toolStarts: 1, configChanges: 0, last: "turn.completed", replay: true });
  }, 120_000);

  it("turnlog approve --arguments: the host judges the edit as the session's runner (a path edit it can resolve), runs the write with it; an edit leaving the workspace is refused and nothing is written", async () => {
    const { directory } = await scratch();
    const dir = join(directory, "log");
    const workspace = join(directory, "workspace");
    await mkdir(workspace);
    const canary = join(directory, "outside.txt");
    await writeFile(canary, "canary\n");
    const host = startLogChild("edit-level-host-child.ts", [dir, workspace]);
    try {
      await host.waitForLine((line) => line.startsWith("parked "));
      const callId = host.lines.find((line) => line.startsWith("parked "))?.slice("parked ".length) ?? "";

      // Widening: a path outside the workspace. Refused in one line; the host records nothing.
      const widening = await runTurnlog(["approve", "notes-1", callId, "--dir", dir, "--by", "ana", "--arguments", JSON.stringify({ path: "../outside.txt", content: "owned" })], { cwd: directory });
      expect(widening.code).toBe(1);
      expect(widening.stderr).toMatch(/^turnlog: .*an edit never widens what the policy allows[^\n]*\n$/);

      const edited = await runTurnlog(["approve", "notes-1", callId, "--dir", dir, "--by", "ana", "--arguments", JSON.stringify({ path: "notes.txt", content: "final" })], { cwd: directory });
      expect(edited.stderr).toBe("");
      expect(edited.code).toBe(0);
      await host.waitForLine((line) => line.startsWith("final "));
      expect(host.lines.at(-1)).toBe("final completed Saved.");
      expect(await host.exited).toMatchObject({ code: 0 });
    } finally {
      host.child.kill("SIGKILL");
    }
    expect(await readFile(join(workspace, "notes.txt"), "utf8")).toBe("final");
    expect(await readFile(canary, "utf8")).toBe("canary\n");
    const reader = await openLog({ dir });
    try {
      const events = await reader.events("notes-1");
      expect(events.filter((event) => event.type === "turn.approval.granted").map((event) => event.data)).toEqual([
        expect.objectContaining({ callId: expect.any(String), by: "ana", arguments: { path: "notes.txt", content: "final" } }),
      ]);
      expect(events.filter((event) => event.type === "turn.tool.started")).toHaveLength(1);
      expect((await reader.audit("notes-1"))[0]).toMatchObject({ edited: { by: "ana", proposed: { path: "notes.txt", content: "draft" }, ran: { path: "notes.txt", content: "final" } } });
      expect((await reader.replay("notes-1")).identical).toBe(true);
    } finally {
      await reader.close();
    }
  }, 120_000);

  it("answerHeldCall from a process with no tools: deny reaches a host waiting in waitForAnswers, and the tool never runs", async () => {
    const { directory, effectsFile } = await scratch();
    const dir = join(directory, "log");
    const host = startLogChild("approval-host-child.ts", [dir, effectsFile, directory, "wait"]);
    try {
      const callId = await parkedCall(host);
      // The log is the host's: this process may not open it, and does not need to.
      await expect(openLog({ dir })).rejects.toThrow(/locked by another process/);
      const recorded = await answerHeldCall({ dir }, approvalSessionId, callId, { decision: "deny", by: "bea", note: "not today" });
      expect(recorded).toMatchObject({ sessionId: approvalSessionId, tool: "deploy", stillHeld: [], event: { type: "turn.approval.denied", data: { callId, by: "bea", note: "not today" } } });
      // The same call again: the host's fold says it is answered.
      await expect(answerHeldCall({ dir }, approvalSessionId, callId, { decision: "approve", by: "bea" })).rejects.toThrow(/not awaiting approval/);

      await host.waitForLine((line) => line.startsWith("final "));
      expect(host.lines).toContain("answered needs-resume");
      expect(await host.exited).toMatchObject({ code: 0 });
    } finally {
      host.child.kill("SIGKILL");
    }
    expect(await readFile(effectsFile, "utf8")).toBe("");
    expect(await settled({ dir }, effectsFile)).toEqual({ answers: [{ type: "turn.approval.denied", by: "bea" }], toolStarts: 0, configChanges: 0, last: "turn.completed", replay: true });
  }, 120_000);

  it("once the host is gone, turnlog approve opens the log itself: an answered call exits 1 in one line, and the owner file is gone", async () => {
    const { directory, effectsFile } = await scratch();
    const dir = join(directory, "log");
    const host = startLogChild("approval-host-child.ts", [dir, effectsFile, directory, "auto"]);
    let callId: string;
    try {
      callId = await parkedCall(host);
      await answerHeldCall({ dir }, approvalSessionId, callId, { decision: "approve", by: "ana" });
      await host.waitForLine((line) => line.startsWith("final "));
      expect(await host.exited).toMatchObject({ code: 0 });
    } finally {
      host.child.kill("SIGKILL");
    }
    await expect(readFile(join(dir, "turnlog-owner.json"))).rejects.toMatchObject({ code: "ENOENT" });
    const again = await runTurnlog(["deny", approvalSessionId, callId, "--dir", dir, "--by", "ana"], { cwd: directory });
    expect(again.code).toBe(1);
    expect(again.stderr).toMatch(new RegExp(`^turnlog: call ${callId} is not awaiting approval in session deploy-1 — [^\\n]*\\n$`));
    expect(await readFile(effectsFile, "utf8")).toMatch(/^deploy-1 \S+\n$/);
  }, 120_000);

  it("a stale owner file (its process killed) is ignored: the answer is recorded by opening the log", async () => {
    const { directory, effectsFile } = await scratch();
    const dir = join(directory, "log");
    const host = startLogChild("approval-host-child.ts", [dir, effectsFile, directory, "auto"]);
    const callId = await parkedCall(host);
    host.child.kill("SIGKILL");
    await host.exited;
    expect(JSON.parse(await readFile(join(dir, "turnlog-owner.json"), "utf8"))).toMatchObject({ format: 1 });
    const recorded = await answerHeldCall({ dir }, approvalSessionId, callId, { decision: "approve", by: "ana" });
    expect(recorded.event).toMatchObject({ type: "turn.approval.granted", data: { callId, by: "ana" } });
    expect(await readFile(effectsFile, "utf8")).toBe("");
    // The reader that recorded it held the log for that moment, and left no owner file behind.
    await expect(readFile(join(dir, "turnlog-owner.json"))).rejects.toMatchObject({ code: "ENOENT" });
  }, 120_000);
});

describeWithPostgres("answering a session a host holds on PostgreSQL", () => {
  for (const how of ["cli", "reader"] as const) {
    it(`${how === "cli" ? "turnlog approve --log postgres://…" : "openLog({ url }).approve"}: the parked host finishes the turn without a restart, the tool runs once`, async () => {
      const url = requirePostgresUrl();
      const schema = freshSchemaName(`answer_${how}`);
      const { directory, effectsFile } = await scratch();
      const host = startLogChild("approval-host-child.ts", [`${url}#${schema}`, effectsFile, directory, "auto"]);
      try {
        const callId = await parkedCall(host);
        if (how === "cli") {
          const approve = await runTurnlog(["approve", approvalSessionId, callId, "--log", url, "--schema", schema, "--by", "ana"], { cwd: directory });
          expect(approve.stderr).toBe("");
          expect(approve.code).toBe(0);
          expect(approve.stdout).toContain(`✓ approved deploy ${callId} by ana`);
        } else {
          const reader = await openLog({ url, schema });
          try {
            const { event } = await reader.approve(approvalSessionId, callId, { by: "ana" });
            expect(event).toMatchObject({ type: "turn.approval.granted", data: { callId, by: "ana" } });
          } finally {
            await reader.close();
          }
        }
        await host.waitForLine((line) => line.startsWith("final "));
        expect(await host.exited).toMatchObject({ code: 0 });
        expect(host.lines.at(-1)).toBe(`final completed ${approvalFinalAnswer}`);
        expect(await readFile(effectsFile, "utf8")).toBe(`${approvalSessionId} ${callId}\n`);
        expect(await settled({ url, schema }, effectsFile)).toEqual({ answers: [{ type: "turn.approval.granted", by: "ana" }], toolStarts: 1, configChanges: 0, last: "turn.completed", replay: true });

        // Answered: a second answer exits 1 in one line.
        const again = await runTurnlog(["deny", approvalSessionId, callId, "--log", url, "--schema", schema], { cwd: directory });
        expect(again.code).toBe(1);
        expect(again.stderr).toMatch(new RegExp(`^turnlog: call ${callId} is not awaiting approval in session deploy-1 — [^\\n]*\\n$`));
      } finally {
        host.child.kill("SIGKILL");
        await dropSchema(schema);
      }
    }, 120_000);
  }

  it("turnlog deny --log postgres://…: the host tells the model, and the tool never runs", async () => {
    const url = requirePostgresUrl();
    const schema = freshSchemaName("answer_deny");
    const { directory, effectsFile } = await scratch();
    const host = startLogChild("approval-host-child.ts", [`${url}#${schema}`, effectsFile, directory, "wait"]);
    try {
      const callId = await parkedCall(host);
      const deny = await runTurnlog(["deny", approvalSessionId, callId, "--log", url, "--schema", schema, "--by", "bea", "--note", "no"], { cwd: directory });
      expect([deny.code, deny.stderr]).toEqual([0, ""]);
      expect(deny.stdout).toContain(`✗ denied deploy ${callId} by bea`);
      await host.waitForLine((line) => line.startsWith("final "));
      expect(host.lines).toContain("answered needs-resume");
      expect(await host.exited).toMatchObject({ code: 0 });
      expect(await readFile(effectsFile, "utf8")).toBe("");
      expect(await settled({ url, schema }, effectsFile)).toEqual({ answers: [{ type: "turn.approval.denied", by: "bea" }], toolStarts: 0, configChanges: 0, last: "turn.completed", replay: true });
    } finally {
      host.child.kill("SIGKILL");
      await dropSchema(schema);
    }
  }, 120_000);
});
