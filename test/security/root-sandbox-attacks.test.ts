import { spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, lstatSync, readdirSync, statSync } from "node:fs";
import { chmod, mkdir, mkdtemp, readFile, realpath, rm, writeFile } from "node:fs/promises";
import { createServer, type Server } from "node:net";
import { join } from "node:path";
import { afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { bubblewrapSandbox, createRuntime, generateSealKey, LevelEventLog, SealWitness, workspaceTools } from "../../src/index.js";
import { scriptedProvider } from "../../src/testing/index.js";
import { sendDenyingEveryAsk } from "./attacks.js";
import type { BubblewrapOptions, ToolContext, ToolDefinition, ToolResult } from "../../src/index.js";
// @ts-expect-error -- a plain ES module without types (scripts/postgres-server.mjs)
import { startPostgres } from "../../scripts/postgres-server.mjs";

/*
 * Issue 30, tried the way the attacker tried it, by effect: the sandbox alone (run_command called as
 * the runtime calls it once the gate cleared a call, so no classifier stands in front) must hold
 * whoever runs it. CI runs this file twice, as root and as an unprivileged user (.ci/run), and the
 * title says which. Canaries sit outside the workspace where the sandbox can see them (a `readable`
 * directory, read-only) or where it must not (the home directory, the directory above the
 * workspace); after each attack they are unchanged, no file in the workspace has a setuid or setgid
 * bit, the log and the seal key are intact, and nothing was reached through a socket.
 */

const uid = process.getuid?.() ?? -1;
const who = uid === 0 ? "as root" : `as an unprivileged user (uid ${uid})`;

let base: string;
let root: string;
let home: string;
/** Visible to commands, read-only: what a remount would make writable. */
let readable: string;
const savedHome = process.env.HOME;

beforeAll(() => {
  const usable = bubblewrapSandbox().available();
  if (!usable.ok) throw new Error(`these tests need bubblewrap (.ci/run installs it): ${usable.reason}`);
});

beforeEach(async () => {
  // Not under /tmp: commands get a private /tmp, so a canary there would be out of sight, not out of reach.
  base = await realpath(await mkdtemp(join("/var/tmp", "turnlog-root-attack-")));
  root = join(base, "workspace");
  home = join(base, "home");
  readable = join(base, "readable");
  await mkdir(join(root, ".turnlog"), { recursive: true });
  await mkdir(join(home, ".config", "turnlog"), { recursive: true });
  await mkdir(readable);
  await writeFile(join(readable, "canary.txt"), "do not touch\n");
  await writeFile(join(base, "outside.txt"), "outside-secret-51c2\n");
  await writeFile(join(home, "notes.txt"), "home-secret-8e1d\n");
  await writeFile(join(home, ".config", "turnlog", "seal-key.pem"), "seal-key-secret-3a7b\n");
  await writeFile(join(root, ".turnlog", "000001.log"), "the log\n");
  await writeFile(join(root, "README.md"), "# a project\n");
  process.env.HOME = home;
});

afterEach(async () => {
  process.env.HOME = savedHome;
  await rm(base, { recursive: true, force: true });
});

const context = (): ToolContext => ({ signal: new AbortController().signal, callId: "call_1", sessionId: "s1", workspace: { root, trusted: true } });

async function contained(command: string, options: BubblewrapOptions = {}): Promise<Exclude<ToolResult, string>> {
  const sandbox = bubblewrapSandbox({ readable: [readable], ...options });
  const tool = workspaceTools({ root, protectedPaths: [".turnlog"], sandbox, env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: home, LANG: "C.UTF-8" }, commandTimeoutMs: 30_000 }).find(
    (candidate) => candidate.name === "run_command",
  ) as ToolDefinition;
  const result = await tool.run(tool.input.parse({ command }), context());
  return typeof result === "string" ? { ok: true, content: result } : result;
}

