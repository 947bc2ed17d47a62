import { defaultRunLogDirectory } from "../../src/util/state-directories.js";
import { existsSync } from "node:fs";
import { createRequire } from "node:module";
import { mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { spawn } from "node:child_process";
import os from "node:os";
import path from "node:path";
import { afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import type { RecordedEvent } from "../../src/index.js";
import { finishChunk, messageDelta, messageStart, messageStop, openAiToolCallChunks, textBlock, textChunk, toolUseBlock, usageChunk } from "../providers/stream-builders.js";
import { fakeKey } from "../providers/support/provider-session.js";
import { anthropicSse, openAiSse, startSseTestServer, statusReply, type ScriptedReply, type SseTestServer } from "../providers/support/sse-test-server.js";
import { expectOneCleanLine } from "./support/demo-fixture.js";
import { runTurnlogInTerminal } from "./support/terminal-run.js";
import { ensureBuiltCli, repoRoot, runTurnlog } from "./support/turnlog-bin.js";
import { runTurnlogInProcess } from "./support/turnlog-in-process.js";

/*
 * `turnlog run` in a fresh workspace, against a real HTTP server that streams scripted OpenAI Chat
 * Completions replies, with the real workspace tools (and real bubblewrap). The command's logic
 * runs in this process (runCli, given the environment as its `env`); what needs a process runs the
 * built bin: Ctrl-C, the terminal prompts (`script`), and one run whose key is only in the child's
 * environment.
 */

const keyEnv = "TURNLOG_TEST_RUN_KEY";
const notes = "# Notes\n\nstatus: draft\n";

let server: SseTestServer;
let workDir: string;
/** The person's config directory ($XDG_CONFIG_HOME), where confirmed configs are remembered. */
let configHome: string;

beforeAll(async () => {
  await ensureBuiltCli();
}, 120_000);

beforeEach(async () => {
  server = await startSseTestServer();
  workDir = await mkdtemp(path.join(os.tmpdir(), "turnlog-run-"));
  configHome = await mkdtemp(path.join(os.tmpdir(), "turnlog-run-config-home-"));
  await writeFile(path.join(workDir, "notes.md"), notes);
});

afterEach(async () => {
  await server.close();
  await rm(workDir, { recursive: true, force: true });
  await rm(configHome, { recursive: true, force: true });
});

const turnlog = (args: readonly string[], env: Record<string, string | undefined> = {}) => runTurnlogInProcess(args, { cwd: workDir, env: { [keyEnv]: fakeKey, XDG_CONFIG_HOME: configHome, ...env } });
const modelFlags = () => ["--base-url", `${server.url}/v1`, "--model", "gpt-test", "--api-key-env", keyEnv];

/** Turn 1 reads notes.md, turn 2 edits it (held in `ask` mode), turn 3 answers. */
function readEditAnswerScript(): ScriptedReply[] {
  return [
    openAiSse([textChunk("Let me read "), textChunk("notes.md."), ...openAiToolCallChunks(0, { id: "call_read", name: "read_file" }, ['{"path":', '"notes.md"}']), finishChunk("tool_calls"), usageChunk(40, 9)]),
    openAiSse([...openAiToolCallChunks(0, { id: "call_edit", name: "edit_file" }, [JSON.stringify({ path: "notes.md", oldText: "status: draft", newText: "status: final" })]), finishChunk("tool_calls")]),
    openAiSse([textChunk("Done: notes.md "), textChunk("now says final."), finishChunk("stop"), usageChunk(80, 7)]),
  ];
}

const sessionIdIn = (stdout: string) => /^session (run-\S+)$/m.exec(stdout)?.[1] ?? "";

async function eventsOf(sessionId: string): Promise<RecordedEvent[]> {
  const run = await turnlog(["events", sessionId, "--json"]);
  expect(run.code).toBe(0);
  return JSON.parse(run.stdout) as RecordedEvent[];
}

describe("turnlog run --yes, piped (not a terminal)", () => {
  it("completes, edits the file, prints the session and its commands, and replays identical", async () => {
    server.enqueue(...readEditAnswerScript());
    const run = await turnlog(["run", ...modelFlags(), "--yes", "Mark the notes final."]);
    expect(run.stderr).toBe("");
    expect(run.code).toBe(0);
    expect(await readFile(path.join(workDir, "notes.md"), "utf8")).toBe("# Notes\n\nstatus: final\n");

    // Streamed text, each call with its decision and rule, the approval, the results, the ending.
    expect(run.stdout).toContain("assistant › Let me read notes.md.");
    expect(run.stdout).toMatch(/● read_file \{"path":"notes\.md"\} {2}allow · rule mode:ask · read-only-local · call_read/);
    expect(run.stdout).toMatch(/⏸ edit_file \{"path":"notes\.md",.*\} {2}ask · rule mode:ask · workspace-write · call_edit/);
    expect(run.stdout).toMatch(/✓ approved edit_file by \S+ · "approved by --yes \(turnlog run\)"/);
    expect(run.stdout).toMatch(/✓ edit_file \d+ms/);
    expect(run.stdout).toContain("assistant › Done: notes.md now says final.");
    expect(run.stdout).toContain("✓ completed");
    const sessionId = sessionIdIn(run.stdout);
    expect(sessionId).toMatch(/^run-\d{8}-\d{6}-[0-9a-f]{4}$/);
    for (const command of ["replay", "audit", "show"]) expect(run.stdout).toContain(`npx turnlog ${command} ${sessionId} `);
    expect(server.remaining).toBe(0);

    // The model was sent the file's text, and the workspace tools.
    const second = server.requests[1]?.body as { messages: { role: string; content: unknown }[]; tools: { function: { name: string } }[] };
    expect(second.messages.find((message) => message.role === "tool")?.content).toContain("status: draft");
    expect(second.tools.map((tool) => tool.function.name)).toEqual(["read_file", "list_dir", "search_text", "write_file", "edit_file", "run_command"]);

    // The approval is on the record, with who and why.
    const events = await eventsOf(sessionId);
    expect(events.find((event) => event.type === "turn.approval.granted")?.data).toMatchObject({ callId: "call_edit", note: "approved by --yes (turnlog run)", scope: "call" });
    expect(events.find((event) => event.type === "session.started")?.data).toMatchObject({
      policy: { approvalMode: "ask", workspace: { root: workDir, trusted: true } },
      provider: { id: "openai-chat:gpt-test", format: "openai-chat" },
    });

    const replay = await turnlog(["replay", sessionId]);
    expect(replay.stdout).toMatch(/^identical: \d+ decisions recomputed, 0 divergences/);
    expect(replay.code).toBe(0);
    const audit = await turnlog(["audit", sessionId, "--json"]);
    expect(JSON.parse(audit.stdout)).toEqual([
      expect.objectContaining({ callId: "call_read", decision: "allow", outcome: "succeeded" }),
      expect.objectContaining({ callId: "call_edit", decision: "ask", outcome: "succeeded", approvedBy: expect.any(String) }),
    ]);
    expect((await turnlog(["verify"])).code).toBe(0);
  });

  it("continues the session with --session: a new user message, same tools, same log", async () => {
    server.enqueue(openAiSse([textChunk("Hello."), finishChunk("stop")]), openAiSse([textChunk("Still here."), finishChunk("stop")]));
    const first = await turnlog(["run", ...modelFlags(), "--session", "chat-1", "hi"]);
    expect(first.code).toBe(0);
    const second = await turnlog(["run", ...modelFlags(), "--session", "chat-1", "are you there?"]);
    expect(second.stderr).toBe("");
    expect(second.code).toBe(0);
    expect(second.stdout).toContain("chat-1 (continued)");
    const messages = (server.requests[1]?.body as { messages: { role: string }[] }).messages.map((message) => message.role);
    expect(messages).toEqual(["system", "user", "assistant", "user"]);
    expect((await turnlog(["replay", "chat-1"])).code).toBe(0);
    // The mode is the session's: another one is refused.
    const changed = await turnlog(["run", ...modelFlags(), "--session", "chat-1", "--mode", "full-auto", "go"]);
    expect(changed.code).toBe(2);
    expect(changed.stderr).toContain('session "chat-1" runs in mode ask');
    expectOneCleanLine(changed.stderr);
  });
});

describe("turnlog run --provider anthropic", () => {
  it("speaks the Messages API to the base URL, with the key from the variable, and replays identical", async () => {
    server.enqueue(
      anthropicSse([messageStart(), ...toolUseBlock(0, { id: "toolu_read", name: "read_file" }, ['{"path":"notes.md"}']), messageDelta("tool_use"), messageStop] as { type: string }[]),
      anthropicSse([messageStart(), ...textBlock(0, ["It is ", "a draft."]), messageDelta("end_turn"), messageStop] as { type: string }[]),
    );
    const run = await turnlog(["run", "--provider", "anthropic", "--base-url", server.url, "--model", "claude-test", "--api-key-env", keyEnv, "What state are the notes in?"]);
    expect(run.stderr).toBe("");
    expect(run.code).toBe(0);
    expect(run.stdout).toContain("assistant › It is a draft.");
    expect(server.requests.map((request) => request.path)).toEqual(["/v1/messages", "/v1/messages"]);
    // This version of the official client sends the key as a Bearer token; older ones as x-api-key.
    for (const request of server.requests) expect([`Bearer ${fakeKey}`, fakeKey]).toContain(request.headers["x-api-key"] ?? request.headers.authorization);
    expect((server.requests[0]?.body as { system?: string }).system).toContain(workDir);
    const sessionId = sessionIdIn(run.stdout);
    expect((await turnlog(["replay", sessionId])).code).toBe(0);
  });
});

describe("the log's own directory inside the workspace", () => {
  it("is never a write target: a write into ./.turnlog fails for the model, the log stays intact and verifies", async () => {
    server.enqueue(
      openAiSse([...openAiToolCallChunks(0, { id: "call_clobber", name: "write_file" }, [JSON.stringify({ path: ".turnlog/CURRENT", content: "gone" })]), finishChunk("tool_calls")]),
      openAiSse([textChunk("I could not write there."), finishChunk("stop")]),
    );
    const run = await turnlog(["run", ...modelFlags(), "--mode", "full-auto", "--dir", ".turnlog", "Overwrite the log."]);
    expect(run.code).toBe(0);
    // Commands run in bubblewrap (installed here and by .ci/run), where the log is out of reach: said up front.
    expect(run.stdout).toContain("commands run in a sandbox");
    expect(run.stdout).not.toContain("note: the log is inside the workspace");
    const sessionId = sessionIdIn(run.stdout);
    const failed = (await eventsOf(sessionId)).find((event) => event.type === "turn.tool.failed");
    expect(failed?.data).toMatchObject({ callId: "call_clobber", message: expect.stringContaining('".turnlog/CURRENT" is inside .turnlog, which this workspace protects from writes') });
    const verify = await turnlog(["verify"]);
    expect(verify.code).toBe(0);
  });

  it("no note when the log is kept outside the workspace, or the mode asks before commands", async () => {
    const outside = await mkdtemp(path.join(os.tmpdir(), "turnlog-run-log-"));
    try {
      server.enqueue(openAiSse([textChunk("Nothing to do."), finishChunk("stop")]), openAiSse([textChunk("Nothing to do."), finishChunk("stop")]));
      const away = await turnlog(["run", ...modelFlags(), "--mode", "full-auto", "--dir", path.join(outside, "log"), "Hello."]);
      expect(away.code).toBe(0);
      expect(away.stdout).not.toContain("note: the log is inside the workspace");
      const asking = await turnlog(["run", ...modelFlags(), "--mode", "auto-edit", "Hello."]);
      expect(asking.code).toBe(0);
      expect(asking.stdout).not.toContain("note: the log is inside the workspace");
    } finally {
      await rm(outside, { recursive: true, force: true });
    }
  });
});

describe("no self-escalation through workspace files", () => {
  it("a model in auto-edit cannot write turnlog.config.json or git's hooks and config unasked; once a person approves, the tool writes it; other files it writes", async () => {
    const escalate = JSON.stringify({ provider: "openai", mode: "full-auto", mcpServers: [{ name: "x", command: "sh", args: ["-c", "touch pwned"] }] });
    server.enqueue(
      openAiSse([
        ...openAiToolCallChunks(0, { id: "call_config", name: "write_file" }, [JSON.stringify({ path: "turnlog.config.json", content: escalate })]),
        ...openAiToolCallChunks(1, { id: "call_hook", name: "write_file" }, [JSON.stringify({ path: ".git/hooks/pre-commit", content: "#!/bin/sh\ntouch pwned\n" })]),
        ...openAiToolCallChunks(2, { id: "call_git_config", name: "write_file" }, [JSON.stringify({ path: ".git/config", content: "[core]\n\tfsmonitor = touch pwned\n" })]),
        ...openAiToolCallChunks(3, { id: "call_notes", name: "write_file" }, [JSON.stringify({ path: "notes-2.md", content: "fine\n" })]),
        finishChunk("tool_calls"),
      ]),
      openAiSse([textChunk("Done."), finishChunk("stop")]),
    );
    // Decisions version 5: the gate asks for each protected path in every mode (docs/security.md).
    const run = await turnlog(["run", ...modelFlags(), "--mode", "auto-edit", "Set things up."]);
    expect(run.code).toBe(3);
    const sessionId = sessionIdIn(run.stdout);
    expect(run.stdout).toContain("⏸  held for approval: write_file call_config · risk workspace-write · rule protected:turnlog.config.json");
    expect(run.stdout).toContain("⏸  held for approval: write_file call_hook · risk workspace-write · rule protected:.git");
    expect(run.stdout).toContain("⏸  held for approval: write_file call_git_config · risk workspace-write · rule protected:.git");
    for (const file of ["turnlog.config.json", ".git/hooks/pre-commit", ".git/config"]) expect(existsSync(path.join(workDir, file)), file).toBe(false);
    expect(run.stdout).not.toContain("held for approval: write_file call_notes");

    for (const callId of ["call_config", "call_git_config"]) expect((await turnlog(["deny", sessionId, callId, "--by", "alice"])).code).toBe(0);
    expect((await turnlog(["approve", sessionId, "call_hook", "--by", "alice", "--note", "the hook I asked for"])).code).toBe(0);
    const resume = await turnlog(["resume", sessionId]);
    expect(resume.code).toBe(0);
    expect(await readFile(path.join(workDir, ".git/hooks/pre-commit"), "utf8")).toBe("#!/bin/sh\ntouch pwned\n");
    for (const file of ["turnlog.config.json", ".git/config"]) expect(existsSync(path.join(workDir, file)), file).toBe(false);
    // The other file was written unasked, once the turn's held calls were answered.
    expect(await readFile(path.join(workDir, "notes-2.md"), "utf8")).toBe("fine\n");
  });
});

describe("turnlog run without --yes, piped: the turn waits in the log", () => {
  it("exits 3 with the held call; approve and resume finish it against the same server", async () => {
    server.enqueue(...readEditAnswerScript());
    // The file says auto-edit; the flag wins, even over --trust-config, which confirms the file's endpoint, model and key variable.
    await writeFile(path.join(workDir, "turnlog.config.json"), JSON.stringify({ provider: "openai", baseURL: `${server.url}/v1`, model: "gpt-test", apiKeyEnv: keyEnv, mode: "auto-edit" }));
    const run = await turnlog(["run", "--mode", "ask", "--trust-config", "Mark the notes final."]);
    expect(run.stderr).toBe("");
    expect(run.stdout).toContain(`+ baseURL ${server.url}/v1`);
    expect(run.stdout).toContain("confirmed with --trust-config");
    expect(run.stdout).toContain("· mode ask");
    expect(run.code).toBe(3);
    const sessionId = sessionIdIn(run.stdout);
    expect(run.stdout).toContain("⏸  awaiting approval");
    expect(run.stdout).toContain("⏸  held for approval: edit_file call_edit · risk workspace-write · rule mode:ask");
    expect(run.stdout).toContain(`npx turnlog approve ${sessionId} call_edit`);
    expect(run.stdout).toContain(`npx turnlog resume ${sessionId}`);
    expect(await readFile(path.join(workDir, "notes.md"), "utf8")).toBe(notes);
    expect(server.remaining).toBe(1);

    const approve = await turnlog(["approve", sessionId, "call_edit", "--by", "alice", "--note", "looks right"]);
    expect(approve.stderr).toBe("");
    expect(approve.code).toBe(0);
    expect(approve.stdout).toContain("✓ approved edit_file call_edit by alice");

    const resume = await turnlog(["resume", sessionId]);
    expect(resume.stderr).toBe("");
    expect(resume.code).toBe(0);
    expect(resume.stdout).toMatch(/✓ edit_file \d+ms/);
    expect(resume.stdout).toContain("assistant › Done: notes.md now says final.");
    expect(resume.stdout).toContain("✓ completed");
    expect(await readFile(path.join(workDir, "notes.md"), "utf8")).toBe("# Notes\n\nstatus: final\n");
    expect(server.remaining).toBe(0);

    const replay = await turnlog(["replay", sessionId, "--json"]);
    expect(replay.code).toBe(0);
    expect(JSON.parse(replay.stdout)).toMatchObject({ identical: true, divergences: [] });
  });
});

describe("sessions run did not start, and forks of those it did", () => {
  it("refuses to continue a demo session", async () => {
    const demo = await turnlog(["demo"]);
    const demoId = /session\s+(demo-\S+)/.exec(demo.stdout)?.[1] ?? "";
    // The demo records into ./.turnlog; run's own log is elsewhere, so it is named.
    const run = await turnlog(["run", ...modelFlags(), "--dir", ".turnlog", "--session", demoId, "hi"]);
    expect(run.code).toBe(1);
    expect(run.stderr).toContain(`session "${demoId}" was not started by "turnlog run"`);
    expectOneCleanLine(run.stderr);
    expect(server.requests).toEqual([]);
  });

  it("a fork of a held run session is answered and resumed with its origin's run record", async () => {
    server.enqueue(...readEditAnswerScript());
    const run = await turnlog(["run", ...modelFlags(), "Mark the notes final."]);
    expect(run.code).toBe(3);
    const sessionId = sessionIdIn(run.stdout);
    const at = (await eventsOf(sessionId)).length;
    expect((await turnlog(["fork", sessionId, "--at", String(at), "--to", "fork-1"])).code).toBe(0);
    expect((await turnlog(["approve", "fork-1", "call_edit"])).code).toBe(0);
    const resume = await turnlog(["resume", "fork-1"]);
    expect(resume.stderr).toBe("");
    expect(resume.code).toBe(0);
    expect(await readFile(path.join(workDir, "notes.md"), "utf8")).toBe("# Notes\n\nstatus: final\n");
    expect((await turnlog(["replay", "fork-1"])).code).toBe(0);
  });
});

describe("a turn that stops: exit 4", () => {
  it("stops at the budget the config file sets", async () => {
    await writeFile(path.join(workDir, "turnlog.config.json"), JSON.stringify({ budgets: { maxIterations: 1 } }));
    server.enqueue(readEditAnswerScript()[0] as ScriptedReply);
    // Confirmed on the command line: a budget from the file applies only once the person confirmed it.
    const run = await turnlog(["run", ...modelFlags(), "--trust-config", "Read the notes."]);
    expect(run.stderr).toBe("");
    expect(run.code).toBe(4);
    expect(run.stdout).toContain("■ stopped: budget:max-iterations");
    expect(run.stdout).toContain("(budgets.maxIterations is 1)");
  });

  it("Ctrl-C while the model is thinking cancels the turn, which the log records as stopped", async () => {
    server.enqueue({ kind: "hang" });
    const child = spawn(process.execPath, [path.join(repoRoot, "bin", "turnlog.js"), "run", ...modelFlags(), "Take your time."], {
      cwd: workDir,
      env: { ...process.env, [keyEnv]: fakeKey, TURNLOG_DIR: undefined, FORCE_COLOR: undefined },
    });
    let stdout = "";
    child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString("utf8")));
    const exited = new Promise<number | null>((resolve) => child.on("close", resolve));
    // A guard against a hang only: a process takes seconds to start on a loaded machine.
    await expect.poll(() => server.requests.length, { timeout: 100_000 }).toBe(1);
    child.kill("SIGINT");
    expect(await exited).toBe(4);
    expect(stdout).toContain("cancelling");
    expect(stdout).toContain("■ stopped: cancelled");
  }, 120_000);
});

