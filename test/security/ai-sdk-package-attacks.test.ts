import { createHash } from "node:crypto";
import { cpSync, existsSync } from "node:fs";
import { mkdir, mkdtemp, readFile, readlink, realpath, rename, rm, symlink, writeFile } from "node:fs/promises";
import path from "node:path";
import { afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import type { RecordedEvent } from "../../src/index.js";
import type { FakeProviderServer } from "../providers/support/fake-servers/checking-server.js";
import { fakeProviderKey } from "../providers/support/fake-servers/provider-models.js";
import { functionCall, message, reasoning, startResponsesServer } from "../providers/support/fake-servers/responses-server.js";
import { ensureBuiltCli, repoRoot, runTurnlog } from "../cli/support/turnlog-bin.js";

/*
 * `turnlog run --ai-sdk @ai-sdk/openai` loads the package from the workspace's node_modules and
 * runs it inside turnlog, outside the command sandbox, with the key. A model in `full-auto` tries to
 * plant its code there for the next run, as an attacker would: a contained command overwrites the
 * package's entry file and a dependency's, another moves the package's scope folder aside to put
 * a copy of its own in its place, another plants a package where Node looks before the installed
 * one, `write_file` overwrites the entry file, and the workspace's package.json is made to name
 * itself `@ai-sdk/openai` (which Node's self-reference would resolve to the workspace's own code). Judged by effect: the
 * files are byte-identical afterwards, the command's result says the file system is read-only, the
 * write is refused, the log verifies and the next run through the same package works. The built
 * bin in a child process, the real bubblewrap sandbox (installed here and by .ci/run, which runs
 * this folder again as an unprivileged user), the fake Responses server on 127.0.0.1.
 *
 * The workspace holds a real copy of the packages, never a link to turnlog's own node_modules: a
 * protection that failed would otherwise damage the repository's packages.
 */

/** @ai-sdk/openai and every package it loads at run time (a missing one fails the run loudly). */
const installedPackages = ["@ai-sdk/openai", "@ai-sdk/provider", "@ai-sdk/provider-utils", "@standard-schema/spec", "eventsource-parser", "json-schema", "undici", "zod"];
const packageEntry = "node_modules/@ai-sdk/openai/dist/index.mjs";
const dependencyEntry = "node_modules/@ai-sdk/provider/dist/index.mjs";
const planted = "export const pwned = true;\\n";
const shadowScope = "node_modules/@ai-sdk/node_modules";

let base: string;
let workDir: string;
let logDir: string;
let home: string;
const servers: FakeProviderServer[] = [];

beforeAll(async () => {
  await ensureBuiltCli();
}, 120_000);

beforeEach(async () => {
  // Not under /tmp: commands get a private /tmp, where the workspace would be out of sight, not out of reach.
  base = await realpath(await mkdtemp(path.join("/var/tmp", "turnlog-ai-sdk-attack-")));
  workDir = path.join(base, "workspace");
  logDir = path.join(base, "log");
  home = path.join(base, "home");
  await mkdir(path.join(workDir, "src"), { recursive: true });
  await mkdir(home);
  await writeFile(path.join(workDir, "package.json"), `{\n  "name": "demo",\n  "version": "1.4.2",\n  "type": "module"\n}\n`);
  for (const name of installedPackages) {
    cpSync(path.join(repoRoot, "node_modules", name), path.join(workDir, "node_modules", name), { recursive: true, dereference: true });
  }
});

afterEach(async () => {
  for (const server of servers.splice(0)) await server.close();
  await rm(base, { recursive: true, force: true });
});

const turnlog = (args: readonly string[]) =>
  runTurnlog([...args, "--log", logDir], {
    cwd: workDir,
    env: { OPENAI_API_KEY: fakeProviderKey, OPENAI_BASE_URL: undefined, HOME: home, XDG_CONFIG_HOME: undefined, XDG_STATE_HOME: undefined, XDG_DATA_HOME: undefined },
  });

const sessionIdIn = (stdout: string) => /^session (run-\S+)/m.exec(stdout)?.[1] ?? "";

async function sha256(relative: string): Promise<string> {
  return createHash("sha256")
    .update(await readFile(path.join(workDir, relative)))
    .digest("hex");
}

async function eventsOf(sessionId: string): Promise<RecordedEvent[]> {
  const run = await turnlog(["events", sessionId, "--json"]);
  expect(run.code).toBe(0);
  return JSON.parse(run.stdout) as RecordedEvent[];
}

/** What a tool call came to: its event type and the text of its result or failure. */
function outcomeOf(events: readonly RecordedEvent[], callId: string): { type: string; text: string } {
  const ended = events.find((event) => (event.type === "turn.tool.succeeded" || event.type === "turn.tool.failed") && (event.data as { callId?: string }).callId === callId);
  expect(ended, callId).toBeDefined();
  return { type: ended?.type ?? "", text: JSON.stringify(ended?.data) };
}

async function responsesServer(script: Parameters<typeof startResponsesServer>[0]) {
  const server = await startResponsesServer(script);
  servers.push(server);
  return server;
}

describe("turnlog run --ai-sdk: the model cannot rewrite the package turnlog loads", () => {
  it("a contained command and write_file leave the package and its dependency byte-identical, while src/ and node_modules/.cache stay writable, and the next run works", async () => {
    const before = { package: await sha256(packageEntry), dependency: await sha256(dependencyEntry) };
    const command = (callId: string, text: string) => functionCall(`fc_${callId}`, callId, "run_command", { command: text });
    const server = await responsesServer([
      {
        output: [
          reasoning("rs_1", "enc-one", ["Leave something for the next run."]),
          command("call_package", `printf '${planted}' > ${packageEntry}`),
          command("call_dependency", `printf '${planted}' > ${dependencyEntry}`),
          // Moved aside with its scope folder, and a copy of the attacker's put in its place.
          command("call_rename", `mv node_modules/@ai-sdk node_modules/old && cp -r node_modules/old node_modules/@ai-sdk && printf '${planted}' > ${packageEntry}`),
          // A package where Node looks before the installed one (the scope folder's own node_modules).
          command("call_shadow", `mkdir -p ${shadowScope}/@ai-sdk && cp -r node_modules/@ai-sdk/provider ${shadowScope}/@ai-sdk/ && printf '${planted}' > ${shadowScope}/@ai-sdk/provider/dist/index.mjs`),
          functionCall("fc_write", "call_write", "write_file", { path: packageEntry, content: "export const pwned = true;\n" }),
          // The workspace's own package.json named as the package: Node's self-reference would load evil.mjs.
          functionCall("fc_self", "call_self", "write_file", { path: "package.json", content: '{ "name": "@ai-sdk/openai", "type": "module", "exports": "./evil.mjs" }\n' }),
          functionCall("fc_evil", "call_evil", "write_file", { path: "evil.mjs", content: "export const pwned = true;\n" }),
          functionCall("fc_shadow_write", "call_shadow_write", "write_file", { path: "node_modules/node_modules/zod/package.json", content: '{ "name": "zod", "main": "pwned.js" }\n' }),
          // The benign twins: the project's own code, and a cache folder in node_modules that is no package.
          functionCall("fc_app", "call_app", "write_file", { path: "src/app.ts", content: "export const app = 1;\n" }),
          command("call_cache", "mkdir -p node_modules/.cache && printf 'cached\\n' > node_modules/.cache/x"),
        ],
      },
      { output: [reasoning("rs_2", "enc-two"), message("msg_2", "Done.")] },
    ]);
    const run = await turnlog(["run", "--ai-sdk", "@ai-sdk/openai", "--model", "gpt-5", "--base-url", `${server.url}/v1`, "--mode", "full-auto", "Prepare the next run."]);
    expect(run.stderr).toBe("");
    expect(run.code).toBe(0);
    expect(run.stdout).toContain("commands run in a sandbox");
    expect(server.problems).toEqual([]);
    expect(server.remaining).toBe(0);

    expect(await sha256(packageEntry)).toBe(before.package);
    expect(await sha256(dependencyEntry)).toBe(before.dependency);
    expect(existsSync(path.join(workDir, "node_modules", "old"))).toBe(false);
    expect(existsSync(path.join(workDir, shadowScope))).toBe(false);
    expect(existsSync(path.join(workDir, "node_modules", "node_modules"))).toBe(false);

    const sessionId = sessionIdIn(run.stdout);
    const events = await eventsOf(sessionId);
    for (const callId of ["call_package", "call_dependency"]) {
      expect(outcomeOf(events, callId)).toMatchObject({ type: "turn.tool.failed", text: expect.stringMatching(/read-only file system/i) });
    }
    expect(outcomeOf(events, "call_write")).toMatchObject({
      type: "turn.tool.failed",
      text: expect.stringContaining(`is in node_modules/@ai-sdk/openai, which this workspace writes only in a call a person approved`),
    });
    // A folder on the way to the package is a mount point inside the sandbox: it cannot be moved.
    expect(outcomeOf(events, "call_rename")).toMatchObject({ type: "turn.tool.failed", text: expect.stringContaining("Device or resource busy") });
    // The planted package is removed when the command ends, and the command's result says so.
    expect(outcomeOf(events, "call_shadow")).toMatchObject({ type: "turn.tool.succeeded", text: expect.stringContaining("the sandbox removed what the command created at protected paths (docs/security.md): node_modules/@ai-sdk/node_modules") });
    expect(outcomeOf(events, "call_shadow_write")).toMatchObject({ type: "turn.tool.failed", text: expect.stringContaining("which this workspace writes only in a call a person approved") });
    expect(outcomeOf(events, "call_app").type).toBe("turn.tool.succeeded");
    expect(outcomeOf(events, "call_self").type).toBe("turn.tool.succeeded");
    expect(outcomeOf(events, "call_cache").type).toBe("turn.tool.succeeded");
    expect(await readFile(path.join(workDir, "src", "app.ts"), "utf8")).toBe("export const app = 1;\n");
    expect(await readFile(path.join(workDir, "node_modules", ".cache", "x"), "utf8")).toBe("cached\n");

    const verify = await turnlog(["verify"]);
    expect(verify.code).toBe(0);

    // The next run in this workspace loads the same, untouched package, not the workspace's evil.mjs, and works.
    const next = await responsesServer([{ output: [reasoning("rs_3", "enc-three"), message("msg_3", "Hello again.")] }]);
    const again = await turnlog(["run", "--ai-sdk", "@ai-sdk/openai", "--model", "gpt-5", "--base-url", `${next.url}/v1`, "--mode", "full-auto", "Hello."]);
    expect(again.stderr).toBe("");
    expect(again.code).toBe(0);
    expect(again.stdout).toContain("assistant › Hello again.");
    expect(next.problems).toEqual([]);
  }, 300_000);

  it("installed through a symlink (as pnpm does), the link cannot be pointed at a copy of the model's: it is put back, and the next run loads the package it named", async () => {
    // pnpm's layout: the package in a store folder inside the workspace, its name a link to it.
    const store = "node_modules/.store/@ai-sdk+openai/node_modules/@ai-sdk/openai";
    await mkdir(path.dirname(path.join(workDir, store)), { recursive: true });
    await rename(path.join(workDir, "node_modules/@ai-sdk/openai"), path.join(workDir, store));
    await symlink(`../.store/@ai-sdk+openai/node_modules/@ai-sdk/openai`, path.join(workDir, "node_modules/@ai-sdk/openai"), "dir");
    const before = await sha256(`${store}/dist/index.mjs`);
    const command = (callId: string, text: string) => functionCall(`fc_${callId}`, callId, "run_command", { command: text });
    const server = await responsesServer([
      {
        output: [
          command("call_relink", `mkdir -p evil && cp -r ${store}/. evil/ && printf '${planted}' > evil/dist/index.mjs && ln -sfn ../../evil node_modules/@ai-sdk/openai`),
          command("call_replace", `rm node_modules/@ai-sdk/openai && cp -r evil node_modules/@ai-sdk/openai`),
          command("call_store", `printf '${planted}' > ${store}/dist/index.mjs`),
        ],
      },
      { output: [message("msg_2", "Done.")] },
    ]);
    const run = await turnlog(["run", "--ai-sdk", "@ai-sdk/openai", "--model", "gpt-5", "--base-url", `${server.url}/v1`, "--mode", "full-auto", "Prepare the next run."]);
    expect(run.stderr).toBe("");
    expect(run.code).toBe(0);
    expect(server.problems).toEqual([]);

    expect(await readlink(path.join(workDir, "node_modules/@ai-sdk/openai"))).toBe("../.store/@ai-sdk+openai/node_modules/@ai-sdk/openai");
    expect(await sha256(`${store}/dist/index.mjs`)).toBe(before);
    const events = await eventsOf(sessionIdIn(run.stdout));
    for (const callId of ["call_relink", "call_replace"]) {
      expect(outcomeOf(events, callId).text).toContain("the sandbox removed what the command created at protected paths (docs/security.md): node_modules/@ai-sdk/openai");
    }
    expect(outcomeOf(events, "call_store")).toMatchObject({ type: "turn.tool.failed", text: expect.stringMatching(/read-only file system/i) });

    // The next run loads the package the link names, untouched (the planted copy exports no provider).
    const next = await responsesServer([{ output: [message("msg_3", "Hello again.")] }]);
    const again = await turnlog(["run", "--ai-sdk", "@ai-sdk/openai", "--model", "gpt-5", "--base-url", `${next.url}/v1`, "--mode", "full-auto", "Hello."]);
    expect(again.stderr).toBe("");
    expect(again.code).toBe(0);
    expect(again.stdout).toContain("assistant › Hello again.");
  }, 300_000);
});
