import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import { chmod, mkdir, mkdtemp, readFile, readdir, realpath, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { bubblewrapSandbox, createRuntime, MemoryEventLog, workspaceTools } from "../../src/index.js";
import type { ApprovalMode, RecordedEvent, Runtime, SendOutcome } from "../../src/index.js";
import { scriptedProvider } from "../../src/testing/index.js";

/*
 * Issue 30, the default mode, tried as an attacker would: `createRuntime` + `workspaceTools({ root })`
 * with no sandbox, so nothing contains what runs. Each attack is judged by its effect — the marker
 * file the attacker's program would create outside the workspace does not exist, nothing at all was
 * written outside — and by what happened to the call: it was held for a person (asked), and never
 * started. Each keeps a benign twin that must still run unasked (docs/security.md, "Without a
 * sandbox"; "Protected paths").
 *
 * The workspace lies under /var/tmp, with the "outside" directory next to it; an empty outside
 * directory is the proof that nothing was written there.
 */

interface Stage {
  base: string;
  root: string;
  outside: string;
}

const stages: Stage[] = [];
const runtimes: Runtime[] = [];

const git = (root: string, ...args: string[]) => execFileSync("git", args, { cwd: root, stdio: "pipe", env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: root } });

/** A git repository with one commit and a changed README, an `evil.sh` and an `ls` script of the attacker's. */
async function stage(): Promise<Stage> {
  const base = await realpath(await mkdtemp(join("/var/tmp", "turnlog-ask-")));
  const root = join(base, "workspace");
  const outside = join(base, "outside");
  await mkdir(root);
  await mkdir(outside);
  await writeFile(join(root, "README.md"), "# a project\n");
  git(root, "init", "-q");
  git(root, "-c", "user.email=a@example.com", "-c", "user.name=a", "commit", "-q", "--allow-empty", "-m", "start");
  git(root, "add", "README.md");
  git(root, "-c", "user.email=a@example.com", "-c", "user.name=a", "commit", "-q", "-m", "readme");
  await writeFile(join(root, "README.md"), "# a project\n\nchanged\n");
  for (const [name, marker] of [["evil.sh", "evil"], ["ls", "path-ls"]] as const) {
    await writeFile(join(root, name), `#!/bin/sh\ntouch '${join(outside, marker)}'\n`);
    await chmod(join(root, name), 0o755);
  }
  const staged = { base, root, outside };
  stages.push(staged);
  return staged;
}

async function runtimeFor(at: Stage, mode: ApprovalMode, script: Parameters<typeof scriptedProvider>[0], sandboxed = false, protectedNames?: string[]): Promise<Runtime> {
  const runtime = await createRuntime({
    log: new MemoryEventLog(),
    provider: scriptedProvider(script),
    tools: workspaceTools({
      root: at.root,
      // The host's own environment as a developer's shell has it: git's variables included.
      env: { PATH: `${process.env.PATH ?? "/usr/bin:/bin"}`, HOME: at.base, GIT_PAGER: `touch '${join(at.outside, "pager")}'` },
      ...(sandboxed ? { sandbox: bubblewrapSandbox({ bwrap: join(at.base, "no-such-bwrap") }) } : {}),
    }),
    policy: { approvalMode: mode, workspace: { root: at.root, trusted: true }, ...(protectedNames !== undefined ? { protectedNames } : {}) },
    budgets: { maxToolCalls: 200, maxRepeatedFailures: 1_000 },
  });
  runtimes.push(runtime);
  return runtime;
}

const shell = (id: string, command: string) => ({ id, name: "run_command", arguments: JSON.stringify({ command }) });
const write = (id: string, path: string, content: string) => ({ id, name: "write_file", arguments: JSON.stringify({ path, content }) });

function gated(events: readonly RecordedEvent[]): Map<string, { decision: string; rule: string }> {
  return new Map(
    events
      .filter((event) => event.type === "turn.tool_calls.gated")
      .flatMap((event) => (event.data as { decisions: { callId: string; decision: string; rule: string }[] }).decisions)
      .map((decision) => [decision.callId, decision]),
  );
}

function started(events: readonly RecordedEvent[]): Set<string> {
  return new Set(events.filter((event) => event.type === "turn.tool.started").map((event) => (event.data as { callId: string }).callId));
}