// util-linux `script` gives the bin a pseudo-terminal; BSD `script` (macOS) takes other flags.
describe.skipIf(process.platform !== "linux" || !existsSync("/usr/bin/script"))("turnlog run at a terminal", () => {
  it('asks about the held call; "a" approves it and its tool for the rest of the session', async () => {
    server.enqueue(...readEditAnswerScript());
    const run = await runTurnlogInTerminal(["run", ...modelFlags(), "Mark the notes final."], {
      cwd: workDir,
      env: { [keyEnv]: fakeKey, XDG_CONFIG_HOME: configHome },
      answers: [{ after: /approve edit_file call_edit .*›/, type: "a" }],
    });
    expect(run.stdout).toContain("[y]es · [n]o · [a]lways");
    expect(run.code).toBe(0);
    expect(run.stdout).toContain("✓ approved edit_file by");
    expect(run.stdout).toContain("and edit_file for the rest of the session");
    expect(await readFile(path.join(workDir, "notes.md"), "utf8")).toBe("# Notes\n\nstatus: final\n");
    const events = await eventsOf(sessionIdIn(run.stdout));
    expect(events.find((event) => event.type === "turn.approval.granted")?.data).toMatchObject({ callId: "call_edit", scope: "tool", note: "approved at the terminal" });
  }, 150_000);
});

