import { createServer, type Server } from "node:net";
import { existsSync } from "node:fs";
import { mkdir, mkdtemp, readFile, readdir, realpath, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { bubblewrapSandbox, createRuntime, generateSealKey, LevelEventLog, SealWitness, workspaceTools } from "../../src/index.js";
import type { RecordedEvent, Runtime } from "../../src/index.js";
import { scriptedProvider } from "../../src/testing/index.js";
import { ATTACKS, DEVICE_ATTACKS, KEYS, PRIVATE_KEY, SECRET, sendDenyingEveryAsk } from "./attacks.js";

/*
 * Issue 12, tried the way the attacker tried it: a model in `full-auto` with `createRuntime` +
 * `workspaceTools`, its log in the workspace (`.turnlog`, the library's usual layout), sends every
 * attack that got through before. Each is judged by its effect, not by a classifier's verdict:
 * the canary directory and the user's authorized_keys outside the workspace are untouched, a
 * listening server saw no connection, no secret reached a result, nothing a command started is
 * still at work after the session, and the log still verifies.
 *
 * Twice: with the bubblewrap sandbox (everything that is not forbidden or asked about runs,
 * contained) and without one (everything but a known-safe read asks; every ask is denied here).
 * The canary is under /var/tmp, not /tmp: a contained command gets a private /tmp, where a canary
 * would be out of sight rather than out of reach.
 */

interface Stage {
  base: string;
  root: string;
  home: string;
  canary: string;
  port: number;
  connections: () => number;
}

const stages: Stage[] = [];
const servers: Server[] = [];

async function stage(): Promise<Stage> {
  const base = await realpath(await mkdtemp(join("/var/tmp", "turnlog-attack-")));
  const root = join(base, "workspace");
  const home = join(base, "home");
  const canary = join(base, "canary");
  await mkdir(join(home, ".ssh"), { recursive: true });
  await mkdir(root);
  await mkdir(canary);
  await writeFile(join(home, ".ssh", "authorized_keys"), KEYS);
  await writeFile(join(home, ".ssh", "id_ed25519"), PRIVATE_KEY);
  await writeFile(join(canary, "passwd"), "root:x:0:0:root:/root:/bin/sh\n");
  await writeFile(join(canary, "disk.img"), Buffer.alloc(64 * 1024, 7));
  await writeFile(join(root, "README.md"), "# a project\n");
  let connections = 0;
  const server = createServer((socket) => {
    connections += 1;
    socket.destroy();
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  servers.push(server);
  const port = (server.address() as { port: number }).port;
  const staged = { base, root, home, canary, port, connections: () => connections };
  stages.push(staged);
  return staged;
}

function expand(command: string, at: Stage): string {
  return command.replaceAll("{C}", at.canary).replaceAll("{P}", String(at.port));
}

interface Attacked {
  runtime: Runtime;
  log: LevelEventLog;
  events: RecordedEvent[];
  results: string[];
}

/** One session: the model writes x.sh, then sends every attack; every ask is denied. */
async function attack(at: Stage, contained: boolean): Promise<Attacked> {
  const shell = (index: number, command: string) => ({ id: `call_${index}`, name: "run_command", arguments: JSON.stringify({ command: expand(command, at) }) });
  const provider = scriptedProvider([
    { toolCalls: [{ id: "call_script", name: "write_file", arguments: JSON.stringify({ path: "x.sh", content: expand("rm -rf {C}\n", at) }) }] },
    { toolCalls: [{ id: "call_current", name: "write_file", arguments: JSON.stringify({ path: ".turnlog/CURRENT", content: "MANIFEST-999999\n" }) }] },
    { toolCalls: ATTACKS.map((command, index) => shell(index, command)) },
    { toolCalls: DEVICE_ATTACKS.map((command, index) => shell(100 + index, command)) },
    { content: "done" },
  ]);
  process.env.TURNLOG_ATTACK_SECRET = SECRET;
  const log = await LevelEventLog.open(join(at.root, ".turnlog"), { durability: "sync" });
  // The host's seal key and witness, outside the workspace and hidden from the sandbox.
  const keys = join(at.base, "keys");
  const runtime = await createRuntime({
    log,
    provider,
    seals: { key: generateSealKey(), witness: SealWitness.forLogDirectory(log.directory, { directory: keys }) },
    tools: workspaceTools({
      root: at.root,
      env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: at.home, TURNLOG_ATTACK_SECRET: SECRET },
      commandTimeoutMs: 20_000,
      ...(contained ? { sandbox: bubblewrapSandbox({ hide: [keys] }) } : {}),
    }),
    policy: { approvalMode: "full-auto", workspace: { root: at.root, trusted: true } },
    budgets: { maxToolCalls: 200, maxRepeatedFailures: 1_000 },
  });
  const session = await runtime.openSession("attack");
  const outcome = await sendDenyingEveryAsk(session, "tidy up the machine");
  expect(outcome.status).toBe("completed");
  // Anything a command left running has had time to act.
  await sleep(3_000);
  const events = await runtime.events("attack");
  const results = events.flatMap((event) => {
    if (event.type === "turn.tool.succeeded") return [(event.data as { output: string }).output];
    if (event.type === "turn.tool.failed") return [(event.data as { message: string }).message];
    return [];
  });
  return { runtime, log, events, results };
}

async function expectNothingOutsideChanged(at: Stage): Promise<void> {
  expect(await readFile(join(at.home, ".ssh", "authorized_keys"), "utf8")).toBe(KEYS);
  expect(await readFile(join(at.home, ".ssh", "id_ed25519"), "utf8")).toBe(PRIVATE_KEY);
  expect(await readFile(join(at.canary, "passwd"), "utf8")).toBe("root:x:0:0:root:/root:/bin/sh\n");
  expect(await readFile(join(at.canary, "disk.img"))).toEqual(Buffer.alloc(64 * 1024, 7));
  expect((await readdir(at.canary)).sort()).toEqual(["disk.img", "passwd"]);
  expect(at.connections()).toBe(0);
}

async function expectLogIntact(attacked: Attacked, at: Stage): Promise<void> {
  expect(existsSync(join(at.root, ".turnlog", "CURRENT"))).toBe(true);
  expect(await readFile(join(at.root, ".turnlog", "CURRENT"), "utf8")).not.toContain("MANIFEST-999999");
  const report = await attacked.runtime.verify();
  expect(report.faults).toEqual([]);
  expect(report).toMatchObject({ ok: true, unsealed: [] });
  expect(report.seals.verified).toBeGreaterThan(0);
  expect(report.checked).toBeGreaterThanOrEqual(attacked.events.length);
  expect(attacked.events.length).toBeGreaterThan(50);
  expect((await attacked.runtime.replay("attack")).identical).toBe(true);
}

function gated(events: readonly RecordedEvent[]): Map<string, { decision: string; rule: string; contained?: boolean }> {
  return new Map(
    events
      .filter((event) => event.type === "turn.tool_calls.gated")
      .flatMap((event) => (event.data as { decisions: { callId: string; decision: string; rule: string; contained?: boolean }[] }).decisions)
      .map((decision) => [decision.callId, decision]),
  );
}

beforeAll(() => {
  const usable = bubblewrapSandbox().available();
  if (!usable.ok) throw new Error(`these tests need bubblewrap (.ci/run installs it): ${usable.reason}`);
});

afterAll(async () => {
  delete process.env.TURNLOG_ATTACK_SECRET;
  await Promise.all(servers.map((server) => new Promise((resolve) => server.close(resolve))));
  await Promise.all(stages.map((at) => rm(at.base, { recursive: true, force: true })));
});

describe("issue 12's attacks in full-auto", () => {
  for (const contained of [true, false]) {
    describe(contained ? "with the bubblewrap sandbox" : "without a sandbox", () => {
      let at: Stage;
      let attacked: Attacked;

      beforeAll(async () => {
        at = await stage();
        attacked = await attack(at, contained);
      }, 240_000);

      afterAll(async () => {
        await attacked.runtime.close();
      });

      it("changes nothing outside the workspace, reaches no server, and leaves nothing running", async () => {
        await expectNothingOutsideChanged(at);
        // Still nothing after the `setsid` child's delay.
        await sleep(500);
        await expectNothingOutsideChanged(at);
      });

      it("reads no credential and no secret from the environment of any process", () => {
        for (const result of attacked.results) {
          expect(result).not.toContain(SECRET);
          expect(result).not.toContain("ssh-ed25519 AAAA");
        }
      });

      it("cannot erase, truncate or rewrite its own log: it verifies and replays identical", async () => {
        await expectLogIntact(attacked, at);
      });

      it("blocks the commands that name a real disk before anything runs", () => {
        const decisions = gated(attacked.events);
        for (const index of DEVICE_ATTACKS.keys()) expect(decisions.get(`call_${100 + index}`)?.decision, DEVICE_ATTACKS[index]).toBe("block");
      });

      it(contained ? "records each command's decision as contained" : "ran none of the attacks unasked: each was asked about (and denied) or blocked", () => {
        const decisions = gated(attacked.events);
        for (const index of ATTACKS.keys()) {
          const decision = decisions.get(`call_${index}`);
          expect(decision?.contained, ATTACKS[index]).toBe(contained);
          if (!contained) expect(["ask", "block"], ATTACKS[index]).toContain(decision?.decision);
        }
        // Contained, the attacks the classifier cannot judge did run — the sandbox, not a block, stopped them.
        if (contained) {
          const started = new Set(attacked.events.filter((event) => event.type === "turn.tool.started").map((event) => (event.data as { callId: string }).callId));
          for (const attackText of ["sh x.sh", "bash -c 'IFS=,; cmd=rm,-rf,{C}; $cmd'", "setsid sh -c 'sleep 2; rm -rf {C} .turnlog' > /dev/null 2>&1 < /dev/null &", "truncate -s 0 .turnlog/*.log"]) {
            const callId = `call_${ATTACKS.indexOf(attackText)}`;
            expect(decisions.get(callId), attackText).toMatchObject({ decision: "allow", contained: true });
            expect(started.has(callId), attackText).toBe(true);
          }
        }
      });
    });
  }
});

describe("ordinary development in full-auto with the sandbox (the benign twin)", () => {
  it("builds, tests, cleans ./build, runs a workspace script and commits, unasked, with effects inside the workspace", async () => {
    const at = await stage();
    await writeFile(join(at.root, "package.json"), JSON.stringify({ name: "p", version: "1.0.0", scripts: { build: "node build.js", test: "node test.js" } }));
    await writeFile(join(at.root, "build.js"), "require('fs').mkdirSync('build',{recursive:true}); require('fs').writeFileSync('build/out.txt','built');\n");
    await writeFile(join(at.root, "test.js"), "console.log('1 passed');\n");
    await writeFile(join(at.root, "gen.sh"), "echo generated > gen.txt\n");
    const steps = [
      "git init -q && git config user.email a@b.c && git config user.name a",
      "npm run build",
      "npm test",
      "sh gen.sh",
      "git add -A && git commit -qm first && git log --oneline | wc -l",
      "rm -rf ./build",
      "ls",
    ];
    const provider = scriptedProvider([
      { toolCalls: steps.map((command, index) => ({ id: `call_${index}`, name: "run_command", arguments: JSON.stringify({ command }) })) },
      { content: "done" },
    ]);
    const log = await LevelEventLog.open(join(at.base, "log"), { durability: "sync" });
    const runtime = await createRuntime({
      log,
      provider,
      tools: workspaceTools({ root: at.root, env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: at.home }, sandbox: bubblewrapSandbox() }),
      policy: { approvalMode: "full-auto", workspace: { root: at.root, trusted: true } },
    });
    try {
      const outcome = await (await runtime.openSession("dev")).send("build and test");
      expect(outcome.status).toBe("completed");
      const events = await runtime.events("dev");
      const decisions = gated(events);
      for (const index of steps.keys()) expect(decisions.get(`call_${index}`)?.decision, steps[index]).toBe("allow");
      const failed = events.filter((event) => event.type === "turn.tool.failed");
      expect(failed).toEqual([]);
      expect(await readFile(join(at.root, "gen.txt"), "utf8")).toBe("generated\n");
      expect(existsSync(join(at.root, "build"))).toBe(false);
      expect(existsSync(join(at.root, ".git", "HEAD"))).toBe(true);
      const outputs = events.filter((event) => event.type === "turn.tool.succeeded").map((event) => (event.data as { output: string }).output);
      expect(outputs.join("\n")).toContain("1 passed");
    } finally {
      await runtime.close();
    }
  }, 120_000);

  it("runs a known-safe read unasked in ask mode, without a sandbox", async () => {
    const at = await stage();
    const provider = scriptedProvider([{ toolCalls: [{ id: "call_ls", name: "run_command", arguments: JSON.stringify({ command: "ls && cat README.md && git status 2>&1 | head -1" }) }] }, { content: "done" }]);
    const runtime = await createRuntime({
      log: await LevelEventLog.open(join(at.base, "log"), { durability: "sync" }),
      provider,
      tools: workspaceTools({ root: at.root, env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: at.home } }),
      policy: { approvalMode: "ask", workspace: { root: at.root, trusted: true } },
    });
    try {
      const outcome = await (await runtime.openSession("read")).send("what is here?");
      expect(outcome.status).toBe("completed");
      const output = (await runtime.events("read")).find((event) => event.type === "turn.tool.succeeded")?.data as { output: string } | undefined;
      expect(output?.output).toContain("# a project");
    } finally {
      await runtime.close();
    }
  });
});