function outputs(events: readonly RecordedEvent[]): Map<string, string> {
  return new Map(
    events.flatMap((event) => {
      if (event.type === "turn.tool.succeeded") return [[(event.data as { callId: string }).callId, (event.data as { output: string }).output] as const];
      if (event.type === "turn.tool.failed") return [[(event.data as { callId: string }).callId, `failed: ${(event.data as { message: string }).message}`] as const];
      return [];
    }),
  );
}

const pendingIds = (outcome: SendOutcome) => (outcome.status === "awaiting-approval" ? outcome.pendingApprovals.map((pending) => pending.callId).sort() : []);

afterAll(async () => {
  await Promise.all(runtimes.map((runtime) => runtime.close()));
  await Promise.all(stages.map((at) => rm(at.base, { recursive: true, force: true })));
});

describe("ask mode without a sandbox: no command runs code the person did not approve", () => {
  /** Each attack, with the marker its program would leave outside the workspace if it ran. */
  const attacks = (at: Stage): [string, string][] => {
    const marker = (name: string) => join(at.outside, name);
    return [
      [`GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=core.fsmonitor GIT_CONFIG_VALUE_0='touch ${marker("config-count")}' git status`, "config-count"],
      [`GIT_CONFIG_PARAMETERS="'core.fsmonitor'='touch ${marker("config-parameters")}'" git status`, "config-parameters"],
      [`GIT_EXTERNAL_DIFF=./evil.sh git diff`, "evil"],
      [`GIT_TRACE=${marker("trace")} git status`, "trace"],
      [`PATH=.:$PATH ls`, "path-ls"],
      // The same, spelled as an attacker would next.
      [`env GIT_TRACE=${marker("env-trace")} git status`, "env-trace"],
      [`export GIT_TRACE=${marker("export-trace")}; git status`, "export-trace"],
      [`export PATH=.:$PATH && ls`, "path-ls"],
      [`git -c core.fsmonitor='touch ${marker("dash-c")}' status`, "dash-c"],
      [`git --config-env=core.fsmonitor=HOME status`, "config-env"],
      [`git diff --ext-diff --output=${marker("output")}`, "output"],
      [`git --exec-path=. status`, "exec-path"],
      [`cd .git && git status`, "cd"],
      [`alias ls=./evil.sh; ls`, "evil"],
      // A `#` inside a word is no comment to a shell, whatever a tokenizer says.
      [`ls a#b; GIT_TRACE=${marker("hash-trace")} git status`, "hash-trace"],
      [`ls a#b $(touch ${marker("hash-substitution")})`, "hash-substitution"],
    ];
  };
  const benign: [string, string, (output: string) => void][] = [
    ["call_status", "git status", (output) => expect(output).toContain("README.md")],
    ["call_diff", "git diff", (output) => expect(output).toContain("+changed")],
    ["call_ls", "ls", (output) => expect(output).toMatch(/README\.md/)],
    ["call_cat", "cat README.md", (output) => expect(output).toContain("# a project")],
  ];

  let at: Stage;
  let events: RecordedEvent[];
  let held: string[];

  beforeAll(async () => {
    at = await stage();
    // A planted repository config, as a clone or an earlier approved write could leave it: a known-safe
    // `git status` must not run its fsmonitor, nor its pager.
    git(at.root, "config", "core.fsmonitor", `touch '${join(at.outside, "planted-fsmonitor")}'; false`);
    git(at.root, "config", "core.pager", `touch '${join(at.outside, "planted-pager")}'; cat`);
    const list = attacks(at);
    const runtime = await runtimeFor(at, "ask", [
      { toolCalls: [...list.map(([command], index) => shell(`call_attack_${index}`, command)), ...benign.map(([id, command]) => shell(id, command))] },
      { content: "done" },
    ]);
    const session = await runtime.openSession("ask-attacks");
    const outcome = await session.send("what changed?");
    held = pendingIds(outcome);
    for (const callId of held) await session.deny(callId, { by: "alice", note: "no" });
    expect((await session.resume()).status).toBe("completed");
    events = await runtime.events("ask-attacks");
  }, 120_000);

  it("holds every attack for a person, and none of them starts", () => {
    const decisions = gated(events);
    const ran = started(events);
    attacks(at).forEach(([command], index) => {
      const callId = `call_attack_${index}`;
      expect(decisions.get(callId)?.decision, command).toBe("ask");
      expect(held, command).toContain(callId);
      expect(ran.has(callId), command).toBe(false);
    });
  });

  it("the attackers' programs did not run and nothing was written outside the workspace", async () => {
    for (const [, marker] of attacks(at)) expect(existsSync(join(at.outside, marker)), marker).toBe(false);
    expect(await readdir(at.outside)).toEqual([]);
  });

  it("the benign twins run unasked, as reads, with their real output — and without the planted fsmonitor or pager", () => {
    const decisions = gated(events);
    const results = outputs(events);
    for (const [callId, command, check] of benign) {
      expect(decisions.get(callId), command).toMatchObject({ decision: "allow", rule: "command=safe:read-only" });
      const output = results.get(callId) ?? "";
      expect(output, command).toMatch(/^exit 0\n/);
      check(output);
    }
    expect(existsSync(join(at.outside, "planted-fsmonitor"))).toBe(false);
    expect(existsSync(join(at.outside, "planted-pager"))).toBe(false);
    // The `ls` that ran is the system's: the workspace's script named `ls` would have left its marker.
    expect(existsSync(join(at.outside, "path-ls"))).toBe(false);
  });
});