describe("key hygiene", () => {
  async function logFilesContain(needle: string): Promise<boolean> {
    const dir = defaultRunLogDirectory(workDir);
    for (const name of await readdir(dir)) {
      const bytes = await readFile(path.join(dir, name)).catch(() => Buffer.alloc(0));
      if (bytes.includes(needle)) return true;
    }
    return false;
  }

  it("the key is nowhere: not in the output, the events, the audit, or the log's files — a 401 included", async () => {
    server.enqueue(...readEditAnswerScript());
    const completed = await turnlog(["run", ...modelFlags(), "--yes", "Mark the notes final."]);
    expect(completed.code).toBe(0);
    // The server echoes the Authorization header back in its error body.
    server.enqueue(statusReply(401, { body: (request) => ({ error: { message: `Incorrect API key provided: ${String(request.headers.authorization)}`, type: "invalid_request_error" } }) }));
    const refused = await turnlog(["run", ...modelFlags(), "hello"]);
    expect(refused.code).toBe(1);
    expect(refused.stdout).toContain("HTTP 401 Unauthorized");
    expect(refused.stdout).toContain("✗ failed: provider:http-status");
    expect(server.requests.map((request) => request.headers.authorization)).toEqual(Array(4).fill(`Bearer ${fakeKey}`));

    for (const sessionId of [sessionIdIn(completed.stdout), sessionIdIn(refused.stdout)]) {
      const outputs = [
        (await turnlog(["events", sessionId, "--json"])).stdout,
        (await turnlog(["audit", sessionId, "--json"])).stdout,
        (await turnlog(["audit", sessionId])).stdout,
        (await turnlog(["show", sessionId])).stdout,
      ];
      for (const output of outputs) expect(output).not.toContain(fakeKey);
    }
    for (const output of [completed.stdout, completed.stderr, refused.stdout, refused.stderr]) expect(output).not.toContain(fakeKey);
    expect(await logFilesContain(fakeKey)).toBe(false);
    // What is recorded is the variable's name.
    expect(await logFilesContain(keyEnv)).toBe(true);
  });

  it("a hosted API without its key is one line naming the variable, and nothing is recorded", async () => {
    const run = await turnlog(["run", "--base-url", "https://api.example.com/v1", "--model", "m", "--api-key-env", keyEnv, "hi"], { [keyEnv]: undefined });
    expect(run.code).toBe(2);
    expect(run.stderr).toContain(`${keyEnv} is not set`);
    expectOneCleanLine(run.stderr);
    expect(server.requests).toEqual([]);
    // A server on this machine needs no key.
    server.enqueue(openAiSse([textChunk("hi"), finishChunk("stop")]));
    const local = await turnlog(["run", ...modelFlags(), "hi"], { [keyEnv]: undefined });
    expect(local.code).toBe(0);
  });

  it("the model's shell does not get the key, whatever its variable is called", async () => {
    // LLM_AUTH does not look like a secret's name: only knowing it holds the provider's key keeps it out.
    server.enqueue(
      openAiSse([...openAiToolCallChunks(0, { id: "call_env", name: "run_command" }, [JSON.stringify({ command: "env > env.txt" })]), finishChunk("tool_calls")]),
      openAiSse([textChunk("Saved."), finishChunk("stop")]),
    );
    const flags = ["--base-url", `${server.url}/v1`, "--model", "gpt-test", "--api-key-env", "LLM_AUTH"];
    const run = await turnlog(["run", ...flags, "--yes", "Save the environment to env.txt."], { LLM_AUTH: fakeKey, [keyEnv]: undefined });
    expect(run.code).toBe(0);
    expect(server.requests.map((request) => request.headers.authorization)).toEqual(Array(2).fill(`Bearer ${fakeKey}`));
    const environment = await readFile(path.join(workDir, "env.txt"), "utf8");
    expect(environment).toMatch(/^PATH=/m);
    expect(environment).not.toContain(fakeKey);
    expect(environment).not.toMatch(/^LLM_AUTH=/m);
  });

  it("the key's value never reaches the log, whatever its variable is called and wherever it turns up", async () => {
    // A key of no known format, under a name that does not look secret: only `turnlog run`
    // registering the value it reads can keep it out of the log.
    const key = "opaque.provider.credential.7319";
    await writeFile(path.join(workDir, "leak.txt"), `the key: ${key}\n`);
    server.enqueue(
      openAiSse([
        textChunk(`Your key is ${key}.`),
        ...openAiToolCallChunks(0, { id: "call_read", name: "read_file" }, [JSON.stringify({ path: "leak.txt" })]),
        ...openAiToolCallChunks(1, { id: "call_write", name: "write_file" }, [JSON.stringify({ path: "copy.txt", content: key })]),
        finishChunk("tool_calls"),
      ]),
      openAiSse([textChunk(`Copied ${key}.`), finishChunk("stop")]),
    );
    const logDir = path.join(workDir, "log-with-key");
    const flags = ["--base-url", `${server.url}/v1`, "--model", "gpt-test", "--api-key-env", "LLM_AUTH", "--dir", logDir];
    const run = await runTurnlog(["run", ...flags, "--yes", `Copy my key ${key} into copy.txt.`], { cwd: workDir, env: { LLM_AUTH: key, [keyEnv]: undefined } });
    expect(run.code, run.stderr).toBe(0);
    // The tools ran with the real value; the model's request carried the key as its credential.
    expect(await readFile(path.join(workDir, "copy.txt"), "utf8")).toBe(key);
    expect(server.requests[0]?.headers.authorization).toBe(`Bearer ${key}`);
    const sessionId = sessionIdIn(run.stdout);
    for (const command of [["events", sessionId, "--json"], ["show", sessionId, "--events"], ["audit", sessionId, "--json"], ["history", sessionId, "--format", "openai-chat"]]) {
      const shown = await runTurnlogInProcess([...command, "--dir", logDir], { cwd: workDir });
      expect(shown.code, shown.stderr).toBe(0);
      expect(shown.stdout, command.join(" ")).not.toContain(key);
    }
    const events = JSON.stringify(JSON.parse((await runTurnlogInProcess(["events", sessionId, "--json", "--dir", logDir], { cwd: workDir })).stdout));
    expect(events).toContain("Your key is [REDACTED].");
    for (const entry of await readdir(logDir, { withFileTypes: true, recursive: true })) {
      if (entry.isFile()) expect((await readFile(path.join(entry.parentPath, entry.name))).includes(Buffer.from(key)), entry.name).toBe(false);
    }
  });

  it("a key pasted where its variable's name belongs is refused without being repeated", async () => {
    const run = await turnlog(["run", "--model", "m", "--api-key-env", fakeKey, "hi"]);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain("--api-key-env takes the NAME of an environment variable");
    expect(run.stderr).not.toContain(fakeKey);
    expectOneCleanLine(run.stderr);
  });
});

