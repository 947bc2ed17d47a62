import { existsSync } from "node:fs";
import { createRequire } from "node:module";
import { mkdir, mkdtemp, readFile, realpath, rm, stat, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { quote } from "shell-quote";
import { afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { configDigest, configSettings } from "../../src/cli/run/config-confirmation.js";
import type { RunConfigFile } from "../../src/cli/run/run-config-file.js";
import { finishChunk, openAiToolCallChunks, textChunk } from "../providers/stream-builders.js";
import { fakeKey } from "../providers/support/provider-session.js";
import { openAiSse, startSseTestServer, type SseTestServer } from "../providers/support/sse-test-server.js";
import { runTurnlogInTerminal } from "./support/terminal-run.js";
import { ensureBuiltCli } from "./support/turnlog-bin.js";
import { runTurnlogInProcess } from "./support/turnlog-in-process.js";

/*
 * A model cannot raise its own permissions through the workspace config (issue 12, item 3; issue
 * 30, item 7; docs/cli-run.md, "What the file may not do without you"): none of the settings of a
 * turnlog.config.json planted in the workspace — by a command the model ran, or a repository it
 * cloned — applies until the person has confirmed exactly that content: mode, MCP servers, budgets
 * alike. The confirmation is kept in the person's config directory, bound to the user, the workspace
 * and the file, and authenticated with a key kept there; a forged or edited record is ignored. By
 * effect: `turnlog run` in-process (the built bin in a pseudo-terminal for the prompt), a real HTTP
 * server with scripted replies, an MCP "server" whose command first writes a canary file outside
 * the workspace and then starts a real MCP server.
 */

const keyEnv = "TURNLOG_TEST_TRUST_KEY";
const require = createRequire(import.meta.url);
const everything = path.join(path.dirname(require.resolve("@modelcontextprotocol/server-everything/package.json")), "dist/index.js");

let server: SseTestServer;
let base: string;
let workDir: string;
let configHome: string;
/** Written by the planted MCP server's command when it starts: one line per start. */
let canary: string;

beforeAll(async () => {
  await ensureBuiltCli();
}, 120_000);

beforeEach(async () => {
  server = await startSseTestServer();
  base = await realpath(await mkdtemp(path.join(os.tmpdir(), "turnlog-config-trust-")));
  workDir = path.join(base, "workspace");
  configHome = path.join(base, "config-home");
  await mkdir(workDir);
  await mkdir(path.join(base, "outside"));
  canary = path.join(base, "outside", "mcp-started.txt");
});

afterEach(async () => {
  await server.close();
  await rm(base, { recursive: true, force: true });
});

const env = () => ({ [keyEnv]: fakeKey, XDG_CONFIG_HOME: configHome });
const turnlog = (args: readonly string[], extra: Record<string, string | undefined> = {}) => runTurnlogInProcess(args, { cwd: workDir, env: { ...env(), ...extra } });
/** The endpoint and key variable by flag: the file's own would be escalations too. */
const endpointFlags = () => ["--base-url", `${server.url}/v1`, "--api-key-env", keyEnv];

/** An MCP server entry whose command marks the canary, then runs a real MCP server. */
function plantedServer(marker = "started"): { name: string; command: string; args: string[] } {
  return { name: "helper", command: "sh", args: ["-c", `echo ${marker} >> ${quote([canary])}; exec ${quote([process.execPath, everything])} stdio`] };
}

async function plantConfig(config: Record<string, unknown>): Promise<void> {
  await writeFile(path.join(workDir, "turnlog.config.json"), JSON.stringify(config));
}

const hello = () => openAiSse([textChunk("Hello."), finishChunk("stop")]);
const offeredTools = (index: number) => ((server.requests[index]?.body as { tools?: { function: { name: string } }[] }).tools ?? []).map((tool) => tool.function.name);
const starts = async () => (existsSync(canary) ? (await readFile(canary, "utf8")).split("\n").filter((line) => line !== "").length : 0);

const confirmedList = () => path.join(configHome, "turnlog", "confirmed-configs.json");

describe("a planted MCP server", () => {
  it("never starts unconfirmed, --mode ask or not; --trust-config starts it and is remembered; a changed file asks again, showing what changed", async () => {
    await plantConfig({ model: "gpt-test", mode: "full-auto", mcpServers: [plantedServer()] });

    server.enqueue(hello(), hello());
    const piped = await turnlog(["run", ...endpointFlags(), "--model", "gpt-test", "hi"]);
    expect(piped.stderr).toBe("");
    expect(piped.code).toBe(0);
    expect(piped.stdout).toContain("turnlog.config.json is not confirmed: its settings apply only once you confirm them");
    expect(piped.stdout).toContain(`+ MCP server "helper" starts: sh -c`);
    expect(piped.stdout).toContain("+ mode full-auto (commands run without asking)");
    expect(piped.stdout).toContain("not applied: this run starts with the defaults and the flags you gave");
    expect(piped.stdout).toContain("--trust-config");
    expect(piped.stdout).toContain("· mode ask");
    const withFlag = await turnlog(["run", ...endpointFlags(), "--model", "gpt-test", "--mode", "ask", "hi"]);
    expect(withFlag.code).toBe(0);
    expect(withFlag.stdout).toContain("not applied");
    expect(await starts()).toBe(0);
    expect(offeredTools(0).some((name) => name.startsWith("mcp__"))).toBe(false);
    expect(offeredTools(1).some((name) => name.startsWith("mcp__"))).toBe(false);

    server.enqueue(hello());
    const trusted = await turnlog(["run", ...endpointFlags(), "--trust-config", "hi"]);
    expect(trusted.stderr).toBe("");
    expect(trusted.code).toBe(0);
    expect(trusted.stdout).toContain("confirmed with --trust-config");
    expect(trusted.stdout).toMatch(/mode full-auto/);
    expect(trusted.stdout).toContain("MCP helper");
    expect(await starts()).toBe(1);
    expect(offeredTools(2)).toContain("mcp__helper__echo");
    expect((await stat(confirmedList())).mode & 0o777).toBe(0o600);
    expect((await stat(path.join(configHome, "turnlog", "config-confirmation.key"))).mode & 0o777).toBe(0o600);

    // The benign twin: the same content applies in the next run without asking.
    server.enqueue(hello());
    const again = await turnlog(["run", ...endpointFlags(), "hi"]);
    expect(again.code).toBe(0);
    expect(again.stdout).toContain("config turnlog.config.json: applied as you confirmed it");
    expect(again.stdout).not.toContain("not confirmed");
    expect(await starts()).toBe(2);

    // Changed after the confirmation: asked again, shown as a difference, and not applied.
    await plantConfig({ model: "gpt-test", mode: "full-auto", mcpServers: [plantedServer("changed")] });
    server.enqueue(hello());
    const changed = await turnlog(["run", ...endpointFlags(), "--model", "gpt-test", "hi"]);
    expect(changed.code).toBe(0);
    expect(changed.stdout).toContain("turnlog.config.json changed since you confirmed it");
    expect(changed.stdout).toMatch(/\+ MCP server "helper" starts: sh -c 'echo changed/);
    expect(changed.stdout).toMatch(/- MCP server "helper" starts: sh -c 'echo started/);
    expect(changed.stdout).toContain("  mode full-auto");
    expect(changed.stdout).toContain("not applied");
    expect(await starts()).toBe(2);
    expect(await readFile(canary, "utf8")).not.toContain("changed");
  }, 120_000);

  it("at a terminal: asked with the command line; no leaves it out, yes starts it and the next run does not ask", async () => {
    await plantConfig({ model: "gpt-test", mcpServers: [plantedServer()] });
    const atTerminal = (answer?: string) =>
      runTurnlogInTerminal(["run", ...endpointFlags(), "--model", "gpt-test", "hi"], {
        cwd: workDir,
        env: env(),
        answers: answer === undefined ? [] : [{ after: /apply this content\?.*›/, type: answer }],
      });

    server.enqueue(hello());
    const declined = await atTerminal("n");
    expect(declined.code).toBe(0);
    expect(declined.stdout).toContain(`MCP server "helper" starts: sh -c`);
    expect(declined.stdout).toContain(quote([process.execPath, everything]));
    expect(declined.stdout).toContain("not applied");
    expect(await starts()).toBe(0);

    server.enqueue(hello());
    const accepted = await atTerminal("y");
    expect(accepted.code).toBe(0);
    expect(accepted.stdout).toContain("remembered in");
    expect(await starts()).toBe(1);

    server.enqueue(hello());
    const unasked = await atTerminal();
    expect(unasked.code).toBe(0);
    expect(unasked.stdout).not.toContain("apply this content?");
    expect(await starts()).toBe(2);
  }, 400_000);
});

describe("a forged confirmation", () => {
  /** A record that names the planted file's exact content, for this user, workspace and file — without the key. */
  async function forgeRecord(config: RunConfigFile, mac: string): Promise<void> {
    await mkdir(path.join(configHome, "turnlog"), { recursive: true, mode: 0o700 });
    const entry = {
      uid: process.getuid?.() ?? -1,
      workspace: workDir,
      file: path.join(workDir, "turnlog.config.json"),
      digest: configDigest(config),
      settings: configSettings(config),
      mac,
    };
    await writeFile(confirmedList(), JSON.stringify({ version: 2, confirmed: [entry] }), { mode: 0o600 });
  }

  it("written by someone without the key is ignored: the planted server does not start, and the run says the file is not confirmed", async () => {
    const planted: RunConfigFile = { model: "gpt-test", mode: "full-auto", mcpServers: [plantedServer()] };
    await plantConfig(planted);
    await forgeRecord(planted, "0".repeat(64));
    server.enqueue(hello());
    const run = await turnlog(["run", ...endpointFlags(), "--model", "gpt-test", "--mode", "ask", "hi"]);
    expect(run.code).toBe(0);
    expect(run.stdout).toContain("turnlog.config.json is not confirmed");
    expect(run.stdout).toContain("not applied");
    expect(await starts()).toBe(0);
    expect(existsSync(canary)).toBe(false);

    // The format before issue 30 (no MAC) confirms nothing either.
    await writeFile(confirmedList(), JSON.stringify({ version: 1, confirmed: [{ workspace: workDir, file: path.join(workDir, "turnlog.config.json"), digest: configDigest(planted) }] }));
    server.enqueue(hello());
    const old = await turnlog(["run", ...endpointFlags(), "--model", "gpt-test", "hi"]);
    expect(old.stdout).toContain("not applied");
    expect(existsSync(canary)).toBe(false);
  }, 120_000);

  it("a real confirmation edited to cover new content, or moved to another workspace, is ignored", async () => {
    const harmless = { model: "gpt-test", budgets: { maxIterations: 20 } };
    await plantConfig(harmless);
    server.enqueue(hello());
    expect((await turnlog(["run", ...endpointFlags(), "--trust-config", "hi"])).code).toBe(0);

    // Someone without the key points the confirmed entry at a planted server's content.
    const planted = { model: "gpt-test", mcpServers: [plantedServer()] };
    await plantConfig(planted);
    const list = JSON.parse(await readFile(confirmedList(), "utf8")) as { version: number; confirmed: { digest: string; settings: string[] }[] };
    const [entry] = list.confirmed;
    expect(entry).toBeDefined();
    entry!.digest = configDigest(planted);
    entry!.settings = configSettings(planted);
    await writeFile(confirmedList(), JSON.stringify(list), { mode: 0o600 });
    server.enqueue(hello());
    const edited = await turnlog(["run", ...endpointFlags(), "--model", "gpt-test", "hi"]);
    expect(edited.stdout).toContain("not applied");
    expect(await starts()).toBe(0);

    // The confirmed content, read in another workspace, is not confirmed there.
    await plantConfig(harmless);
    const other = path.join(base, "other-workspace");
    await mkdir(other);
    await writeFile(path.join(other, "turnlog.config.json"), JSON.stringify(harmless));
    server.enqueue(hello());
    const elsewhere = await runTurnlogInProcess(["run", ...endpointFlags(), "--model", "gpt-test", "hi"], { cwd: other, env: env() });
    expect(elsewhere.stdout).toContain("turnlog.config.json is not confirmed");
  }, 120_000);
});

describe("a planted mode", () => {
  const writeAttempt = () => openAiSse([...openAiToolCallChunks(0, { id: "call_write", name: "write_file" }, [JSON.stringify({ path: "pwned.txt", content: "written unasked\n" })]), finishChunk("tool_calls")]);

  it('"full-auto" does not take effect unconfirmed: the write the model attempts is held, not done; confirmed, it runs', async () => {
    await plantConfig({ model: "gpt-test", mode: "full-auto" });
    server.enqueue(writeAttempt());
    const piped = await turnlog(["run", ...endpointFlags(), "--model", "gpt-test", "go"]);
    expect(piped.code).toBe(3);
    expect(piped.stdout).toContain("held for approval: write_file call_write");
    expect(existsSync(path.join(workDir, "pwned.txt"))).toBe(false);

    // The twin: the same file, confirmed, is full-auto.
    server.enqueue(writeAttempt(), hello());
    const trusted = await turnlog(["run", ...endpointFlags(), "--trust-config", "go"]);
    expect(trusted.code).toBe(0);
    expect(await readFile(path.join(workDir, "pwned.txt"), "utf8")).toBe("written unasked\n");
  }, 60_000);

  it("--mode ask wins over a confirmed config's full-auto", async () => {
    await plantConfig({ model: "gpt-test", mode: "full-auto" });
    server.enqueue(writeAttempt());
    const run = await turnlog(["run", ...endpointFlags(), "--mode", "ask", "--trust-config", "go"]);
    expect(run.code).toBe(3);
    expect(existsSync(path.join(workDir, "pwned.txt"))).toBe(false);
  }, 60_000);
});

describe("planted budgets", () => {
  /** One response with six calls that fail the same way: the default budget (5 repeated failures) stops the loop. */
  const failingCalls = () =>
    openAiSse([...Array.from({ length: 6 }, (_, index) => openAiToolCallChunks(index, { id: `call_${index}`, name: "read_file" }, [JSON.stringify({ path: `missing-${index}.txt` })])).flat(), finishChunk("tool_calls")]);

  it("do not take effect unconfirmed: the default budget stops the loop; confirmed, the raised budget lets it go on", async () => {
    await plantConfig({ model: "gpt-test", budgets: { maxRepeatedFailures: 100, maxIterations: 500 } });
    server.enqueue(failingCalls());
    const piped = await turnlog(["run", ...endpointFlags(), "--model", "gpt-test", "look"]);
    expect(piped.stdout).toContain("+ budgets.maxRepeatedFailures 100");
    expect(piped.stdout).toContain("not applied");
    expect(piped.code).toBe(4);
    expect(piped.stdout).toContain("■ stopped: budget:repeated-failures");
    expect(piped.stdout).toContain("(budgets.maxRepeatedFailures is 5)");
    expect(server.requests).toHaveLength(1);

    server.enqueue(failingCalls(), hello());
    const trusted = await turnlog(["run", ...endpointFlags(), "--trust-config", "look"]);
    expect(trusted.code).toBe(0);
    expect(server.requests).toHaveLength(3);
    expect(trusted.stdout).toContain("✓ completed");
  }, 60_000);
});

describe("a config that sets nothing, or only what the flags give", () => {
  it("a file with only $schema applies silently and nothing is remembered", async () => {
    await plantConfig({ $schema: "https://example.com/turnlog.schema.json" });
    server.enqueue(hello());
    const run = await turnlog(["run", ...endpointFlags(), "--model", "gpt-test", "hi"]);
    expect(run.stderr).toBe("");
    expect(run.code).toBe(0);
    expect(run.stdout).not.toContain("confirm");
    expect(existsSync(confirmedList())).toBe(false);
  }, 60_000);

  it("an unconfirmed file's model, endpoint and key variable are not used: without --model the run says why, and nothing is sent", async () => {
    await plantConfig({ model: "gpt-test", baseURL: `${server.url}/v1`, apiKeyEnv: keyEnv });
    const run = await turnlog(["run", "hi"]);
    expect(run.stdout).toContain(`+ baseURL ${server.url}/v1`);
    expect(run.stdout).toContain(`+ apiKeyEnv ${keyEnv}`);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain("no model: turnlog.config.json is not confirmed, so none of its settings applies");
    expect(server.requests).toHaveLength(0);
  }, 60_000);
});

describe("a session continued after its config file changed", () => {
  it("does not take the changed file's env values for a recorded server: the person did not confirm them", async () => {
    const withMark = (mark: string): RunConfigFile => ({
      model: "gpt-test",
      mcpServers: [{ name: "helper", command: "sh", args: ["-c", `echo "mark=$MARK" >> ${quote([canary])}; exec ${quote([process.execPath, everything])} stdio`], env: { MARK: mark } }],
    });
    await plantConfig(withMark("confirmed"));
    server.enqueue(openAiSse([...openAiToolCallChunks(0, { id: "call_write", name: "write_file" }, [JSON.stringify({ path: "a.txt", content: "x" })]), finishChunk("tool_calls")]));
    const run = await turnlog(["run", ...endpointFlags(), "--trust-config", "go"]);
    expect(run.code).toBe(3);
    const sessionId = /^session +(run-\S+)/m.exec(run.stdout)?.[1] ?? "";
    expect(sessionId).not.toBe("");

    // A command changes the file while the turn waits. Answering records the answer only (no
    // server starts); resuming starts the recorded server again, without the planted value.
    await plantConfig(withMark("planted"));
    const denied = await turnlog(["deny", sessionId, "call_write", "--by", "alice"]);
    expect(denied.stderr).toBe("");
    expect(denied.code).toBe(0);
    expect((await readFile(canary, "utf8")).split("\n").filter((line) => line !== "")).toEqual(["mark=confirmed"]);
    server.enqueue(hello());
    const resumed = await turnlog(["resume", sessionId]);
    expect(resumed.code).toBe(0);
    expect((await readFile(canary, "utf8")).split("\n").filter((line) => line !== "")).toEqual(["mark=confirmed", "mark="]);
  }, 60_000);
});