describe("a person's approval keeps git's own behaviour", () => {
  it("an approved `git commit` runs the repository's pre-commit hook: the hooks are off only for a read the gate let through", async () => {
    const at = await stage();
    await writeFile(join(at.root, ".git", "hooks", "pre-commit"), `#!/bin/sh\ntouch '${join(at.root, "hook-ran")}'\n`);
    await chmod(join(at.root, ".git", "hooks", "pre-commit"), 0o755);
    git(at.root, "config", "core.hooksPath", ".git/hooks");
    const runtime = await runtimeFor(at, "ask", [
      { toolCalls: [shell("call_commit", "git -c user.email=a@example.com -c user.name=a commit -q -am edit"), shell("call_status", "git status --short")] },
      { content: "done" },
    ]);
    const session = await runtime.openSession("commit");
    const outcome = await session.send("commit it");
    expect(pendingIds(outcome)).toEqual(["call_commit"]);
    await session.approve("call_commit", { by: "alice" });
    expect((await session.resume()).status).toBe("completed");
    const events = await runtime.events("commit");
    expect(outputs(events).get("call_commit")).toMatch(/^exit 0\n/);
    expect(existsSync(join(at.root, "hook-ran"))).toBe(true);
  });

  it("run_command given a sandbox it cannot use runs nothing, not even a known-safe read", async () => {
    const at = await stage();
    const runtime = await runtimeFor(at, "ask", [{ toolCalls: [shell("call_touch", `ls; touch '${join(at.outside, "uncontained")}'`), shell("call_ls", "ls")] }, { content: "done" }], true);
    const session = await runtime.openSession("no-sandbox");
    const outcome = await session.send("list");
    for (const callId of pendingIds(outcome)) await session.approve(callId, { by: "alice" });
    if (outcome.status === "awaiting-approval") expect((await session.resume()).status).toBe("completed");
    const results = outputs(await runtime.events("no-sandbox"));
    expect(results.get("call_ls")).toMatch(/^failed: not run: the command sandbox is not available/);
    expect(results.get("call_touch")).toMatch(/^failed: not run: the command sandbox is not available/);
    expect(await readdir(at.outside)).toEqual([]);
  });
});