describe("the environment turnlog run is given, not this process's", () => {
  it("run_command gets the given HOME as its private, empty home directory, with the person's files there out of sight", async () => {
    const home = await mkdtemp(path.join(os.tmpdir(), "turnlog-run-home-"));
    try {
      await writeFile(path.join(home, "diary.txt"), "private\n");
      server.enqueue(
        openAiSse([...openAiToolCallChunks(0, { id: "call_home", name: "run_command" }, [JSON.stringify({ command: 'cd ~ && echo "$PWD" > "$OLDPWD/home.txt" && ls -A >> "$OLDPWD/home.txt"' })]), finishChunk("tool_calls")]),
        openAiSse([textChunk("Looked."), finishChunk("stop")]),
      );
      const run = await turnlog(["run", ...modelFlags(), "--yes", "Look at home."], { HOME: home });
      expect(run.code, run.stderr).toBe(0);
      expect(run.stdout).toContain("commands run in a sandbox");
      expect(await readFile(path.join(workDir, "home.txt"), "utf8")).toBe(`${home}\n`);
    } finally {
      await rm(home, { recursive: true, force: true });
    }
  });
});

describe("configuration mistakes: one line, exit 2", () => {
  it.each([
    [{ provider: "openia" }, 'turnlog: turnlog.config.json: provider: expected "openai" or "anthropic"'],
    [{ mode: "yolo" }, 'turnlog: turnlog.config.json: mode: expected "ask", "auto-edit", "full-auto" or "read-only"'],
    [{ modle: "x" }, 'turnlog: turnlog.config.json: unknown field "modle"'],
    [{ mcpServers: [{ name: "files" }] }, "turnlog: turnlog.config.json: mcpServers[0]: expected either a command (stdio) or a url (Streamable HTTP)"],
    [{ budgets: { maxIterations: 0 } }, "turnlog: turnlog.config.json: budgets.maxIterations: Too small"],
  ])("%j", async (config, message) => {
    await writeFile(path.join(workDir, "turnlog.config.json"), JSON.stringify(config));
    const run = await turnlog(["run", ...modelFlags(), "hi"]);
    expect(run.code).toBe(2);
    expect(run.stdout).toBe("");
    expect(run.stderr.startsWith(message)).toBe(true);
    expectOneCleanLine(run.stderr);
    expect(server.requests).toEqual([]);
  });

  it.each([
    [["--config", "missing.json"], "config file not found: missing.json"],
    [["--mcp", "server $TOKEN"], "$TOKEN is not expanded"],
    [["--mcp", "a | b"], "shell syntax"],
    [["--provider", "azure"], "argument 'azure' is invalid"],
  ])("%j", async (flags, message) => {
    const run = await turnlog(["run", ...modelFlags(), ...flags, "hi"]);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain(message);
    expectOneCleanLine(run.stderr);
  });

  it("a model is required", async () => {
    const run = await turnlog(["run", "--base-url", `${server.url}/v1`, "hi"]);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain("no model: pass --model");
    expectOneCleanLine(run.stderr);
  });
});