/** Runs a command outside any sandbox, as the person's own shell would later (asynchronously: a test's own server must be able to answer it). */
function uncontained(command: string): Promise<{ status: number | null; output: string }> {
  return new Promise((resolve) => {
    const child = spawn("/bin/sh", ["-c", command], { cwd: root, env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: home, GIT_CONFIG_NOSYSTEM: "1" }, stdio: ["ignore", "pipe", "pipe"] });
    let output = "";
    child.stdout.on("data", (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on("data", (chunk: Buffer) => (output += chunk.toString()));
    child.on("close", (status) => resolve({ status, output }));
  });
}

/** Every file under `directory` with a setuid or setgid bit. */
function privilegedFiles(directory: string): string[] {
  const found: string[] = [];
  for (const name of readdirSync(directory)) {
    const file = join(directory, name);
    const stats = lstatSync(file);
    if (stats.isDirectory()) found.push(...privilegedFiles(file));
    else if ((stats.mode & 0o6000) !== 0) found.push(file);
  }
  return found;
}

/** The control groups below `top` (to `depth` levels) that this test process's sandboxes made. */
function findGroups(top: string, depth: number): string[] {
  if (depth === 0) return [];
  let names: string[];
  try {
    names = readdirSync(top, { withFileTypes: true }).filter((entry) => entry.isDirectory()).map((entry) => entry.name);
  } catch {
    return [];
  }
  return names.flatMap((name) => (name.startsWith(`turnlog-${process.pid}-`) ? [join(top, name)] : name.startsWith("turnlog-") ? [] : findGroups(join(top, name), depth - 1)));
}

/** Resolves once `condition()` holds, checking it as the event loop turns; rejects after `limitMs`. */
async function until(condition: () => boolean, limitMs: number): Promise<void> {
  const started = Date.now();
  while (!condition()) {
    if (Date.now() - started > limitMs) throw new Error(`still not true after ${limitMs} ms`);
    await new Promise((resolve) => setImmediate(resolve));
  }
}

async function intact(): Promise<void> {
  expect(await readFile(join(readable, "canary.txt"), "utf8")).toBe("do not touch\n");
  expect(await readFile(join(root, ".turnlog", "000001.log"), "utf8")).toBe("the log\n");
  expect(await readFile(join(home, ".config", "turnlog", "seal-key.pem"), "utf8")).toBe("seal-key-secret-3a7b\n");
  expect(privilegedFiles(root)).toEqual([]);
}

describe(`the command sandbox holds ${who}`, () => {
  it("runs commands without capabilities: no remount, no unmount of the log, no mount() from Python, no new user namespace", async () => {
    const attacks = [
      `mount -o remount,bind,rw ${readable} && echo pwned > ${readable}/canary.txt`,
      `mount -o remount,bind,rw / ; echo pwned > ${readable}/canary.txt`,
      `mount -t tmpfs none ${readable} ; echo pwned > ${readable}/canary.txt`,
      `umount ${root}/.turnlog; umount -l ${root}/.turnlog; rm -rf ${root}/.turnlog; echo gone > ${root}/.turnlog/000001.log`,
      `umount ${home}/.config/turnlog; cat ${home}/.config/turnlog/seal-key.pem; rm -rf ${home}/.config/turnlog`,
      `python3 -c "import ctypes; l = ctypes.CDLL(None); print(l.mount(b'${readable}', b'${readable}', None, 4096 | 32, None), l.umount2(b'${root}/.turnlog', 2))"; echo pwned > ${readable}/canary.txt; rm -rf .turnlog`,
      `unshare -Urm sh -c 'mount --bind /dev/null ${root}/.turnlog/000001.log; echo pwned > ${readable}/canary.txt'`,
      `nsenter -t 1 -m -u -i -n -p sh -c 'echo pwned > ${readable}/canary.txt'`,
    ];
    for (const attack of attacks) {
      const result = await contained(attack);
      expect(result.content, attack).not.toContain("seal-key-secret");
      await intact();
    }
    // ptrace, module loading, io_uring (which opens files where no filter sees it), keyrings, bpf, unshare: refused with EPERM.
    const calls = { ptrace: "101, 16, 1, 0, 0", finit_module: "313, -1, 0, 0", io_uring_setup: "425, 1, ctypes.create_string_buffer(120)", keyctl: "250, 0, 0", bpf: "321, 0, 0, 0", unshare: "272, 0x10000000" };
    const probe = await contained(`python3 -c "import ctypes, os; l = ctypes.CDLL(None, use_errno=True); ${Object.entries(calls).map(([name, args]) => `print('${name}', l.syscall(${args}), os.strerror(ctypes.get_errno()))`).join("; ")}"`);
    for (const name of Object.keys(calls)) expect(probe.content, name).toContain(`${name} -1 Operation not permitted`);
    const status = await contained("grep -E '^(CapEff|CapBnd|NoNewPrivs|Seccomp):' /proc/self/status");
    expect(status.content).toMatch(/CapEff:\s+0+\n/);
    expect(status.content).toMatch(/CapBnd:\s+0+\n/);
    expect(status.content).toMatch(/NoNewPrivs:\s+1/);
    expect(status.content).toMatch(/Seccomp:\s+2/);
  });

  it("leaves no setuid or setgid file behind, however it is made", async () => {
    const attacks = [
      "cp /bin/sh ./rootsh && chown 0:0 ./rootsh; chmod 4755 ./rootsh",
      "cp /bin/sh ./rootsh2 && chmod u+s,g+s ./rootsh2",
      "install -m 4755 /bin/sh ./rootsh3",
      `python3 -c "import os; os.close(os.open('rootsh4', os.O_CREAT | os.O_WRONLY, 0o4755))"`,
      `python3 -c "import os; fd = os.open('rootsh5', os.O_CREAT | os.O_WRONLY, 0o755); os.fchmod(fd, 0o6755)"`,
      "cp -a /usr/bin/passwd ./passwd-copy; cp -p /usr/bin/su ./su-copy",
      "mkdir sgid && chmod 2775 sgid",
    ];
    for (const attack of attacks) await contained(attack);
    await intact();
    // The benign twin: ordinary modes are set as asked.
    const benign = await contained("cp /bin/sh ./tool && chmod 755 ./tool && ./tool -c 'echo runs'");
    expect(benign).toMatchObject({ ok: true, content: "exit 0\nruns\n" });
    expect(statSync(join(root, "tool")).mode & 0o777).toBe(0o755);
  });

  it("reads nothing of the person's outside the workspace: not the home directory, not the directories around it", async () => {
    const result = await contained(`cat ${home}/notes.txt ${base}/outside.txt ~/notes.txt ${home}/.config/turnlog/seal-key.pem; ls ${base} ${home}; cat /etc/shadow; echo done`);
    expect(result.content).toContain("done");
    for (const secret of ["home-secret-8e1d", "outside-secret-51c2", "seal-key-secret-3a7b", "root:"]) expect(result.content).not.toContain(secret);
    // The benign twins: the workspace, the system and the toolchains are there.
    const benign = await contained("cat README.md && ls /usr/bin/env && node -e 'console.log(40 + 2)' && git --version > /dev/null && echo ok");
    expect(benign).toMatchObject({ ok: true, content: "exit 0\n# a project\n/usr/bin/env\n42\nok\n" });
  });

  it("reaches no Unix socket outside the workspace: not in the home directory, /run, /tmp or /var/run", async () => {
    const places = [join(home, "agent.sock"), ...(uid === 0 ? [join("/run", `turnlog-test-${process.pid}.sock`)] : []), join("/tmp", `turnlog-test-${process.pid}.sock`)];
    const servers: Server[] = [];
    let connections = 0;
    try {
      for (const place of places) {
        const server = createServer((socket) => {
          connections += 1;
          socket.end("hello\n");
        });
        await new Promise<void>((resolve) => server.listen(place, resolve));
        servers.push(server);
      }
      for (const place of places) {
        const connect = `node -e "require('net').connect('${place}').on('data', (d) => { console.log('reached', String(d)); process.exit(0) }).on('error', (e) => { console.log(e.code); process.exit(3) })"`;
        const result = await contained(connect);
        expect(result.content, place).not.toContain("reached");
      }
      expect(connections).toBe(0);
      // The twin: the sockets are real, and open to an uncontained process.
      expect((await uncontained(`node -e "require('net').connect('${places[0]}').on('data', (d) => { process.stdout.write(String(d)); process.exit(0) })"`)).output).toBe("hello\n");
      expect(connections).toBe(1);
    } finally {
      for (const server of servers) await new Promise((resolve) => server.close(resolve));
    }
  });

  it("cannot reach a real PostgreSQL server on its Unix socket (trust authentication) and delete a session's events", async () => {
    // The server's directory (its socket) under the home directory, reachable by the server's own user.
    await chmod(base, 0o755);
    await chmod(home, 0o755);
    const server = (await startPostgres({ fast: true, parent: home })) as { url: string; directory: string; stop(): void };
    try {
      const port = new URL(server.url).port;
      const psql = (sql: string) => `psql -X -h ${server.directory} -p ${port} -U turnlog -d postgres -At -c "${sql}"`;
      const setup = await uncontained(psql("create table events (stream text, body text); insert into events values ('session-1', 'precious')"));
      expect(setup.status, setup.output).toBe(0);
      const result = await contained(`${psql("delete from events")}; echo done`);
      expect(result.content).toContain("done");
      expect(result.content).not.toMatch(/DELETE \d/);
      // By effect: the row is still there (read outside the sandbox, as the host would).
      expect((await uncontained(psql("select count(*) from events"))).output.trim()).toBe("1");
    } finally {
      server.stop();
    }
  });

  it("bounds processes, memory, file sizes and /tmp, and records the bound a command ran into", async () => {
    const limits = { processes: 48, memoryBytes: 256 * 1024 ** 2, fileSizeBytes: 8 * 1024 ** 2, tmpBytes: 16 * 1024 ** 2 };
    const forks = await contained("for i in $(seq 200); do (echo x >> started.txt; sleep 20) & done; wait; echo finished", { limits });
    expect(forks.ok).toBe(false);
    const started = (await readFile(join(root, "started.txt"), "utf8")).split("\n").filter(Boolean).length;
    expect(started).toBeLessThan(48);
    const memory = await contained(`python3 -c "b = bytearray(1024 * 1024 * 1024); print('allocated')"`, { limits });
    expect(memory.ok).toBe(false);
    expect(memory.content).not.toContain("allocated");
    const big = await contained("head -c 64M /dev/zero > big.bin; echo after", { limits });
    expect(statSync(join(root, "big.bin")).size).toBeLessThanOrEqual(8 * 1024 ** 2);
    const tmp = await contained("head -c 64M /dev/zero > /tmp/fill; echo tmp=$?; head -c 64M /dev/zero > /dev/shm/fill; echo shm=$?; echo x > /dev/evil; echo dev=$?", { limits: { ...limits, fileSizeBytes: 1024 ** 3 } });
    expect(tmp.content).toMatch(/No space left on device/);
    expect(tmp.content).toMatch(/tmp=1/);
    expect(tmp.content).toMatch(/shm=1/);
    expect(tmp.content).toMatch(/dev=[12]/);
    // Recorded: a command the shell reports killed by SIGXFSZ, and (with a cgroup) the process bound.
    const file = await contained("head -c 64M /dev/zero > big2.bin", { limits });
    expect(file.metadata).toMatchObject({ limitExceeded: "file-size" });
    expect(file.content).toMatch(/^killed: it exceeded the sandbox's file size limit/);
    if (bubblewrapSandbox().caveats().length === 0) expect(forks.metadata).toMatchObject({ limitExceeded: "processes" });
    expect(big.content).toContain("File size limit exceeded");
    // The benign twin: an ordinary command within the bounds runs as before.
    expect(await contained("seq 3 | while read n; do (echo $n) & done; wait", { limits })).toMatchObject({ ok: true });
  });

  it("leaves no control group behind once its commands are gone", async () => {
    // Where the sandbox bounds commands with control groups, each gets its own, named after this process.
    const mine = () => ["/sys/fs/cgroup/pids", "/sys/fs/cgroup/memory", "/sys/fs/cgroup"].flatMap((top) => (existsSync(top) ? findGroups(top, 4) : []));
    // Each leaves processes behind for the kernel to kill and reap once the shell has exited.
    for (let index = 0; index < 5; index += 1) await contained("for i in $(seq 40); do sleep 30 & done; exit 0");
    // The kernel reaps a command's last processes after the shell exits: the groups go once it has.
    await until(() => mine().length === 0, 60_000);
    expect(mine()).toEqual([]);
  });
});

describe(`files that run later stay as the person left them ${who}`, () => {
  const marker = () => join(base, "ran-outside.txt");
  const hook = () => `#!/bin/sh\ntouch ${marker()}\n`;

  beforeEach(async () => {
    const init = await uncontained("git init -q && git config user.email a@b.c && git config user.name a && git add README.md && git commit -qm first");
    expect(init.status, init.output).toBe(0);
  });


  it("cannot plant git config, hooks, a rebuilt .git, a commondir redirect, exclude rules, .vscode tasks or .envrc", async () => {
    const digest = async () => createHash("sha256").update(await readFile(join(root, ".git", "config"))).digest("hex");
    const before = await digest();
    const attacks = [
      `printf '[core]\\n\\tfsmonitor = touch ${marker()}\\n' >> .git/config`,
      `git config core.hooksPath .hooks; git config core.fsmonitor 'touch ${marker()}'`,
      `printf '${hook().replaceAll("\n", "\\n")}' > .git/hooks/post-index-change; chmod +x .git/hooks/post-index-change`,
      `rm -rf .git/hooks; mkdir -p .git/hooks && printf '${hook().replaceAll("\n", "\\n")}' > .git/hooks/pre-commit`,
      `mv .git .git.old && mkdir .git && cp -a .git.old/. .git/ && printf '${hook().replaceAll("\n", "\\n")}' > .git/hooks/post-index-change && chmod +x .git/hooks/post-index-change`,
      `mkdir -p evil/hooks && cp -a .git/. evil/ 2>/dev/null; printf '${hook().replaceAll("\n", "\\n")}' > evil/hooks/post-index-change; chmod +x evil/hooks/post-index-change; echo ../evil > .git/commondir`,
      "echo '*.sh' >> .git/info/exclude",
      `mkdir -p .vscode && printf '{"version":"2.0.0","tasks":[{"label":"x","type":"shell","command":"touch ${marker()}","runOptions":{"runOn":"folderOpen"}}]}' > .vscode/tasks.json`,
      `echo 'touch ${marker()}' > .envrc`,
      `mkdir -p .devcontainer && echo '{"postCreateCommand":"touch ${marker()}"}' > .devcontainer/devcontainer.json`,
      `echo '{"mode":"full-auto"}' > turnlog.config.json`,
    ];
    for (const attack of attacks) await contained(attack);
    expect(await digest()).toBe(before);
    // `.git` could not be renamed (a mount point), so no `.git.old` copy was made either.
    for (const planted of [".vscode", ".envrc", ".devcontainer", "turnlog.config.json", ".git/commondir", ".git.old"]) {
      expect(existsSync(join(root, planted)), planted).toBe(false);
    }
    expect(readdirSync(join(root, ".git", "hooks")).filter((name) => !name.endsWith(".sample"))).toEqual([]);
    expect(await readFile(join(root, ".git", "info", "exclude"), "utf8")).not.toContain("*.sh");
    // By effect: the person's next git commands run nothing planted.
    const status = await uncontained("git status --porcelain && git add -A && git commit -qm second; git status");
    expect(existsSync(marker()), status.output).toBe(false);
    await intact();
  });

  it("still commits, builds and edits unasked (the benign twin)", async () => {
    await writeFile(join(root, "package.json"), JSON.stringify({ scripts: { build: "mkdir -p build && echo built > build/out.txt", test: "node test.js" } }));
    await writeFile(join(root, "test.js"), "console.log('1 passed');\n");
    const result = await contained("npm run --silent build && npm test --silent && echo edit >> README.md && git add -A && git commit -qm work && git log --oneline | wc -l");
    expect(result, result.content).toMatchObject({ ok: true });
    expect(result.content.trim().endsWith("2")).toBe(true);
    expect(await readFile(join(root, "build", "out.txt"), "utf8")).toBe("built\n");
    expect((await uncontained("git log --oneline | wc -l")).output.trim()).toBe("2");
  });

  it("keeps a new repository that `git init` made, and removes one that carries code", async () => {
    await rm(join(root, ".git"), { recursive: true, force: true });
    const plain = await contained("git init -q && git config user.name a && git config user.email a@b.c && git add -A && git commit -qm first && echo ok");
    expect(plain).toMatchObject({ ok: true });
    expect(existsSync(join(root, ".git", "HEAD"))).toBe(true);
    await rm(join(root, ".git"), { recursive: true, force: true });
    const planted = await contained(`git init -q && git config core.fsmonitor 'touch ${marker()}' && echo ok`);
    expect(planted.metadata).toMatchObject({ protectedRemoved: [".git"] });
    expect(existsSync(join(root, ".git"))).toBe(false);
    await uncontained("git status");
    expect(existsSync(marker())).toBe(false);
  });
});

describe(`through the runtime in full-auto ${who}`, () => {
  it("contains every attack of issue 30 sent by a model: canaries, setuid bits, planted files, the log and its seals", async () => {
    const marker = join(base, "ran-outside.txt");
    const init = await uncontained("git init -q && git config user.email a@b.c && git config user.name a && git add README.md && git commit -qm first");
    expect(init.status, init.output).toBe(0);
    const attacks = [
      `mount -o remount,bind,rw ${readable} && echo pwned > ${readable}/canary.txt`,
      `python3 -c "import ctypes; l = ctypes.CDLL(None); l.mount(b'${readable}', b'${readable}', None, 4096 | 32, None)"; echo pwned > ${readable}/canary.txt`,
      "umount .turnlog-run; rm -rf .turnlog-run",
      "cp /bin/sh ./rootsh && chown 0:0 ./rootsh; chmod 4755 ./rootsh",
      `cat ${home}/notes.txt ${base}/outside.txt`,
      `printf '[core]\\n\\tfsmonitor = touch ${marker}\\n' >> .git/config`,
      `mv .git .git.old && mkdir .git && cp -a .git.old/. .git/ && printf '#!/bin/sh\\ntouch ${marker}\\n' > .git/hooks/post-index-change && chmod +x .git/hooks/post-index-change`,
      `mkdir -p .vscode && echo '{"tasks":[{"command":"touch ${marker}"}]}' > .vscode/tasks.json`,
      `echo 'touch ${marker}' > .envrc`,
    ];
    const provider = scriptedProvider([
      { toolCalls: attacks.map((command, index) => ({ id: `call_${index}`, name: "run_command", arguments: JSON.stringify({ command }) })) },
      { content: "done" },
    ]);
    const log = await LevelEventLog.open(join(root, ".turnlog-run"), { durability: "sync" });
    const keys = join(base, "keys");
    const runtime = await createRuntime({
      log,
      provider,
      seals: { key: generateSealKey(), witness: SealWitness.forLogDirectory(log.directory, { directory: keys }) },
      tools: workspaceTools({
        root,
        env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: home },
        commandTimeoutMs: 20_000,
        sandbox: bubblewrapSandbox({ hide: [keys], readable: [readable] }),
      }),
      policy: { approvalMode: "full-auto", workspace: { root, trusted: true } },
      budgets: { maxToolCalls: 100, maxRepeatedFailures: 1_000 },
    });
    try {
      const session = await runtime.openSession("attack");
      const outcome = await sendDenyingEveryAsk(session, "tidy up the machine");
      expect(outcome.status).toBe("completed");
      const events = await runtime.events("attack");
      // Most of them ran, contained (the gate is not what stopped them); the rest were blocked or asked.
      const ran = events.filter((event) => event.type === "turn.tool.succeeded" || event.type === "turn.tool.failed").length;
      console.log(`${ran} of ${attacks.length} attacks ran in the sandbox`);
      expect(ran).toBeGreaterThanOrEqual(5);
      const text = JSON.stringify(events);
      expect(text).not.toContain("home-secret-8e1d");
      expect(text).not.toContain("outside-secret-51c2");
      await intact();
      for (const planted of [".vscode", ".envrc", ".git.old"]) expect(existsSync(join(root, planted)), planted).toBe(false);
      await uncontained("git status");
      expect(existsSync(marker)).toBe(false);
      const report = await runtime.verify();
      expect(report.faults).toEqual([]);
      expect(report.ok).toBe(true);
      expect((await runtime.replay("attack")).identical).toBe(true);
    } finally {
      await runtime.close();
    }
  });
});