describe("protected paths: the file tools ask in every mode, full-auto included", () => {
  const dangerous: [string, string, string][] = [
    ["call_git_config", ".git/config", "protected:.git"],
    ["call_hook", ".git/hooks/pre-commit", "protected:.git"],
    ["call_tasks", ".vscode/tasks.json", "protected:.vscode"],
    ["call_envrc", ".envrc", "protected:.envrc"],
    ["call_nested", "sub/.git/config", "protected:.git"],
    ["call_upper", ".GIT/config", "protected:.git"],
    ["call_dotted", "./src/../.git/info/exclude", "protected:.git"],
    ["call_config", "turnlog.config.json", "protected:turnlog.config.json"],
    ["call_host", "deploy.sh", "protected:deploy.sh"],
  ];
  const benign: [string, string][] = [
    ["call_src", "src/git.ts"],
    ["call_ci", ".github/workflows/ci.yml"],
    ["call_ignore", ".gitignore"],
  ];
  const content = (file: string) => `written to ${file}\n`;

  let at: Stage;
  let events: RecordedEvent[];
  let original: Map<string, string | undefined>;
  let beforeApproval: Map<string, string | undefined>;

  beforeAll(async () => {
    at = await stage();
    await mkdir(join(at.root, "sub", ".git"), { recursive: true });
    const snapshot = async () => {
      const files = new Map<string, string | undefined>();
      for (const [, file] of dangerous) files.set(file, existsSync(join(at.root, file)) ? await readFile(join(at.root, file), "utf8") : undefined);
      return files;
    };
    original = await snapshot();
    const runtime = await runtimeFor(at, "full-auto", [
      { toolCalls: [...dangerous.map(([id, file]) => write(id, file, content(file))), ...benign.map(([id, file]) => write(id, file, content(file)))] },
      { content: "done" },
    ], false, ["deploy.sh"]);
    const session = await runtime.openSession("protected");
    const outcome = await session.send("set the project up");
    expect(pendingIds(outcome)).toEqual(dangerous.map(([id]) => id).sort());
    // While the calls wait, nothing of theirs is on disk.
    beforeApproval = await snapshot();
    for (const callId of pendingIds(outcome)) await session.approve(callId, { by: "alice", note: "yes, I want that" });
    expect((await session.resume()).status).toBe("completed");
    events = await runtime.events("protected");
  });

  it("asks for each protected path, naming the entry, even in full-auto", () => {
    const decisions = gated(events);
    for (const [callId, file, rule] of dangerous) expect(decisions.get(callId), file).toMatchObject({ decision: "ask", rule });
  });

  it("writes none of them until a person approves", () => {
    expect(beforeApproval).toEqual(original);
    expect(original.get(".git/config")).toContain("[core]");
    expect(original.get(".vscode/tasks.json")).toBeUndefined();
  });

  it("writes each once approved", async () => {
    for (const [, file] of dangerous) expect(await readFile(join(at.root, file), "utf8"), file).toBe(content(file));
  });

  it("writes the benign twins unasked", async () => {
    const decisions = gated(events);
    for (const [callId, file] of benign) {
      expect(decisions.get(callId), file).toMatchObject({ decision: "allow", rule: "mode:full-auto" });
      expect(await readFile(join(at.root, file), "utf8"), file).toBe(content(file));
    }
  });
});

describe('scoped "always" binds to the exact command the person saw', () => {
  it("after always for `npm test`, `npm test` runs again unasked and the two variants ask", async () => {
    const at = await stage();
    const other = join(at.base, "other");
    await mkdir(other);
    await writeFile(join(at.root, "package.json"), JSON.stringify({ name: "p", private: true, scripts: { test: "node -e \"require('fs').appendFileSync('tested', 'x')\"" } }));
    await writeFile(join(other, "package.json"), JSON.stringify({ name: "o", private: true, scripts: { test: `touch '${join(at.outside, "prefix")}'` } }));
    const importer = `--node-options=--import=data:text/javascript,import('node:fs').then((fs)=>fs.writeFileSync('${join(at.outside, "import")}',''))`;
    const runtime = await runtimeFor(at, "ask", [
      { toolCalls: [shell("call_first", "npm test")] },
      { toolCalls: [shell("call_again", "npm test"), shell("call_import", `npm test ${importer}`), shell("call_prefix", `npm test --prefix=${other}`)] },
      { content: "done" },
    ]);
    const session = await runtime.openSession("always");
    let outcome = await session.send("test it");
    expect(pendingIds(outcome)).toEqual(["call_first"]);
    await session.approve("call_first", { by: "alice", scope: "tool" });
    outcome = await session.resume();
    expect(pendingIds(outcome)).toEqual(["call_import", "call_prefix"]);
    for (const callId of pendingIds(outcome)) await session.deny(callId, { by: "alice" });
    expect((await session.resume()).status).toBe("completed");
    const events = await runtime.events("always");
    const decisions = gated(events);
    expect(decisions.get("call_again")).toMatchObject({ decision: "allow", rule: "approval:command=npm test" });
    expect(decisions.get("call_import")?.decision).toBe("ask");
    expect(decisions.get("call_prefix")?.decision).toBe("ask");
    // The audit names who allowed the repeat: the person's "always".
    expect((await runtime.audit("always")).find((row) => row.callId === "call_again")).toMatchObject({ approvedBy: "alice" });
    // The approved command ran twice; neither variant ran.
    expect(await readFile(join(at.root, "tested"), "utf8")).toBe("xx");
    expect(await readdir(at.outside)).toEqual([]);
  });
});
