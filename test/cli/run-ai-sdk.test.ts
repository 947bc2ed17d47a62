import { mkdir, mkdtemp, readdir, readFile, rm, symlink, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import type { RecordedEvent } from "../../src/index.js";
import type { FakeProviderServer } from "../providers/support/fake-servers/checking-server.js";
import { fakeProviderKey } from "../providers/support/fake-servers/provider-models.js";
import { functionCall, message, reasoning, startResponsesServer } from "../providers/support/fake-servers/responses-server.js";
import { ensureBuiltCli, repoRoot, runTurnlog } from "./support/turnlog-bin.js";

/*
 * `turnlog run --ai-sdk <package>` as a user runs it: the built bin in a child process, in a
 * workspace whose node_modules holds the real @ai-sdk/openai (linked from turnlog's own
 * devDependencies, as `npm install` would put it there), against the fake Responses server
 * started here, which checks every request — the reasoning items echoed with their encrypted
 * content, every call answered. The log is a real LevelDB log in a temporary directory.
 */

const manifest = `{\n  "name": "demo",\n  "version": "1.4.2",\n  "type": "module"\n}\n`;

let workDir: string;
let logDir: string;
let configHome: string;
const servers: FakeProviderServer[] = [];

beforeAll(async () => {
  await ensureBuiltCli();
}, 120_000);

beforeEach(async () => {
  workDir = await mkdtemp(path.join(os.tmpdir(), "turnlog-run-ai-sdk-"));
  logDir = await mkdtemp(path.join(os.tmpdir(), "turnlog-run-ai-sdk-log-"));
  configHome = await mkdtemp(path.join(os.tmpdir(), "turnlog-run-ai-sdk-config-"));
  await writeFile(path.join(workDir, "package.json"), manifest);
});

afterEach(async () => {
  for (const server of servers.splice(0)) await server.close();
  for (const dir of [workDir, logDir, configHome]) await rm(dir, { recursive: true, force: true });
});

/** Installs @ai-sdk/openai in the workspace: a link to the copy in turnlog's node_modules. */
async function installOpenAiPackage(): Promise<void> {
  await mkdir(path.join(workDir, "node_modules", "@ai-sdk"), { recursive: true });
  await symlink(path.join(repoRoot, "node_modules", "@ai-sdk", "openai"), path.join(workDir, "node_modules", "@ai-sdk", "openai"), "dir");
}

/** The key only in the child's environment, under the variable @ai-sdk/openai reads. */
const turnlog = (args: readonly string[], env: Record<string, string | undefined> = { OPENAI_API_KEY: fakeProviderKey }) =>
  runTurnlog([...args, "--log", logDir], { cwd: workDir, env: { OPENAI_API_KEY: undefined, OPENAI_BASE_URL: undefined, XDG_CONFIG_HOME: configHome, ...env } });

const sessionIdIn = (stdout: string) => /^session (run-\S+)/m.exec(stdout)?.[1] ?? "";

async function eventsOf(sessionId: string): Promise<{ events: RecordedEvent[]; text: string }> {
  const run = await turnlog(["events", sessionId, "--json"]);
  expect(run.code).toBe(0);
  return { events: JSON.parse(run.stdout) as RecordedEvent[], text: run.stdout };
}

async function logFilesContain(needle: string): Promise<boolean> {
  for (const name of await readdir(logDir)) {
    const bytes = await readFile(path.join(logDir, name)).catch(() => Buffer.alloc(0));
    if (bytes.includes(needle)) return true;
  }
  return false;
}

async function responsesServer(...script: Parameters<typeof startResponsesServer>[0][]) {
  const server = await startResponsesServer(script.flat());
  servers.push(server);
  return server;
}

describe("turnlog run --ai-sdk @ai-sdk/openai against a fake Responses server", () => {
  it("runs a tool turn and a final answer with the reasoning echoed, records the ai-sdk format, replays identical, and keeps the key out of the log", async () => {
    await installOpenAiPackage();
    const server = await responsesServer([
      { output: [reasoning("rs_1", "enc-one", ["The version is in package.json."]), functionCall("fc_1", "call_read", "read_file", { path: "package.json" })] },
      // The model repeats the key it was never meant to see: the log keeps it redacted.
      { output: [reasoning("rs_2", "enc-two"), message("msg_2", `The project is at version 1.4.2 (and your key is ${fakeProviderKey}).`)] },
    ]);
    const run = await turnlog(["run", "--ai-sdk", "@ai-sdk/openai", "--model", "gpt-5", "--base-url", `${server.url}/v1`, "--yes", "What version is the project at?"]);
    expect(run.stderr).toBe("");
    expect(run.code).toBe(0);
    expect(run.stdout).toContain(`@ai-sdk/openai gpt-5 at ${server.url}/v1`);
    expect(run.stdout).toMatch(/● read_file \{"path":"package\.json"\}/);
    expect(run.stdout).toContain("assistant › The project is at version 1.4.2");
    expect(run.stdout).toContain("✓ completed");

    // The package spoke the Responses API, statelessly, with the key from OPENAI_API_KEY; the
    // second request carried the first reply's reasoning item back, and the file's text.
    expect(server.problems).toEqual([]);
    expect(server.remaining).toBe(0);
    expect(server.requests.map((request) => request.headers.authorization)).toEqual([`Bearer ${fakeProviderKey}`, `Bearer ${fakeProviderKey}`]);
    expect(JSON.stringify(server.requests[1]?.body)).toContain('\\"version\\": \\"1.4.2\\"');

    const sessionId = sessionIdIn(run.stdout);
    const { events, text } = await eventsOf(sessionId);
    expect(events.find((event) => event.type === "session.started")?.data).toMatchObject({ provider: { id: "ai-sdk:openai.responses:gpt-5", format: "ai-sdk" } });
    expect(events.filter((event) => event.type === "turn.tool.succeeded")).toHaveLength(1);

    const replay = await turnlog(["replay", sessionId]);
    expect(replay.stdout).toMatch(/^identical: \d+ decisions recomputed, 0 divergences/);
    expect(replay.code).toBe(0);

    for (const output of [run.stdout, run.stderr, text]) expect(output).not.toContain(fakeProviderKey);
    expect(await logFilesContain(fakeProviderKey)).toBe(false);
    // The run record names the package and the variable, never the value.
    expect(await logFilesContain("@ai-sdk/openai")).toBe(true);
    expect(await logFilesContain("OPENAI_API_KEY")).toBe(true);
  });

  it("a held call is approved, and resume continues through the same package, echoing the reasoning of the turn before the pause", async () => {
    await installOpenAiPackage();
    const server = await responsesServer([
      { output: [reasoning("rs_1", "enc-one", ["Record the version in a file."]), functionCall("fc_1", "call_write", "write_file", { path: "VERSION", content: "1.4.2\n" })] },
      { output: [reasoning("rs_2", "enc-two"), message("msg_2", "Wrote VERSION.")] },
    ]);
    const run = await turnlog(["run", "--ai-sdk", "@ai-sdk/openai", "--model", "gpt-5", "--base-url", `${server.url}/v1`, "Write the version to VERSION."]);
    expect(run.stderr).toBe("");
    expect(run.code).toBe(3);
    expect(server.remaining).toBe(1);
    const sessionId = sessionIdIn(run.stdout);

    const approve = await turnlog(["approve", sessionId, "call_write", "--by", "alice"]);
    expect(approve.code).toBe(0);
    // resume is given no provider flag: the run record names the package, the model and the URL.
    const resume = await turnlog(["resume", sessionId]);
    expect(resume.stderr).toBe("");
    expect(resume.code).toBe(0);
    expect(resume.stdout).toContain("assistant › Wrote VERSION.");
    expect(await readFile(path.join(workDir, "VERSION"), "utf8")).toBe("1.4.2\n");
    expect(server.problems).toEqual([]);
    expect(server.remaining).toBe(0);
    expect(server.requests.map((request) => request.path)).toEqual(["/v1/responses", "/v1/responses"]);

    const replay = await turnlog(["replay", sessionId]);
    expect(replay.code).toBe(0);
  });
});

/**
 * A provider package of the AI SDK's shape that answers without a network: its providers are
 * callable with `languageModel`, `createAcme(settings)` makes one with settings, and the model
 * (`LanguageModelV3`) answers with the model ID, the key and the endpoint it was given, so a test
 * sees which way the package was built.
 */
async function installAcmePackage(name: string, providers: readonly string[]): Promise<void> {
  const folder = path.join(workDir, "node_modules", ...name.split("/"));
  await mkdir(folder, { recursive: true });
  await writeFile(path.join(folder, "package.json"), JSON.stringify({ name, type: "module", exports: { ".": { types: "./index.d.ts", import: "./index.js" } } }));
  const source = `
function languageModel(modelId, settings) {
  return {
    specificationVersion: "v3",
    provider: "acme.chat",
    modelId,
    supportedUrls: {},
    async doGenerate() { throw new Error("turnlog streams"); },
    async doStream() {
      const parts = [
        { type: "stream-start", warnings: [] },
        { type: "text-start", id: "t1" },
        { type: "text-delta", id: "t1", delta: "Answer from " + modelId + "; the key it was given: " + settings.apiKey + "; endpoint " + settings.baseURL + "." },
        { type: "text-end", id: "t1" },
        { type: "finish", finishReason: { unified: "stop", raw: "stop" }, usage: { inputTokens: { total: 12 }, outputTokens: { total: 9 } } },
      ];
      return { stream: new ReadableStream({ start(controller) { for (const part of parts) controller.enqueue(part); controller.close(); } }) };
    },
  };
}
export function createAcme(settings = {}) {
  const provider = (modelId) => languageModel(modelId, settings);
  provider.languageModel = provider;
  return provider;
}
${providers.map((exported) => `export const ${exported} = createAcme({ apiKey: "default-instance", baseURL: "https://api.acme.example/v1" });`).join("\n")}
export const VERSION = "1.0.0";
`;
  await writeFile(path.join(folder, "index.js"), source);
}

describe("turnlog run --ai-sdk with a package turnlog does not know", () => {
  const secret = "acme-secret-Zq8Lm3Rv6Tn1Wx4Yb7Cd";

  it("with --api-key-env and --base-url: made by the package's create… factory with the key from that variable, which the log never holds", async () => {
    // Two providers: the one named after the package (@example/acme → acme) is the one used.
    await installAcmePackage("@example/acme", ["acme", "acmeLegacy"]);
    const run = await turnlog(["run", "--ai-sdk", "@example/acme", "--model", "acme-1", "--api-key-env", "ACME_TOKEN", "--base-url", "https://gateway.example/v1", "hello"], { ACME_TOKEN: secret });
    expect(run.stderr).toBe("");
    expect(run.code).toBe(0);
    expect(run.stdout).toContain("assistant › Answer from acme-1; the key it was given: ");
    expect(run.stdout).toContain("; endpoint https://gateway.example/v1.");
    expect(run.stdout).not.toContain(secret);
    expect(run.stdout).not.toContain("note: turnlog does not know");
    const sessionId = sessionIdIn(run.stdout);
    const { events, text } = await eventsOf(sessionId);
    expect(events.find((event) => event.type === "session.started")?.data).toMatchObject({ provider: { id: "ai-sdk:acme.chat:acme-1", format: "ai-sdk" } });
    expect(text).toContain("Answer from acme-1");
    expect(text).not.toContain(secret);
    expect(await logFilesContain(secret)).toBe(false);
    expect(await logFilesContain("ACME_TOKEN")).toBe(true);
  });

  it("without them: the package's own default instance, and the run says the key is left to it", async () => {
    await installAcmePackage("@example/acme", ["acme"]);
    const run = await turnlog(["run", "--ai-sdk", "@example/acme", "--model", "acme-2", "hello"]);
    expect(run.stderr).toBe("");
    expect(run.code).toBe(0);
    expect(run.stdout).toContain("@example/acme acme-2 at the package's default endpoint");
    expect(run.stdout).toContain("note: turnlog does not know which variable @example/acme reads its key from");
    expect(run.stdout).toContain("assistant › Answer from acme-2; the key it was given: default-instance; endpoint https://api.acme.example/v1.");
  });

  it("from the config file's aiSdk, once its content is confirmed", async () => {
    await installAcmePackage("@example/acme", ["acme"]);
    await writeFile(path.join(workDir, "turnlog.config.json"), JSON.stringify({ aiSdk: "@example/acme", model: "acme-3", apiKeyEnv: "ACME_TOKEN" }));
    const run = await turnlog(["run", "--trust-config", "hello"], { ACME_TOKEN: secret });
    expect(run.stderr).toBe("");
    expect(run.code).toBe(0);
    expect(run.stdout).toContain("+ aiSdk @example/acme (this package is loaded from the workspace's node_modules and runs inside turnlog, with the key)");
    expect(run.stdout).toContain("assistant › Answer from acme-3");
    expect(await logFilesContain(secret)).toBe(false);
  });

  it("run --session continues a session through its recorded package; --provider moves it to turnlog's own adapter", async () => {
    await installAcmePackage("@example/acme", ["acme"]);
    const first = await turnlog(["run", "--ai-sdk", "@example/acme", "--model", "acme-4", "--session", "chat-1", "hello"]);
    expect(first.code).toBe(0);
    const second = await turnlog(["run", "--session", "chat-1", "again"]);
    expect(second.stderr).toBe("");
    expect(second.code).toBe(0);
    expect(second.stdout).toContain("@example/acme acme-4 at the package's default endpoint");
    expect(second.stdout).toContain("assistant › Answer from acme-4");
    // Another provider: its own defaults, not the package's (and so its key is required).
    const moved = await turnlog(["run", "--session", "chat-1", "--provider", "anthropic", "once more"], { ANTHROPIC_API_KEY: undefined });
    expect(moved.code).toBe(2);
    expect(moved.stderr).toContain("ANTHROPIC_API_KEY is not set");
  });

  it("several providers, none named after the package, are refused, naming them", async () => {
    await installAcmePackage("several-models", ["alpha", "beta"]);
    const run = await turnlog(["run", "--ai-sdk", "several-models", "--model", "m", "hello"]);
    expect(run.code).toBe(2);
    expect(run.stderr.trim().split("\n")).toHaveLength(1);
    expect(run.stderr).toContain("several-models: the package exports several AI SDK providers (alpha, beta) and none is named after it");
  });
});

describe("turnlog run --ai-sdk: mistakes are one line, exit 2", () => {
  it("a package not installed in the workspace is named, though turnlog's own node_modules has it", async () => {
    const run = await turnlog(["run", "--ai-sdk", "@ai-sdk/openai", "--model", "gpt-5", "hello"]);
    expect(run.code).toBe(2);
    expect(run.stderr.trim().split("\n")).toHaveLength(1);
    expect(run.stderr).toContain("@ai-sdk/openai: the package is not installed in");
    expect(run.stdout).toBe("");
  });

  it("a package that exports no AI SDK provider is refused, naming what it exports", async () => {
    const folder = path.join(workDir, "node_modules", "left-pad-models");
    await mkdir(folder, { recursive: true });
    await writeFile(path.join(folder, "package.json"), JSON.stringify({ name: "left-pad-models", type: "module", exports: { ".": { import: "./index.js" } } }));
    await writeFile(path.join(folder, "index.js"), "export const leftPad = (text) => ` ${text}`;\nexport function createModels() { return {}; }\n");
    const run = await turnlog(["run", "--ai-sdk", "left-pad-models", "--model", "m", "--base-url", "http://127.0.0.1:9/v1", "hello"]);
    expect(run.code).toBe(2);
    expect(run.stderr.trim().split("\n")).toHaveLength(1);
    expect(run.stderr).toContain("left-pad-models: the package exports no AI SDK provider");
    expect(run.stderr).toContain("it exports createModels, leftPad");
  });

  it("--provider and --ai-sdk together are refused", async () => {
    const run = await turnlog(["run", "--provider", "openai", "--ai-sdk", "@ai-sdk/openai", "--model", "gpt-5", "hello"]);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain("--provider and --ai-sdk name two providers");
  });

  it("a hosted API without the package's key variable is refused before anything is recorded", async () => {
    await installOpenAiPackage();
    const run = await turnlog(["run", "--ai-sdk", "@ai-sdk/openai", "--model", "gpt-5", "hello"], {});
    expect(run.code).toBe(2);
    expect(run.stderr).toContain("OPENAI_API_KEY is not set — export your @ai-sdk/openai API key in it");
    expect(await readdir(logDir)).toEqual([]);
  });

  it("a path is not a package name", async () => {
    const run = await turnlog(["run", "--ai-sdk", "../elsewhere/provider.js", "--model", "m", "hello"]);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain("is not a package name");
  });
});
