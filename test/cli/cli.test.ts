import { cp, mkdtemp, readdir, readFile, rm } from "node:fs/promises";
import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { createRuntime, defineTool, eventTypes, LevelEventLog, type RecordedEvent } from "../../src/index.js";
import { scriptedProvider } from "../../src/testing/index.js";
import { demoSecret } from "../../src/cli/demo/demo-script.js";
import { aiSdkViolations, anthropicMessagesViolations, openAiChatViolations } from "../support/history-validators.js";
import { ensureBuiltCli, repoRoot, runTurnlog, type TurnlogRun } from "./support/turnlog-bin.js";
import { runTurnlogInProcess } from "./support/turnlog-in-process.js";
import { expectOneCleanLine } from "./support/demo-fixture.js";
import { deleteEvent, rewriteEvent, swapEvents } from "./support/raw-log.js";
import { rechainStream } from "../support/level-tamper.js";

/*
 * The commands, in a fresh temporary directory. Most tests are about a command's logic and run it
 * in-process, through `runCli` (the function the bin calls); a few run the built bin as a child
 * process, as a user runs `npx turnlog …`, for what only a real process shows: the bin and the
 * bundle, `--version` and `--help`, exit codes a shell sees, a usage error, a clean error line, a
 * reader that closes the pipe.
 */

let workDir: string;
let demo: TurnlogRun;
let sessionId: string;
const logDir = "log";

const turnlog = (...args: string[]) => runTurnlogInProcess(args, { cwd: workDir });
/** The built bin, a child process: for the end-to-end tests. */
const bin = (...args: string[]) => runTurnlog(args, { cwd: workDir });
/** A copy of the demo's log, so each tampering starts from an intact one. */
async function copyOfDemoLog(name: string): Promise<string> {
  const copy = path.join(workDir, name);
  await cp(path.join(workDir, logDir), copy, { recursive: true });
  return copy;
}
const stream = () => `session-${sessionId}`;

/** One line on stderr, and no stack frame in it. */

beforeAll(async () => {
  await ensureBuiltCli();
  workDir = await mkdtemp(path.join(os.tmpdir(), "turnlog-cli-"));
  demo = await turnlog("demo", "--dir", logDir);
  sessionId = /session\s+(demo-\S+)/.exec(demo.stdout)?.[1] ?? "";
}, 120_000);

afterAll(async () => {
  if (workDir !== undefined) await rm(workDir, { recursive: true, force: true });
});

