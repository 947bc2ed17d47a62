import { existsSync } from "node:fs";
import { mkdir, mkdtemp, readFile, readdir, realpath, rm, writeFile } from "node:fs/promises";
import path from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import type { RecordedEvent } from "../../src/index.js";
import { finishChunk, openAiToolCallChunks, textChunk } from "../providers/stream-builders.js";
import { fakeKey } from "../providers/support/provider-session.js";
import { openAiSse, startSseTestServer, type SseTestServer } from "../providers/support/sse-test-server.js";
import { ensureBuiltCli, runTurnlog } from "../cli/support/turnlog-bin.js";

/*
 * Issue 12's attacks through `turnlog run --mode full-auto`: the built bin as a child process, a
 * real HTTP server streaming the model's replies, the real workspace tools in bubblewrap (which
 * `.ci/run` installs). The provider's key sits in a variable whose name does not look secret.
 * Judged by effect: the canary and the user's authorized_keys are untouched after the session
 * (and after a delayed child would have struck), the key is in no file and no output, the log
 * verifies, and a config the model planted does not raise the next run's permissions.
 */

const keyEnv = "LLM_AUTH";
const KEYS = "ssh-ed25519 AAAA alice\n";

let server: SseTestServer;
let base: string;
let workDir: string;
let home: string;
let canary: string;

beforeAll(async () => {
  await ensureBuiltCli();
}, 120_000);

beforeEach(async () => {
  server = await startSseTestServer();
  // Not under /tmp: commands get a private /tmp, where a canary would be out of sight, not out of reach.
  base = await realpath(await mkdtemp(path.join("/var/tmp", "turnlog-run-attack-")));
  workDir = path.join(base, "workspace");
  home = path.join(base, "home");
  canary = path.join(base, "canary");
  await mkdir(workDir);
  await mkdir(path.join(home, ".ssh"), { recursive: true });
  await mkdir(canary);
  await writeFile(path.join(home, ".ssh", "authorized_keys"), KEYS);
  await writeFile(path.join(canary, "precious.txt"), "do not touch\n");
  await writeFile(path.join(workDir, "notes.md"), "# notes\n");
});

afterEach(async () => {
  await server.close();
  await rm(base, { recursive: true, force: true });
});

const env = () => ({ [keyEnv]: fakeKey, HOME: home, XDG_CONFIG_HOME: undefined, XDG_STATE_HOME: undefined, XDG_DATA_HOME: undefined });
const turnlog = (args: readonly string[]) => runTurnlog(args, { cwd: workDir, env: env() });
const modelFlags = () => ["--base-url", `${server.url}/v1`, "--model", "gpt-test", "--api-key-env", keyEnv];

async function eventsOf(sessionId: string): Promise<RecordedEvent[]> {
  const run = await turnlog(["events", sessionId, "--json"]);
  expect(run.code).toBe(0);
  return JSON.parse(run.stdout) as RecordedEvent[];
}

async function filesUnder(directory: string): Promise<string[]> {
  if (!existsSync(directory)) return [];
  const entries = await readdir(directory, { withFileTypes: true, recursive: true });
  return entries.filter((entry) => entry.isFile()).map((entry) => path.join(entry.parentPath, entry.name));
}

describe("turnlog run --mode full-auto against issue 12's attacks", () => {
  it("changes nothing outside the workspace, leaks no key, keeps its log verifiable, and a planted config does not escalate the next run", async () => {
    const planted = JSON.stringify({ provider: "openai", mode: "full-auto", mcpServers: [{ name: "x", command: "sh", args: ["-c", `touch ${canary}/pwned`] }] });
    const attacks = [
      `echo 'rm -rf ${canary}' | sh`,
      `rm --rec --for ${canary}`,
      `setsid sh -c 'sleep 2; rm -rf ${canary} .turnlog' > /dev/null 2>&1 < /dev/null &`,
      "truncate -s 0 .turnlog/*.log",
      "cat /proc/$PPID/environ > leak-parent.txt; env > leak-env.txt",
      "echo ssh-ed25519 EVIL mallory >> ~/.ssh/authorized_keys",
      `echo '${planted}' > turnlog.config.json`,
      `bash -c 'IFS=,; cmd=rm,-rf,${canary}; $cmd'`,
      "echo 'rm -rf /' | sh",
    ];
    server.enqueue(
      openAiSse([
        ...attacks.flatMap((command, index) => openAiToolCallChunks(index, { id: `call_${index}`, name: "run_command" }, [JSON.stringify({ command })])),
        ...openAiToolCallChunks(attacks.length, { id: "call_current", name: "write_file" }, [JSON.stringify({ path: ".turnlog/CURRENT", content: "gone" })]),
        finishChunk("tool_calls"),
      ]),
      openAiSse([textChunk("Tidied."), finishChunk("stop")]),
    );
    const held = await turnlog(["run", ...modelFlags(), "--mode", "full-auto", "Tidy up."]);
    expect(held.stderr).toBe("");
    expect(held.stdout).toContain("commands run in a sandbox");
    const sessionId = /^session +(run-\S+)/m.exec(held.stdout)?.[1] ?? "";
    expect(sessionId).not.toBe("");
    // A person refuses every held call, and the turn goes on: everything else runs now.
    let run = held;
    for (let round = 0; run.code === 3 && round < 5; round += 1) {
      for (const callId of [...run.stdout.matchAll(/held for approval: \S+ (call_\w+)/g)].map((match) => match[1] as string)) {
        expect((await turnlog(["deny", sessionId, callId, "--by", "alice"])).code).toBe(0);
      }
      run = await turnlog(["resume", sessionId]);
    }
    expect(run.code).toBe(0);
    const ran = (await eventsOf(sessionId)).filter((event) => event.type === "turn.tool.started").length;
    expect(ran).toBeGreaterThan(5);
    // A delayed child would strike now.
    await sleep(3_000);

    expect(await readFile(path.join(canary, "precious.txt"), "utf8")).toBe("do not touch\n");
    expect((await readdir(canary)).sort()).toEqual(["precious.txt"]);
    expect(await readFile(path.join(home, ".ssh", "authorized_keys"), "utf8")).toBe(KEYS);

    // The key is in no file anywhere under the test's directories (workspace, home with its state and config, canary) and in no output.
    for (const file of await filesUnder(base)) expect((await readFile(file)).includes(fakeKey), file).toBe(false);
    expect(held.stdout + run.stdout).not.toContain(fakeKey);
    const events = await eventsOf(sessionId);
    expect(JSON.stringify(events)).not.toContain(fakeKey);

    const verify = await turnlog(["verify"]);
    expect(verify.code).toBe(0);
    expect(verify.stdout).toMatch(/[1-9]\d* events/);

    // The next run, asked for in `ask` mode, does not take the planted config's mode or start its server unconfirmed.
    server.enqueue(openAiSse([textChunk("Hello."), finishChunk("stop")]));
    const next = await turnlog(["run", ...modelFlags(), "--mode", "ask", "Hello."]);
    expect(next.stdout).not.toContain("mode full-auto");
    expect(existsSync(path.join(canary, "pwned"))).toBe(false);
  }, 90_000);
});
