import { createServer, type Server } from "node:net";
import { mkdir, mkdtemp, readFile, readdir, realpath, rm, stat, writeFile } from "node:fs/promises";
import { existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeAll, beforeEach, describe, expect, it, vi } from "vitest";
import { bubblewrapSandbox, workspaceTools } from "../../../src/index.js";
import type { BubblewrapOptions, ToolContext, ToolDefinition, ToolResult } from "../../../src/index.js";

/*
 * run_command in a bubblewrap sandbox (docs/security.md#the-command-sandbox-bubblewrap), tried the way an attacker would: each test
 * checks the effect (a canary outside the workspace is untouched, a server saw no connection, a
 * file a background process would have written never appears), and each has a benign twin that
 * must still work. bubblewrap is a real dependency here: `.ci/run` installs it.
 */

let base: string;
let root: string;
/** Outside the workspace: what a contained command must not touch. */
let canary: string;
const savedHome = process.env.HOME;

beforeAll(() => {
  const usable = bubblewrapSandbox().available();
  if (!usable.ok) throw new Error(`these tests need bubblewrap (.ci/run installs it): ${usable.reason}`);
});

beforeEach(async () => {
  // Not under /tmp: commands get a private /tmp, so a canary there would be out of sight, not out of reach.
  base = await realpath(await mkdtemp(join("/var/tmp", "turnlog-sandbox-")));
  root = join(base, "workspace");
  canary = join(base, "canary");
  await mkdir(join(root, ".turnlog"), { recursive: true });
  await mkdir(canary);
  await writeFile(join(canary, "precious.txt"), "do not touch\n");
  await writeFile(join(root, ".turnlog", "000001.log"), "the log\n");
  await writeFile(join(root, "notes.md"), "notes\n");
});

afterEach(async () => {
  process.env.HOME = savedHome;
  await rm(base, { recursive: true, force: true });
});

const context = (): ToolContext => ({ signal: new AbortController().signal, callId: "call_1", sessionId: "s1", workspace: { root, trusted: true } });

/** Runs `run_command` as the runtime does once the gate cleared it; `sandbox: false` runs it uncontained. */
async function runCommand(command: string, options: { sandbox?: BubblewrapOptions | false; env?: Record<string, string>; protectedPaths?: readonly string[] } = {}): Promise<Exclude<ToolResult, string>> {
  const sandbox = options.sandbox === false ? undefined : bubblewrapSandbox(options.sandbox ?? {});
  const tool = workspaceTools({ root, protectedPaths: [".turnlog", ...(options.protectedPaths ?? [])], ...(sandbox ? { sandbox } : {}), ...(options.env ? { env: options.env } : {}), commandTimeoutMs: 10_000 }).find(
    (candidate) => candidate.name === "run_command",
  ) as ToolDefinition;
  const result = await tool.run(tool.input.parse({ command }), context());
  return typeof result === "string" ? { ok: true, content: result } : result;
}

async function canaryIntact(): Promise<void> {
  expect(await readFile(join(canary, "precious.txt"), "utf8")).toBe("do not touch\n");
}