describe("turnlog demo", () => {
  it("records a session and prints its timeline, the held write, the approval and the final answer", () => {
    expect(demo.stderr).toBe("");
    expect(demo.code).toBe(0);
    expect(sessionId).toMatch(/^demo-\d{8}-\d{6}-[0-9a-f]{4}$/);
    const out = demo.stdout;
    expect(out).toContain("user › Summarize the notes in this project and save the summary.");
    expect(out).toContain("turn.tool_calls.planned");
    expect(out).toContain("rejected: read_file malformed-arguments, delete_everything unknown-tool");
    expect(out).toContain("read_file allow (mode:ask) · list_dir allow (mode:ask) · write_file ask (mode:ask)");
    expect(out).toMatch(/held for approval: write_file call_save_summary · risk workspace-write · rule mode:ask/);
    expect(out).toMatch(/turn\.approval\.granted\s+write_file call_save_sum… approved by demo-user/);
    expect(out).toContain("3 ok, 2 errors");
    expect(out).toMatch(/turn\.completed\s+"Done\./);
    expect(out).toContain("✓ completed");
    expect(out).toContain("assistant › Done. The notes make four points");
    // The hold comes before the approval and the tool runs, in that order.
    expect(out.indexOf("held for approval")).toBeLessThan(out.indexOf("turn.approval.granted"));
    expect(out.indexOf("turn.approval.granted")).toBeLessThan(out.indexOf("turn.tool.started"));
  });

  it("shows the two reads of turn 1 running side by side: both start before either ends", () => {
    const lines = demo.stdout.split("\n");
    const index = (pattern: RegExp) => lines.findIndex((line) => pattern.test(line));
    const readStarted = index(/turn\.tool\.started\s+read_file call_read_notes · group 0$/);
    const listStarted = index(/turn\.tool\.started\s+list_dir call_\S+ · group 0$/);
    const firstEnded = index(/turn\.tool\.succeeded\s+(read_file|list_dir) /);
    expect(Math.min(readStarted, listStarted, firstEnded)).toBeGreaterThan(-1);
    expect(Math.max(readStarted, listStarted)).toBeLessThan(firstEnded);
    const overlap = index(/^ {2}↳ read_file and list_dir ran side by side \(group 0\)$/);
    expect(overlap).toBeGreaterThan(firstEnded);
    // The write is a group of its own, after the reads.
    expect(index(/turn\.tool\.started\s+write_file call_save_sum… · group 1$/)).toBeGreaterThan(overlap);
  });

  it("sends a second message whose endless watch the iteration budget stops, and still exits 0", () => {
    const out = demo.stdout;
    const second = out.indexOf("user › Watch deploy.log until the deploy finishes.");
    expect(second).toBeGreaterThan(out.indexOf("assistant › Done."));
    const watch = out.slice(second);
    // Four iterations, each one read of deploy.log that needs no approval, then the stop.
    expect(watch.match(/turn\.started\s+turn-\d · iteration \d/g)).toHaveLength(4);
    expect(watch).toMatch(/turn\.started\s+turn-7 · iteration 4/);
    expect(watch.match(/turn\.tool\.succeeded\s+read_file · \d+ms · "12:00:01 deploy #4/g)).toHaveLength(4);
    expect(watch).not.toContain("held for approval");
    expect(watch.match(/turn\.continued/g)).toHaveLength(3);
    expect(watch).toMatch(/turn\.stopped\s+budget:max-iterations\n/);
    expect(watch).toContain("■ stopped: budget:max-iterations — the loop ends itself; every call is still logged");
    expect(watch).toContain("4 provider iterations and 4 tool calls for this message (budgets.maxIterations is 4)");
    expect(demo.code).toBe(0);
  });

  it("shows a denied command, a blocked command and a redacted secret", () => {
    const out = demo.stdout;
    expect(out).toMatch(/run_command ask \(command=approval:git-force-push\)/);
    expect(out).toMatch(/run_command block \(hard-block:command=forbidden:download-to-interpreter\)/);
    expect(out).toMatch(/turn\.approval\.denied\s+run_command call_force_push denied by demo-user/);
    expect(out).toContain("1 with redacted arguments");
    expect(out).toContain("Authorization: Bearer [REDACTED]");
    expect(out).toMatch(/1 denied, 1 blocked, 1 with a secret logged redacted/);
    expect(out).not.toContain(demoSecret);
  });

  it("never writes the raw secret: not in the events, not in any LevelDB file", async () => {
    const events = await turnlog("events", sessionId, "--dir", logDir, "--json");
    expect(events.stdout).toContain("[REDACTED]");
    expect(events.stdout).not.toContain(demoSecret);
    const directory = path.join(workDir, logDir);
    let controlFound = false;
    for (const file of await readdir(directory)) {
      const bytes = await readFile(path.join(directory, file));
      expect(bytes.includes(Buffer.from(demoSecret)), file).toBe(false);
      expect(bytes.includes(Buffer.from("DEMOONLY")), file).toBe(false);
      // The grep can see the log's text: the same command's host name is there in plain bytes.
      controlFound ||= bytes.includes(Buffer.from("status.example.com/api/v1/deploys"));
    }
    expect(controlFound).toBe(true);
  });

  it("ends with the commands that inspect the session, with --dir since it is not the default", () => {
    for (const command of [
      `npx turnlog sessions --dir ${logDir}`,
      `npx turnlog events ${sessionId} --dir ${logDir}`,
      `npx turnlog replay ${sessionId} --dir ${logDir}`,
      `npx turnlog view ${sessionId} --dir ${logDir}`,
      `npx turnlog otel ${sessionId} --dir ${logDir}`,
      `npx turnlog verify --dir ${logDir}`,
      `npx turnlog demo --pause --dir ${logDir}`,
    ]) {
      expect(demo.stdout).toContain(command);
    }
  });

  it("touches no file outside its log, and repeated runs coexist", async () => {
    const fresh = await mkdtemp(path.join(os.tmpdir(), "turnlog-cli-default-"));
    try {
      const first = await runTurnlogInProcess(["demo"], { cwd: fresh });
      const second = await runTurnlogInProcess(["demo"], { cwd: fresh });
      const paused = await runTurnlogInProcess(["demo", "--pause"], { cwd: fresh });
      expect([first.code, second.code, paused.code]).toEqual([0, 0, 3]);
      expect(await readdir(fresh)).toEqual([".turnlog"]);
      // Run in the default directory, the printed commands need no --dir.
      expect(first.stdout).toContain("npx turnlog verify ");
      expect(first.stdout).not.toContain("--dir");
      expect(paused.stdout).toMatch(/npx turnlog resume demo-\S+ {2}/);
      expect(paused.stdout).not.toContain("--dir");
      const sessions = JSON.parse((await runTurnlogInProcess(["sessions", "--json"], { cwd: fresh })).stdout) as { id: string; status: string }[];
      expect(sessions).toHaveLength(3);
      expect(new Set(sessions.map((row) => row.id)).size).toBe(3);
      expect(sessions.map((row) => row.status).sort()).toEqual(["awaiting-approval", "stopped", "stopped"]);
    } finally {
      await rm(fresh, { recursive: true, force: true });
    }
  });

  it("a log held by another process: a command that writes says so in one line; one that reads reads a copy", async () => {
    const copy = await copyOfDemoLog("locked-log");
    const holder = await LevelEventLog.open(copy, { durability: "relaxed" });
    try {
      for (const args of [["demo", "--dir", copy], ["approve", sessionId, "call_x", "--dir", copy], ["fork", sessionId, "--at", "5", "--to", "f1", "--dir", copy]]) {
        const run = await turnlog(...args);
        expect(run.code).toBe(1);
        expect(run.stderr).toContain("is in use by another process");
        expectOneCleanLine(run.stderr);
      }
      // The holder keeps writing; a reader sees what it wrote up to the moment of the copy.
      await holder.appendToStream("session-held-meanwhile", [{ type: "note", data: {} }]);
      const notice = `turnlog: the log at ${copy} is in use by another process; reading a copy taken just now\n`;
      const sessions = await turnlog("sessions", "--dir", copy, "--json");
      expect([sessions.code, sessions.stderr]).toEqual([0, notice]);
      expect((JSON.parse(sessions.stdout) as { id: string }[]).map((row) => row.id).sort()).toEqual([sessionId, "held-meanwhile"].sort());
      for (const args of [["show", sessionId], ["audit", sessionId], ["events", sessionId], ["replay", sessionId], ["history", sessionId, "--format", "openai-chat"], ["verify"]]) {
        const run = await turnlog(...args, "--dir", copy);
        expect([args[0], run.code, run.stderr]).toEqual([args[0], 0, notice]);
      }
      expect((await turnlog("show", sessionId, "--dir", copy)).stdout).toMatch(/^stopped: budget:max-iterations · 7 turns, 12 tool calls$/m);
      // The holder's log is untouched by the readers.
      expect((await holder.verify()).ok).toBe(true);
    } finally {
      await holder.close();
    }
  });
});

describe("turnlog sessions", () => {
  it("lists the demo session as stopped, since its last message ran into the budget (--json)", async () => {
    const run = await turnlog("sessions", "--dir", logDir, "--json");
    expect(run.code).toBe(0);
    const rows = JSON.parse(run.stdout) as { id: string; events: number; lastRecordedAt: string; status: string }[];
    expect(rows).toEqual([{ id: sessionId, events: expect.any(Number), lastRecordedAt: expect.any(String), status: "stopped" }]);
    expect(rows[0]?.events).toBeGreaterThan(60);
    expect(Number.isNaN(Date.parse(rows[0]?.lastRecordedAt ?? ""))).toBe(false);
  });

  it("prints a table in text", async () => {
    const run = await turnlog("sessions", "--dir", logDir);
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/^SESSION\s+EVENTS\s+LAST EVENT\s+STATUS$/m);
    expect(run.stdout).toMatch(new RegExp(`^${sessionId}\\s+\\d+\\s+\\d{4}-\\d\\d-\\d\\d \\d\\d:\\d\\d:\\d\\dZ\\s+stopped$`, "m"));
  });

  it("reports the status of a session left awaiting approval", async () => {
    const dir = path.join(workDir, "held-log");
    const log = await LevelEventLog.open(dir, { durability: "relaxed" });
    const write = defineTool({ name: "write_file", description: "w", risk: "workspace-write", input: z.object({ path: z.string() }), run: () => "ok" });
    const runtime = await createRuntime({ log, provider: scriptedProvider([{ toolCalls: [{ name: "write_file", arguments: '{"path":"a"}' }] }]), tools: [write] });
    await (await runtime.openSession("held")).send("write a");
    await runtime.openSession("idle");
    await runtime.close();
    await log.close();
    const rows = JSON.parse((await turnlog("sessions", "--dir", dir, "--json")).stdout) as { id: string; status: string }[];
    expect(Object.fromEntries(rows.map((row) => [row.id, row.status]))).toEqual({ held: "awaiting-approval", idle: "idle" });
  });
});

describe("turnlog events / show", () => {
  it("prints the recorded events as JSON, every one of a catalogued type, in stream order", async () => {
    const run = await turnlog("events", sessionId, "--dir", logDir, "--json");
    expect(run.code).toBe(0);
    const events = JSON.parse(run.stdout) as RecordedEvent[];
    expect(events.length).toBeGreaterThan(15);
    for (const event of events) expect(eventTypes).toContain(event.type);
    expect(events.map((event) => event.meta.streamPosition)).toEqual(events.map((_, index) => index + 1));
    expect(events[0]?.type).toBe("session.started");
    expect(events.map((event) => event.type)).toContain("turn.completed");
    expect(events.at(-1)).toMatchObject({ type: "turn.stopped", data: { reason: "budget:max-iterations" } });
    expect(events.map((event) => event.type)).toContain("turn.approval.granted");
    expect(events[0]?.data).toMatchObject({ provider: { id: "scripted-demo" }, budgets: { maxIterations: 4 } });
  });

  it("prints one timeline line per event", async () => {
    // One after the other: a LevelDB log is opened by one process at a time.
    const text = await turnlog("events", sessionId, "--dir", logDir);
    const json = await turnlog("events", sessionId, "--dir", logDir, "--json");
    const lines = text.stdout.trimEnd().split("\n");
    expect(lines).toHaveLength((JSON.parse(json.stdout) as unknown[]).length);
    expect(lines[0]).toMatch(/^ #1 {2}\+0\.000s {2}session\.started {2,}scripted-demo \(openai-chat\) · mode ask/);
    expect(text.stdout).not.toContain("\u001b[");
  });

  it("colors only when asked: FORCE_COLOR on, NO_COLOR off", async () => {
    const forced = await runTurnlogInProcess(["events", sessionId, "--dir", logDir], { cwd: workDir, env: { FORCE_COLOR: "1" } });
    expect(forced.stdout).toContain("\u001b[");
    const vetoed = await runTurnlogInProcess(["events", sessionId, "--dir", logDir], { cwd: workDir, env: { FORCE_COLOR: "1", NO_COLOR: "1" } });
    expect(vetoed.stdout).not.toContain("\u001b[");
  });

  it("show prints the configuration, each turn with its calls' decisions and outcomes, and the final status", async () => {
    const run = await turnlog("show", sessionId, "--dir", logDir);
    expect(run.code).toBe(0);
    expect(run.stdout).toContain(`session  ${sessionId}`);
    expect(run.stdout).toContain(
      "tools    read_file (read-only-local), list_dir (read-only-local), run_command (external-side-effect),\n         write_file (workspace-write)",
    );
    // The turn's duration is real time: "16ms", or "1.25s" on a loaded machine.
    expect(run.stdout).toMatch(/^turn 1 {2}continued: tool-results +\+\d+\.\d{3}s {2}(\d+ms|\d+\.\d+s) {2}1 attempt {2}"I'll read the notes/m);
    expect(run.stdout).toMatch(/^ write_file +call_save_sum… +ask +mode:ask · approved by demo-user +succeeded +(\d+ms|\d+\.\d+s)$/m);
    expect(run.stdout).toMatch(/^ run_command +call_force_push +ask +command=approval:git-force-push · denied by demo-user +denied$/m);
    expect(run.stdout).toMatch(/^ run_command +call_install +block +hard-block:command=forbidden:download-to-interpreter +blocked$/m);
    expect(run.stdout).toMatch(/^turn 7 {2}stopped: budget:max-iterations/m);
    expect(run.stdout).toMatch(/^stopped: budget:max-iterations · 7 turns, 12 tool calls$/m);
    // Every line fits a 120-column terminal; the event-by-event timeline is one flag away.
    for (const line of run.stdout.split("\n")) expect(line.length).toBeLessThanOrEqual(120);
    expect(run.stdout).not.toContain("turn.tool_calls.gated");
    const full = await turnlog("show", sessionId, "--dir", logDir, "--events");
    expect(full.stdout).toContain("turn.tool_calls.gated");
    expect(full.stdout).toContain("turn.completed");
  });
});

describe("piping into a reader that stops early", () => {
  it("ends quietly, like any Unix tool, when the reader closes the pipe (| head)", async () => {
    const child = spawn(process.execPath, [path.join(repoRoot, "bin/turnlog.js"), "events", sessionId, "--dir", logDir], { cwd: workDir });
    let stderr = "";
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
    child.stdout.once("data", () => child.stdout.destroy());
    const code = await new Promise<number | null>((resolve) => child.on("close", resolve));
    expect(stderr).not.toMatch(/EPIPE|\bat .+:\d+:\d+/);
    expect(code).toBe(0);
  });
});

describe("turnlog history", () => {
  it("prints the history a next request would carry, in every format, with its diagnostics", async () => {
    for (const format of ["openai-chat", "anthropic-messages", "ai-sdk"] as const) {
      const run = await turnlog("history", sessionId, "--dir", logDir, "--format", format, "--json");
      expect(run.code).toBe(0);
      const output = JSON.parse(run.stdout) as { format: string; messages: unknown[]; diagnostics: { name: string }[] };
      expect(output.format).toBe(format);
      if (format === "openai-chat") expect(openAiChatViolations(output.messages)).toEqual([]);
      else if (format === "ai-sdk") expect(aiSdkViolations(output.messages)).toEqual([]);
      else expect(anthropicMessagesViolations({ messages: output.messages })).toEqual([]);
      expect(output.diagnostics.map((diagnostic) => diagnostic.name)).toContain("structured-tool-history-serialized");
      // The demo's token was never logged, so no history can carry it.
      expect(run.stdout).not.toContain(demoSecret);
    }
  });

  it("refuses a format it does not know, as a usage error", async () => {
    const run = await turnlog("history", sessionId, "--dir", logDir, "--format", "gemini");
    expect(run.code).toBe(2);
    expectOneCleanLine(run.stderr);
  });
});

describe("turnlog replay", () => {
  it("says identical and exits 0 for the demo session", async () => {
    const run = await turnlog("replay", sessionId, "--dir", logDir);
    expect(run.stderr).toBe("");
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/^identical: \d+ decisions recomputed, 0 divergences\n/);
    // The status check carried a token: its plan came from arguments the log never stored.
    expect(run.stdout).toMatch(/turn\.tool_calls\.planned call_status: not verifiable \(redacted/);
    const json = await turnlog("replay", sessionId, "--dir", logDir, "--json");
    expect(JSON.parse(json.stdout)).toMatchObject({ identical: true, divergences: [] });
  });

  it("exits 1 and names the position, type and path of a decision that differs", async () => {
    // A log rewritten from scratch has an intact hash chain: only replay can tell the decision is wrong.
    const source = await LevelEventLog.open(path.join(workDir, logDir), { durability: "relaxed" });
    const events = await source.readStream(stream(), { maxCount: 1000 });
    await source.close();
    const gatedPosition = events.findIndex((event) => event.type === "turn.tool_calls.gated") + 1;
    const forged = events.map(({ type, data }, index) => {
      if (index + 1 !== gatedPosition) return { type, data };
      const copy = structuredClone(data) as { decisions: { rule: string }[] };
      copy.decisions[0]!.rule = "allow:tool=read_file";
      return { type, data: copy };
    });
    const dir = path.join(workDir, "forged-log");
    const target = await LevelEventLog.open(dir, { durability: "relaxed" });
    await target.appendToStream(stream(), forged);
    await target.close();

    expect((await turnlog("verify", "--dir", dir)).code).toBe(0);
    // Through the built bin: the exit code a shell or a CI step sees.
    const run = await bin("replay", sessionId, "--dir", dir);
    expect(run.code).toBe(1);
    expect(run.stdout).toMatch(/^diverged: \d+ decisions recomputed, 1 divergence$/m);
    expect(run.stdout).toContain(`#${gatedPosition} turn.tool_calls.gated data.decisions[0].rule: logged "allow:tool=read_file", recomputed "mode:ask"`);
    const json = await turnlog("replay", sessionId, "--dir", dir, "--json");
    expect(json.code).toBe(1);
    expect(JSON.parse(json.stdout)).toMatchObject({
      identical: false,
      divergences: [{ position: gatedPosition, type: "turn.tool_calls.gated", path: "data.decisions[0].rule", expected: "allow:tool=read_file", actual: "mode:ask" }],
    });
  });

  it("replays a session recorded with the host's own tools, which the CLI does not have, identical from their recorded definitions", async () => {
    const dir = path.join(workDir, "host-log");
    const log = await LevelEventLog.open(dir, { durability: "relaxed" });
    // Host tools: zod with a default (the planned input holds it), a command tool, a tool that declares paths.
    const search = defineTool({ name: "search_web", description: "Searches the web", risk: "read-only-network", input: z.object({ q: z.string(), limit: z.number().int().default(5) }), run: ({ q, limit }) => `${limit} results for ${q}` });
    const deploy = defineTool({ name: "deploy", description: "Deploys", risk: "external-side-effect", input: z.object({ env: z.enum(["staging", "prod"]) }), command: ({ env }) => `deploy --env ${env}`, run: ({ env }) => `deployed to ${env}` });
    const save = defineTool({ name: "save_note", description: "Saves a note", risk: "workspace-write", input: z.object({ file: z.string(), text: z.string() }), paths: ({ file }) => [file], run: () => "saved" });
    const provider = scriptedProvider([
      {
        toolCalls: [
          { id: "call_search", name: "search_web", arguments: JSON.stringify({ q: "turnlog" }) },
          { id: "call_bad", name: "search_web", arguments: JSON.stringify({ q: 3 }) },
          { id: "call_deploy", name: "deploy", arguments: JSON.stringify({ env: "staging" }) },
          { id: "call_save", name: "save_note", arguments: JSON.stringify({ file: "notes/today.md", text: "hi" }) },
        ],
      },
      { content: "done" },
    ]);
    const runtime = await createRuntime({ log, provider, tools: [search, deploy, save], policy: { approvalMode: "ask", workspace: { root: path.join(workDir, "host-workspace") } } });
    const session = await runtime.openSession("host");
    const held = await session.send("search, deploy to staging and save a note");
    expect(held.status).toBe("awaiting-approval");
    for (const pending of held.pendingApprovals) await session.approve(pending.callId, { by: "alice" });
    expect((await session.resume()).status).toBe("completed");
    // Host-routed calls, between turns: one on the zod default, one on the paths tool.
    expect(await session.runTool("search_web", { q: "replay" }, { by: "ui:search-box" })).toMatchObject({ status: "succeeded", content: "5 results for replay" });
    await session.runTool("save_note", { file: "notes/host.md", text: "from the host" }, { by: "ui:save", approvedBy: "alice" });
    expect((await runtime.replay("host")).identical).toBe(true);
    await log.close();

    const run = await turnlog("replay", "host", "--dir", dir);
    expect(run.stderr).toBe("");
    expect(run.stdout).toMatch(/^tools replayed from their recorded definitions \(the host's code is not here\): search_web, deploy, save_note — 6 plans checked against the recorded schema, 3 gate decisions taken as logged; every other decision checked exactly$/m);
    expect(run.stdout).toMatch(/^identical: \d+ decisions recomputed, 0 divergences$/m);
    expect(run.stdout).toMatch(/call_deploy: not verifiable \(host-code: /);
    expect(run.stdout).toMatch(/call_save: not verifiable \(host-code: /);
    expect(run.code).toBe(0);
    const json = JSON.parse((await turnlog("replay", "host", "--dir", dir, "--json")).stdout) as { identical: boolean; toolsFromLog: string[] };
    expect(json).toMatchObject({ identical: true, toolsFromLog: ["search_web", "deploy", "save_note"] });
  });

  it("refuses, in one line, a host's session recorded before tool schemas were in the log", async () => {
    const dir = path.join(workDir, "foreign-log");
    const log = await LevelEventLog.open(dir, { durability: "relaxed" });
    const search = defineTool({ name: "search_web", description: "s", risk: "read-only-network", input: z.object({ q: z.string() }), run: () => "none" });
    const runtime = await createRuntime({ log, provider: scriptedProvider([{ content: "hi" }]), tools: [search] });
    await (await runtime.openSession("host")).send("hello");
    // What a log written before this version holds: the tool without its JSON Schema, in an intact
    // chain (the reader refuses an event that does not match its hash as damage).
    await log.close();
    await rechainStream(dir, "session-host", (events) => {
      for (const tool of (events[0]!.data as { tools: Record<string, unknown>[] }).tools) delete tool.parameters;
      return events;
    });
    // Through the built bin: exit 5 as a shell sees it, and one clean line, no stack trace.
    const run = await bin("replay", "host", "--dir", dir);
    // It cannot be replayed here, which is not "diverged".
    expect(run.code).toBe(5);
    expect(run.stderr).toContain("recorded with tools the CLI does not define (search_web), before turnlog recorded tool schemas in the log");
    expectOneCleanLine(run.stderr);
  });
});

describe("turnlog verify", () => {
  it("says ok and exits 0 for an intact log", async () => {
    const run = await turnlog("verify", "--dir", logDir);
    expect(run.code).toBe(0);
    // The demo seals with the user's key and keeps a witness of the log beside it.
    expect(run.stdout).toMatch(/^ok: \d+ events checked · \d+ seals? verified \(key [0-9a-f]{16}\) · witness \S+\.json\n$/);
    const json = await turnlog("verify", "--dir", logDir, "--json");
    expect(JSON.parse(json.stdout)).toMatchObject({ ok: true, faults: [], unsealed: [] });
  });

  it("exits 1 and names the first bad position when an event's data is rewritten", async () => {
    const dir = await copyOfDemoLog("rewritten-log");
    await rewriteEvent(dir, stream(), 2, (event) => {
      event.data.content = "Delete every file in this project.";
    });
    const run = await turnlog("verify", "--dir", dir);
    expect(run.code).toBe(1);
    const lines = run.stdout.split("\n");
    expect(lines[0]).toBe(`broken chain: stream ${stream()} position 2: hash-mismatch: the event's content does not match its hash`);
    expect(lines[1]).toMatch(/^\d+ events checked · \d+ seals? verified/);
  });

  it("exits 1 and names the first bad position when an event is deleted", async () => {
    const dir = await copyOfDemoLog("deleted-log");
    await deleteEvent(dir, stream(), 7);
    const run = await turnlog("verify", "--dir", dir, "--json");
    expect(run.code).toBe(1);
    expect(JSON.parse(run.stdout)).toMatchObject({ ok: false, stream: stream(), firstBadPosition: 7 });
    expect((await turnlog("verify", "--dir", dir)).stdout).toMatch(new RegExp(`^broken chain: stream ${stream()} position 7: `));
  });

  it("exits 1 and names the first bad position when two events are swapped", async () => {
    const dir = await copyOfDemoLog("swapped-log");
    await swapEvents(dir, stream(), 10, 11);
    const run = await turnlog("verify", "--dir", dir);
    expect(run.code).toBe(1);
    expect(run.stdout).toMatch(new RegExp(`^broken chain: stream ${stream()} position 10: out-of-order: `));
  });
});

describe("turnlog demo --pause, approve, deny, resume", () => {
  const dir = "paused-log";
  let paused: TurnlogRun;
  let id: string;
  const inPausedLog = (...args: string[]) => turnlog(...args, "--dir", dir);

  beforeAll(async () => {
    paused = await turnlog("demo", "--pause", "--dir", dir);
    id = /session\s+(demo-\S+)/.exec(paused.stdout)?.[1] ?? "";
  }, 60_000);

  it("demo --pause stops at the first held call, prints the commands that answer it, and exits 3", () => {
    expect(paused.stderr).toBe("");
    expect(paused.code).toBe(3);
    expect(paused.stdout).toMatch(/held for approval: write_file call_save_summary · risk workspace-write · rule mode:ask/);
    expect(paused.stdout).toContain(`npx turnlog approve ${id} call_save_summary --dir ${dir}`);
    expect(paused.stdout).toContain(`npx turnlog deny ${id} call_save_summary --dir ${dir}`);
    expect(paused.stdout).toContain(`npx turnlog resume ${id} --dir ${dir}`);
    // Nothing was answered or run: the demo's own reviewer did not step in.
    expect(paused.stdout).not.toContain("turn.approval.granted");
    expect(paused.stdout).not.toContain("turn.tool.started");
  });

  it("approve logs the answer, by whom and why, and exits 0", async () => {
    const run = await inPausedLog("approve", id, "call_save_summary", "--by", "ana", "--note", "ok");
    expect(run.stderr).toBe("");
    expect(run.code).toBe(0);
    expect(run.stdout).toContain('✓ approved write_file call_save_summary by ana · "ok"');
    expect(run.stdout).toContain(`npx turnlog resume ${id} --dir ${dir}`);
    const events = JSON.parse((await inPausedLog("events", id, "--json")).stdout) as RecordedEvent[];
    expect(events.at(-1)).toMatchObject({ type: "turn.approval.granted", data: { callId: "call_save_summary", by: "ana", note: "ok", scope: "call" } });
  });

  it("resume runs the held turn on with the demo script where it stopped, to the next pause: exit 3", async () => {
    const run = await inPausedLog("resume", id);
    expect(run.stderr).toBe("");
    expect(run.code).toBe(3);
    // Only the new part of the timeline: the reads side by side, the write, then turn 2's holds.
    expect(run.stdout).not.toContain("session.started");
    expect(run.stdout).toMatch(/turn\.tool\.succeeded\s+write_file · \d+ms · "wrote 297 characters to summary\.md"/);
    expect(run.stdout).toContain("↳ read_file and list_dir ran side by side (group 0)");
    expect(run.stdout).toMatch(/turn\.provider\.responded\s+tool_calls · 3 tool calls · "Summary saved\./);
    expect(run.stdout).toMatch(/held for approval: run_command call_force_push · risk external-side-effect · rule command=approval:git-force-push/);
    expect(run.stdout).toMatch(/held for approval: run_command call_status · risk external-side-effect · rule mode:ask/);
    expect(run.stdout).toContain("Authorization: Bearer [REDACTED]");
    for (const callId of ["call_force_push", "call_status"]) {
      expect(run.stdout).toContain(`npx turnlog approve ${id} ${callId} --dir ${dir}`);
      expect(run.stdout).toContain(`npx turnlog deny ${id} ${callId} --dir ${dir}`);
    }
    expect(run.stdout).not.toContain(demoSecret);
  });

  it("deny and approve answer the two held commands, and resume completes with the final answer: exit 0", async () => {
    const deny = await inPausedLog("deny", id, "call_force_push", "--by", "ana", "--note", "no force pushes");
    expect(deny.code).toBe(0);
    expect(deny.stdout).toContain('✗ denied run_command call_force_push by ana · "no force pushes"');
    // The other call is still held: it is shown again, with its commands.
    expect(deny.stdout).toContain(`npx turnlog approve ${id} call_status --dir ${dir}`);
    // --by defaults to $USER.
    const approve = await runTurnlogInProcess(["approve", id, "call_status", "--scope", "tool", "--dir", dir], { cwd: workDir, env: { USER: "bea" } });
    expect(approve.code).toBe(0);
    expect(approve.stdout).toContain("✓ approved run_command call_status by bea, and run_command for the rest of the session");
    expect(approve.stdout).toContain("Every held call is answered.");

    const run = await inPausedLog("resume", id);
    expect(run.stderr).toBe("");
    expect(run.code).toBe(0);
    // The answers were logged by the commands before: the timeline goes on from them.
    expect(run.stdout).not.toContain("turn.approval.");
    expect(run.stdout).toMatch(/turn\.tool\.started\s+run_command call_status · group 0/);
    // The token lived only in the memory of the process that received it: this one cannot run the call.
    expect(run.stdout).toMatch(/turn\.tool\.failed\s+run_command · \d+ms · arguments-unavailable/);
    expect(run.stdout).toContain("↳ run_command call_status could not run: its arguments held a secret");
    expect(run.stdout).toMatch(/turn\.completed\s+"Done\./);
    expect(run.stdout).toContain("✓ completed");
    expect(run.stdout).toContain("assistant › Done. The notes make four points");

    const events = JSON.parse((await inPausedLog("events", id, "--json")).stdout) as RecordedEvent[];
    const answers = events.filter((event) => event.type.startsWith("turn.approval."));
    expect(answers.map((event) => [event.type, (event.data as { callId: string }).callId, (event.data as { by: string }).by])).toEqual([
      ["turn.approval.granted", "call_save_summary", "ana"],
      ["turn.approval.denied", "call_force_push", "ana"],
      ["turn.approval.granted", "call_status", "bea"],
    ]);
    expect(answers.at(-1)?.data).toMatchObject({ scope: "tool" });
    expect(events.at(-1)?.type).toBe("turn.completed");
  });

  it("leaves a session that replays identical and a log that verifies", async () => {
    const replay = await inPausedLog("replay", id);
    expect(replay.code).toBe(0);
    expect(replay.stdout).toMatch(/^identical: \d+ decisions recomputed, 0 divergences\n/);
    const verify = await inPausedLog("verify");
    expect(verify.code).toBe(0);
    expect(verify.stdout).toMatch(/^ok: \d+ events checked · \d+ seals? verified \(key [0-9a-f]{16}\) · witness \S+\.json\n$/);
    const sessions = JSON.parse((await inPausedLog("sessions", "--json")).stdout) as { id: string; status: string }[];
    expect(sessions).toEqual([expect.objectContaining({ id, status: "completed" })]);
  });

  it("resume with nothing unfinished reports the last outcome and appends nothing", async () => {
    const before = (JSON.parse((await inPausedLog("events", id, "--json")).stdout) as unknown[]).length;
    const run = await inPausedLog("resume", id);
    expect(run.code).toBe(0);
    expect(run.stdout).toContain("nothing to resume");
    expect((JSON.parse((await inPausedLog("events", id, "--json")).stdout) as unknown[]).length).toBe(before);
  });

  it("a session stopped by its budget resumes to the same stop: exit 4", async () => {
    const run = await turnlog("resume", sessionId, "--dir", logDir);
    expect(run.code).toBe(4);
    expect(run.stdout).toContain("■ stopped: budget:max-iterations");
  });

  it.each([
    ["approve", "call_save_summary"],
    ["deny", "call_force_push"],
    ["approve", "call_nobody_made"],
  ])("%s of a call that is not held (%s) exits 1 with one clean line", async (command, callId) => {
    const run = await inPausedLog(command, id, callId);
    expect(run.code).toBe(1);
    expect(run.stdout).toBe("");
    expect(run.stderr).toContain(`turnlog: call ${callId} is not awaiting approval in session ${id}`);
    expectOneCleanLine(run.stderr);
  });

  it("answers a host's session (issue 33) but refuses, in one line, to resume it", async () => {
    const hostDir = path.join(workDir, "host-log");
    const log = await LevelEventLog.open(hostDir, { durability: "relaxed" });
    const write = defineTool({ name: "write_file", description: "w", risk: "workspace-write", input: z.object({ path: z.string() }), run: () => "ok" });
    const runtime = await createRuntime({ log, provider: scriptedProvider([{ toolCalls: [{ id: "call_w", name: "write_file", arguments: '{"path":"a"}' }] }]), tools: [write] });
    await (await runtime.openSession("host")).send("write a");
    await runtime.close();
    await log.close();
    const resume = await turnlog("resume", "host", "--dir", hostDir);
    expect(resume.code).toBe(1);
    expect(resume.stderr).toContain('session "host" was not recorded by "turnlog demo"');
    expect(resume.stderr).toContain("resume works for CLI sessions; a host resumes its own sessions with session.resume()");
    expectOneCleanLine(resume.stderr);
    // Nothing was appended to the host's session by the refused resume.
    expect(JSON.parse((await turnlog("sessions", "--dir", hostDir, "--json")).stdout)).toEqual([expect.objectContaining({ status: "awaiting-approval" })]);

    const deny = await turnlog("deny", "host", "call_w", "--by", "ana", "--note", "not now", "--dir", hostDir);
    expect([deny.code, deny.stderr]).toEqual([0, ""]);
    expect(deny.stdout).toContain('✗ denied write_file call_w by ana · "not now"');
    const events = JSON.parse((await turnlog("events", "host", "--dir", hostDir, "--json")).stdout) as RecordedEvent[];
    expect(events.at(-1)).toMatchObject({ type: "turn.approval.denied", data: { callId: "call_w", by: "ana", note: "not now" } });
    expect(events.filter((event) => event.type === "session.config.changed")).toEqual([]);
  });
});

describe("user mistakes: one line on stderr, no stack trace", () => {
  it.each([["events"], ["show"], ["replay"], ["resume"], ["approve", "call_x"], ["deny", "call_x"]])("%s of an unknown session", async (command, ...rest) => {
    const run = await turnlog(command, "no-such-session", ...rest, "--dir", logDir);
    // A replay that cannot be done exits 5, never 1 (a divergence).
    expect(run.code).toBe(command === "replay" ? 5 : 1);
    expect(run.stdout).toBe("");
    expect(run.stderr).toBe(`turnlog: no session "no-such-session" in ${logDir} — "npx turnlog sessions --dir ${logDir}" lists them\n`);
  });

  it.each([["sessions"], ["verify"], ["events", "x"], ["replay", "x"], ["show", "x"], ["resume", "x"], ["approve", "x", "y"], ["deny", "x", "y"]])("%s with a missing log directory, which it does not create", async (...args) => {
    const run = await turnlog(...args, "--dir", "missing-log");
    expect(run.code).toBe(args[0] === "replay" ? 5 : 1);
    expect(run.stderr).toBe(`turnlog: no log at missing-log — run "npx turnlog demo" first or pass --log\n`);
    expect(existsSync(path.join(workDir, "missing-log"))).toBe(false);
  });

  it("takes the default directory from $TURNLOG_DIR", async () => {
    const run = await runTurnlogInProcess(["sessions", "--json"], { cwd: workDir, env: { TURNLOG_DIR: logDir } });
    expect(run.code).toBe(0);
    expect((JSON.parse(run.stdout) as { id: string }[]).map((row) => row.id)).toEqual([sessionId]);
  });
});

describe("usage", () => {
  it.each([["demo"], ["sessions"], ["events"], ["show"], ["replay"], ["verify"], ["approve"], ["deny"], ["resume"], ["view"]])("%s --help exits 0 and documents --dir", async (command) => {
    const run = await turnlog(command, "--help");
    expect(run.code).toBe(0);
    expect(run.stdout).toContain(`Usage: turnlog ${command}`);
    expect(run.stdout).toContain("--dir <path>");
    expect(run.stderr).toBe("");
  });

  it("--help lists every command and the exit codes", async () => {
    const run = await bin("--help");
    expect(run.code).toBe(0);
    for (const command of ["demo", "sessions", "events", "show", "replay", "verify", "approve", "deny", "resume", "view"]) expect(run.stdout).toMatch(new RegExp(`^ {2}${command}\\b`, "m"));
    expect(run.stdout).toContain("Exit codes:");
    expect(run.stdout).toContain("3 a turn awaits approval · 4 a turn stopped");
  });

  it("documents the answers approve and deny take, and demo --pause", async () => {
    const approve = await turnlog("approve", "--help");
    expect(approve.stdout).toContain("Usage: turnlog approve [options] <session> <callId>");
    for (const option of ["--by <name>", "(default: $USER or cli)", "--note <text>", "--scope <scope>", '(choices: "call", "tool", default: "call")', "--arguments <json>"]) {
      expect(approve.stdout.replace(/\s+/g, " ")).toContain(option);
    }
    const deny = await turnlog("deny", "--help");
    expect(deny.stdout).toContain("Usage: turnlog deny [options] <session> <callId>");
    expect(deny.stdout).not.toContain("--scope");
    expect(deny.stdout).not.toContain("--arguments");
    // Commander wraps the description to the terminal width.
    expect((await turnlog("resume", "--help")).stdout.replace(/\s+/g, " ")).toContain("exit 0 completed, 3 awaiting approval, 4 stopped, 1 failed");
    expect((await turnlog("demo", "--help")).stdout).toContain("--pause");
  });

  it("--version prints the package version", async () => {
    const run = await bin("--version");
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/^\d+\.\d+\.\d+\n$/);
  });

  it.each([
    [["sessions", "--bogus"], "unknown option '--bogus'"],
    [["verify", "--jsn"], "unknown option '--jsn' (Did you mean --json?)"],
    [["frobnicate"], "unknown command 'frobnicate'"],
    [["events"], "missing required argument 'session'"],
    [["verify", "extra"], "too many arguments"],
    [["approve", "s"], "missing required argument 'callId'"],
    [["approve", "s", "c", "--scope", "all"], "argument 'all' is invalid. Allowed choices are call, tool."],
    [["approve", "s", "c", "--by", ""], "--by needs a name"],
    [["approve", "s", "c", "--arguments", "[1]"], "--arguments must be a JSON object"],
    [["approve", "s", "c", "--arguments", "{version"], "--arguments must be a JSON object"],
  ])("%j is a usage error: exit 2, one line", async (args, message) => {
    const run = await turnlog(...args);
    expect(run.code).toBe(2);
    expect(run.stdout).toBe("");
    expect(run.stderr).toContain(message);
    expectOneCleanLine(run.stderr);
  });

  it("no command prints the help on stderr and exits 2", async () => {
    const run = await bin();
    expect(run.code).toBe(2);
    expect(run.stderr).toContain("Usage: turnlog");
  });
});
