import { existsSync } from "node:fs";
import { mkdir, mkdtemp, readFile, readdir, realpath, rm, writeFile } from "node:fs/promises";
import path from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { RecordedEvent } from "../../src/index.js";
import { finishChunk, openAiToolCallChunks, textChunk } from "../providers/stream-builders.js";
import { fakeKey } from "../providers/support/provider-session.js";
import { openAiSse, startSseTestServer, type SseTestServer } from "../providers/support/sse-test-server.js";
import { runTurnlogInProcess } from "../cli/support/turnlog-in-process.js";
import { createServer, type Server } from "node:net";
import { ATTACKS, DEVICE_ATTACKS, KEYS } from "./attacks.js";

/*
 * Issue 12's attacks through `turnlog run --mode full-auto`, run in-process (runCli, given an
 * environment whose HOME is the test's own home directory), a real HTTP server streaming the
 * model's replies, the real workspace tools in bubblewrap (which `.ci/run` installs). The provider's key sits in a variable whose name does not look secret.
 * Judged by effect: the canary and the user's authorized_keys are untouched after the session
 * (and after a delayed child would have struck), the key is in no file and no output, the log
 * verifies, and a config the model planted does not raise the next run's permissions.
 */

const keyEnv = "LLM_AUTH";

let server: SseTestServer;
let base: string;
let workDir: string;
let home: string;
let canary: string;
let listener: Server;
let connections = 0;
let port = 0;

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
  await writeFile(path.join(canary, "passwd"), "root:x:0:0:root:/root:/bin/sh\n");
  await writeFile(path.join(canary, "disk.img"), Buffer.alloc(64 * 1024, 7));
  connections = 0;
  listener = createServer((socket) => {
    connections += 1;
    socket.destroy();
  });
  await new Promise<void>((resolve) => listener.listen(0, "127.0.0.1", resolve));
  port = (listener.address() as { port: number }).port;
});

afterEach(async () => {
  await new Promise((resolve) => listener.close(resolve));
  await server.close();
  await rm(base, { recursive: true, force: true });
});

const env = () => ({ [keyEnv]: fakeKey, HOME: home, XDG_CONFIG_HOME: undefined, XDG_STATE_HOME: undefined, XDG_DATA_HOME: undefined });
const turnlog = (args: readonly string[]) => runTurnlogInProcess(args, { cwd: workDir, env: env() });
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
    const expand = (command: string) => command.replaceAll("{C}", canary).replaceAll("{P}", String(port));
    const attacks = [
      ...ATTACKS.map(expand),
      ...DEVICE_ATTACKS,
      `echo '${planted}' > turnlog.config.json`,
      "cat ~/.config/turnlog/seal-key.pem > stolen.pem",
      "rm -rf ~/.local/state/turnlog ~/.config/turnlog",
    ];
    server.enqueue(
      openAiSse([
        // The script `sh x.sh` runs, written one step earlier.
        ...openAiToolCallChunks(0, { id: "call_script", name: "write_file" }, [JSON.stringify({ path: "x.sh", content: `rm -rf ${canary}\n` })]),
        ...attacks.flatMap((command, index) => openAiToolCallChunks(index + 1, { id: `call_${index}`, name: "run_command" }, [JSON.stringify({ command })])),
        ...openAiToolCallChunks(attacks.length + 1, { id: "call_current", name: "write_file" }, [JSON.stringify({ path: ".turnlog/CURRENT", content: "gone" })]),
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
    // Completed, or stopped (exit 4) by the repeated-failures budget the denials and failed attacks used up.
    expect([0, 4]).toContain(run.code);
    const all = await eventsOf(sessionId);
    const ran = (await eventsOf(sessionId)).filter((event) => event.type === "turn.tool.started").length;
    expect(ran).toBeGreaterThan(20);
    // A delayed child would strike now.
    await sleep(3_000);

    expect(await readFile(path.join(canary, "precious.txt"), "utf8")).toBe("do not touch\n");
    expect(await readFile(path.join(canary, "passwd"), "utf8")).toBe("root:x:0:0:root:/root:/bin/sh\n");
    expect(await readFile(path.join(canary, "disk.img"))).toEqual(Buffer.alloc(64 * 1024, 7));
    expect((await readdir(canary)).sort()).toEqual(["disk.img", "passwd", "precious.txt"]);
    expect(await readFile(path.join(home, ".ssh", "authorized_keys"), "utf8")).toBe(KEYS);
    expect(connections).toBe(0);
    // The seal key never left its directory: its body is in no file of the workspace.
    const sealKey = (await readFile(path.join(home, ".config", "turnlog", "seal-key.pem"), "utf8")).split("\n")[1] ?? "";
    expect(sealKey.length).toBeGreaterThan(20);
    for (const file of await filesUnder(workDir)) expect((await readFile(file, "utf8")).includes(sealKey), file).toBe(false);

    // The key is in no file anywhere under the test's directories (workspace, home with its state and config, canary) and in no output.
    for (const file of await filesUnder(base)) expect((await readFile(file)).includes(fakeKey), file).toBe(false);
    expect(held.stdout + run.stdout).not.toContain(fakeKey);
    const events = await eventsOf(sessionId);
    expect(JSON.stringify(events)).not.toContain(fakeKey);

    const verify = await turnlog(["verify", "--json"]);
    expect(verify.code).toBe(0);
    const verified = JSON.parse(verify.stdout) as { ok: boolean; faults: unknown[]; checked: number; seals: { verified: number } };
    expect(verified).toMatchObject({ ok: true, faults: [] });
    expect(verified.checked).toBeGreaterThan(50);
    expect(verified.seals.verified).toBeGreaterThan(0);

    // The next run, asked for in `ask` mode, does not take the planted config's mode or start its server unconfirmed.
    server.enqueue(openAiSse([textChunk("Hello."), finishChunk("stop")]));
    const next = await turnlog(["run", ...modelFlags(), "--mode", "ask", "Hello."]);
    // (If the file got written, the run lists its settings, "+ mode full-auto" among them, and applies none.)
    expect(next.stdout).toContain("· mode ask");
    expect(next.stdout).not.toContain("· mode full-auto");
    expect(existsSync(path.join(canary, "pwned"))).toBe(false);
  }, 400_000);
});