describe("run_command in a bubblewrap sandbox", () => {
  it("writes in the workspace (the benign twin), but deletes and writes nothing outside it, however the command is spelled", async () => {
    const inside = await runCommand("echo made > made.txt && rm notes.md && cat made.txt");
    expect(inside).toMatchObject({ ok: true, content: "exit 0\nmade\n" });
    expect(await readFile(join(root, "made.txt"), "utf8")).toBe("made\n");
    expect(existsSync(join(root, "notes.md"))).toBe(false);

    for (const attack of [
      `rm -rf ${canary}`,
      `echo 'rm -rf ${canary}' | sh`,
      `rm --rec --for ${canary}`,
      `IFS=,; cmd=rm,-rf,${canary}; $cmd`,
      `awk 'BEGIN{system("rm -rf ${canary}")}'`,
      `echo pwned > ${canary}/precious.txt`,
      `sed -i s/do/pwned/ ${canary}/precious.txt`,
      `echo pwned >> /etc/passwd`,
    ]) {
      await runCommand(attack);
      await canaryIntact();
    }
    expect(await readFile("/etc/passwd", "utf8")).not.toContain("pwned");
    // The same command uncontained does delete: the check above can see a deletion.
    await runCommand(`echo 'rm -rf ${canary}' | sh`, { sandbox: false });
    expect(existsSync(canary)).toBe(false);
  });

  it("keeps the protected paths read-only: the agent cannot erase its own log (uncontained, it can)", async () => {
    const log = join(root, ".turnlog", "000001.log");
    const contained = await runCommand("truncate -s 0 .turnlog/*.log; rm -rf .turnlog; cat .turnlog/000001.log");
    expect(contained.content).toContain("the log");
    expect(await readFile(log, "utf8")).toBe("the log\n");

    const uncontained = await runCommand("truncate -s 0 .turnlog/*.log", { sandbox: false });
    expect(uncontained.ok).toBe(true);
    expect(await readFile(log, "utf8")).toBe("");
  });

  it("keeps a protected folder deep in the workspace in place (its parents cannot be moved aside), and removes a missing protected path a command made", async () => {
    await mkdir(join(root, "vendor", "lib"), { recursive: true });
    await writeFile(join(root, "vendor", "lib", "index.js"), "the code\n");
    // vendor/node_modules/lib is missing: where a lookup would find a package before vendor/lib.
    const protectedPaths = ["vendor/lib", "vendor/node_modules/lib"];
    const moved = await runCommand("mv vendor moved && mkdir -p vendor/lib && echo pwned > vendor/lib/index.js", { protectedPaths });
    expect(moved).toMatchObject({ ok: false, content: expect.stringContaining("Device or resource busy") });
    expect(await readFile(join(root, "vendor", "lib", "index.js"), "utf8")).toBe("the code\n");
    expect(existsSync(join(root, "moved"))).toBe(false);

    const planted = await runCommand("mkdir -p vendor/node_modules/lib && echo pwned > vendor/node_modules/lib/index.js", { protectedPaths });
    expect(planted).toMatchObject({ ok: true, content: expect.stringContaining("the sandbox removed what the command created at protected paths (docs/security.md): vendor/node_modules") });
    expect(existsSync(join(root, "vendor", "node_modules"))).toBe(false);
    // A symlink on the way, dangling for now, would lead a later write elsewhere: removed too.
    await runCommand("ln -s ../elsewhere vendor/node_modules", { protectedPaths });
    expect(existsSync(join(root, "vendor", "node_modules"))).toBe(false);
    expect(await readdir(join(root, "vendor"))).toEqual(["lib"]);

    // The benign twin: the folders on the way stay writable, and what is not on the way stays.
    const benign = await runCommand("echo new > vendor/other.txt && mkdir -p vendor/extra/node_modules && rm -r vendor/extra && mkdir vendor/kept", { protectedPaths });
    expect(benign).toMatchObject({ ok: true, content: "exit 0\n" });
    expect((await readdir(join(root, "vendor"))).sort()).toEqual(["kept", "lib", "other.txt"]);
    // Uncontained the same move works: the check above can see one.
    expect(await runCommand("mv vendor moved", { sandbox: false, protectedPaths })).toMatchObject({ ok: true });
    expect(existsSync(join(root, "moved", "lib", "index.js"))).toBe(true);
  });

  it("leaves nothing running: a setsid child is gone when the command returns (uncontained, it survives)", async () => {
    // The pause lets the background child call setsid before the shell exits and its group is killed.
    const late = (name: string) => `setsid sh -c 'sleep 1; echo late > ${join(root, name)}' > /dev/null 2>&1 & sleep 0.3; echo started`;
    expect(await runCommand(late("contained.txt"))).toMatchObject({ ok: true, content: "exit 0\nstarted\n" });
    expect(await runCommand(late("uncontained.txt"), { sandbox: false })).toMatchObject({ ok: true });
    // The uncontained child writes once its second is up; the contained one, started earlier with
    // the same delay, would have written before it had it survived. A deadline far above the
    // second, as a hang guard: a loaded machine can stretch the child's sleep.
    await vi.waitFor(() => expect(existsSync(join(root, "uncontained.txt"))).toBe(true), { timeout: 60_000, interval: 50 });
    expect(existsSync(join(root, "contained.txt"))).toBe(false);
  });

  it("cannot hard-link a file from outside into the workspace (uncontained, it can: same file system)", async () => {
    const contained = await runCommand(`ln ${canary}/precious.txt linked.txt`);
    expect(contained.ok).toBe(false);
    // Outside the workspace there is nothing to link: the sandbox shows only system directories.
    expect(contained.content).toMatch(/No such file or directory|cross-device/i);
    expect(existsSync(join(root, "linked.txt"))).toBe(false);

    // The twin: the refusal is the sandbox's view, not the file system's.
    expect(await runCommand(`ln ${canary}/precious.txt linked.txt`, { sandbox: false })).toMatchObject({ ok: true });
    expect((await stat(join(root, "linked.txt"))).ino).toBe((await stat(join(canary, "precious.txt"))).ino);
  });

  it("reaches no network unless the sandbox allows it", async () => {
    const server: Server = createServer((socket) => socket.end("hello\n"));
    let connections = 0;
    server.on("connection", () => (connections += 1));
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const port = (server.address() as { port: number }).port;
    const connect = `${process.execPath} -e "require('net').connect(${port}, '127.0.0.1').on('data', (d) => { process.stdout.write(String(d)); process.exit(0) }).on('error', (e) => { console.log(e.code); process.exit(3) })"`;
    try {
      const contained = await runCommand(connect);
      expect(contained.ok).toBe(false);
      expect(contained.content).toContain("ECONNREFUSED");
      expect(connections).toBe(0);

      const allowed = await runCommand(connect, { sandbox: { network: true } });
      expect(allowed).toMatchObject({ ok: true, content: "exit 0\nhello\n" });
      expect(connections).toBe(1);
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });

  it("hides credential directories and files under the home directory, and the paths the host names", async () => {
    const home = join(base, "home");
    await mkdir(join(home, ".ssh"), { recursive: true });
    await writeFile(join(home, ".ssh", "id_ed25519"), "PRIVATE KEY\n");
    await writeFile(join(home, ".netrc"), "machine example.com password hunter2\n");
    const vault = join(base, "vault");
    await mkdir(vault);
    await writeFile(join(vault, "token"), "t0ken\n");
    process.env.HOME = home;

    const looked = await runCommand(`ls -A ${home}/.ssh; cat ${home}/.netrc ${vault}/token; echo pwned > ${home}/.ssh/authorized_keys; echo done`, { sandbox: { hide: [vault] } });
    expect(looked.content).not.toContain("id_ed25519");
    expect(looked.content).not.toContain("hunter2");
    expect(looked.content).not.toContain("t0ken");
    expect(looked.content).toContain("done");
    expect(await readdir(join(home, ".ssh"))).toEqual(["id_ed25519"]);

    // The rest of the home directory is not there either (docs/security.md): only git's identity is, read-only.
    await writeFile(join(home, "notes.txt"), "private\n");
    await writeFile(join(home, ".gitconfig"), "[user]\n\tname = Person\n");
    const home2 = await runCommand(`cat ${home}/notes.txt; git config --global user.name; echo x >> ${home}/.gitconfig; echo scratch > ${home}/scratch && cat ${home}/scratch`);
    expect(home2.content).not.toContain("private");
    expect(home2.content).toContain("Person");
    expect(home2.content).toContain("scratch");
    expect(await readFile(join(home, ".gitconfig"), "utf8")).toBe("[user]\n\tname = Person\n");
    expect(existsSync(join(home, "scratch"))).toBe(false);
  });

  it("passes an allowlisted environment, never the host's keys whatever they are called", async () => {
    const env = { PATH: process.env.PATH ?? "/usr/bin:/bin", LANG: "C.UTF-8", LLM_AUTH: "sk-live-abc", DEPLOY_CREDENTIAL: "hunter2", EDITOR: "vi" };
    const shown = await runCommand("env", { env });
    expect(shown.content).toContain("LANG=C.UTF-8");
    expect(shown.content).toContain("TMPDIR=/tmp");
    expect(shown.content).not.toContain("sk-live-abc");
    expect(shown.content).not.toContain("hunter2");
    expect(shown.content).not.toContain("EDITOR=");
    const named = await runCommand("echo $EDITOR", { env, sandbox: { allowEnv: ["EDITOR"] } });
    expect(named.content).toBe("exit 0\nvi\n");
  });

  it("gives commands a private /tmp", async () => {
    const marker = join(tmpdir(), `turnlog-sandbox-marker-${process.pid}`);
    const result = await runCommand(`echo x > ${marker} && ls /tmp`);
    expect(result.ok).toBe(true);
    expect(existsSync(marker)).toBe(false);
  });

  it("runs nothing when the sandbox cannot run here, and says why", async () => {
    const result = await runCommand("echo ran > ran.txt", { sandbox: { bwrap: join(base, "no-such-bwrap") } });
    expect(result).toMatchObject({ ok: false });
    expect(result.content).toMatch(/^not run: the command sandbox is not available \(.*no-such-bwrap is not installed/);
    await expect(stat(join(root, "ran.txt"))).rejects.toThrow();
  });
});