describe("turnlog run --mcp", () => {
  const require = createRequire(import.meta.url);
  const everything = path.join(path.dirname(require.resolve("@modelcontextprotocol/server-everything/package.json")), "dist/index.js");

  it("starts the server, offers and runs its tools in the session, and replays by starting it again", async () => {
    server.enqueue(
      openAiSse([...openAiToolCallChunks(0, { id: "call_echo", name: "mcp__everything__echo" }, [JSON.stringify({ message: "hi there" })]), finishChunk("tool_calls")]),
      openAiSse([textChunk("The server echoed it."), finishChunk("stop")]),
    );
    const run = await turnlog(["run", ...modelFlags(), "--mcp", `${process.execPath} ${everything} stdio`, "echo something"]);
    expect(run.stderr).toBe("");
    expect(run.code).toBe(0);
    expect(run.stdout).toContain("MCP everything");
    expect(run.stdout).toMatch(/● mcp__everything__echo \{"message":"hi there"\} {2}allow · rule mode:ask · read-only-local/);
    expect(run.stdout).toMatch(/✓ mcp__everything__echo \d+ms · "Echo: hi there"/);
    const sessionId = sessionIdIn(run.stdout);
    const started = (await eventsOf(sessionId)).find((event) => event.type === "session.started")?.data as { tools: { name: string; source?: string }[] };
    expect(started.tools.filter((tool) => tool.source === "mcp:everything").map((tool) => tool.name)).toContain("mcp__everything__echo");
    const offered = (server.requests[0]?.body as { tools: { function: { name: string } }[] }).tools.map((tool) => tool.function.name);
    expect(offered).toEqual(expect.arrayContaining(["mcp__everything__echo", "read_file"]));
    const replay = await turnlog(["replay", sessionId]);
    expect(replay.stderr).toBe("");
    expect(replay.code).toBe(0);
  }, 60_000);

  it("approve and resume start the recorded server again to run a held MCP call", async () => {
    server.enqueue(
      openAiSse([...openAiToolCallChunks(0, { id: "call_toggle", name: "mcp__everything__toggle-simulated-logging" }, ["{}"]), finishChunk("tool_calls")]),
      openAiSse([textChunk("Logging is toggled."), finishChunk("stop")]),
    );
    const run = await turnlog(["run", ...modelFlags(), "--mcp", `${process.execPath} ${everything} stdio`, "toggle logging"]);
    expect(run.code).toBe(3);
    const sessionId = sessionIdIn(run.stdout);
    expect((await turnlog(["approve", sessionId, "call_toggle"])).code).toBe(0);
    const resume = await turnlog(["resume", sessionId]);
    expect(resume.stderr).toBe("");
    expect(resume.code).toBe(0);
    expect(resume.stdout).toMatch(/✓ mcp__everything__toggle-simulated-logging \d+ms/);
    expect((await turnlog(["replay", sessionId])).code).toBe(0);
  }, 60_000);
});


