import { chmod, lstat, mkdir, mkdtemp, readFile, readdir, readlink, realpath, rm, stat, symlink, writeFile } from "node:fs/promises";
import { readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createRuntime, gateToolCall, workspaceTools } from "../../../src/index.js";
import type { ApprovalMode, PolicySnapshot, ToolContext, ToolDefinition } from "../../../src/index.js";
import { resolveRealPath } from "../../../src/util/real-path.js";
import { MemoryEventLog, scriptedProvider } from "../../../src/testing/index.js";
import { sequentialIds, steppingClock } from "../../support/tools.js";

let base: string;
/** The workspace root (a real path, so messages and `pwd` compare plainly). */
let root: string;
/** A directory next to the workspace that no tool may reach. */
let outside: string;

beforeEach(async () => {
  base = await realpath(await mkdtemp(join(tmpdir(), "turnlog-workspace-tools-")));
  root = join(base, "workspace");
  outside = join(base, "outside");
  await mkdir(join(root, "src"), { recursive: true });
  await mkdir(outside);
  await writeFile(join(root, "a.txt"), "alpha\nbeta\n");
  await writeFile(join(root, "src", "main.ts"), "export const answer = 42;\n// TODO: more\n");
  await writeFile(join(outside, "secret.txt"), "top secret\n");
});

afterEach(async () => {
  await rm(base, { recursive: true, force: true });
});

function tools(options: Partial<Parameters<typeof workspaceTools>[0]> = {}) {
  const list = workspaceTools({ root, ...options });
  const byName = (name: string) => list.find((tool) => tool.name === name) as ToolDefinition;
  return { list, byName };
}

function context(overrides: Partial<ToolContext> = {}): ToolContext {
  return { signal: new AbortController().signal, callId: "call_1", sessionId: "s1", workspace: { root, trusted: true }, ...overrides };
}

/** Runs one tool directly, the way the runtime does once the gate has cleared the call. */
async function run(name: string, input: Record<string, unknown>, options: Partial<Parameters<typeof workspaceTools>[0]> = {}, ctx: ToolContext = context()) {
  const tool = tools(options).byName(name);
  const parsed = tool.input.parse(input);
  const result = await tool.run(parsed, ctx);
  if (typeof result === "string") return { ok: true, content: result, metadata: undefined };
  return result;
}

/** Whether a process is still running (a zombie waiting to be reaped counts as gone). */
function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    return !/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, "utf8"));
  } catch {
    return true;
  }
}

/**
 * Polls until the condition holds (a process's end has no event to wait on). The deadline is a
 * hang guard only: far above the few milliseconds a kill takes, so a loaded machine never trips it.
 */
async function waitFor(condition: () => boolean | Promise<boolean>, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error("condition not met in time");
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

async function pidFrom(file: string): Promise<number> {
  await waitFor(async () => (await readFile(file, "utf8").catch(() => "")).trim() !== "");
  return Number((await readFile(file, "utf8")).trim());
}

describe("workspaceTools", () => {
  it("returns the six built-in tools with their risk classes and flags", () => {
    const { list, byName } = tools();
    expect(list.map((tool) => [tool.name, tool.risk])).toEqual([
      ["read_file", "read-only-local"],
      ["list_dir", "read-only-local"],
      ["search_text", "read-only-local"],
      ["write_file", "workspace-write"],
      ["edit_file", "workspace-write"],
      ["run_command", "destructive-local"],
    ]);
    const runCommand = byName("run_command");
    expect(runCommand.serial).toBe(true);
    expect(runCommand.command?.({ command: "ls -la" })).toBe("ls -la");
    // The runtime's timeout is a backstop above the command's own.
    expect(runCommand.timeoutMs).toBeGreaterThan(60_000);
    for (const name of ["read_file", "list_dir", "write_file", "edit_file"]) expect(byName(name).paths?.({ path: "x/y.txt" })).toEqual(["x/y.txt"]);
    expect(byName("search_text").paths?.({ pattern: "p" })).toEqual(["."]);
    expect(byName("search_text").paths?.({ pattern: "p", path: "src" })).toEqual(["src"]);
  });

  it("rejects options that are a host's programming mistake", () => {
    expect(() => workspaceTools({ root: "" })).toThrow(TypeError);
    expect(() => workspaceTools({ root, commandTimeoutMs: 0 })).toThrow(TypeError);
    expect(() => workspaceTools({ root, maxOutputChars: 10 })).toThrow(TypeError);
  });
});

describe("read_file", () => {
  it("reads a UTF-8 file by a path relative to the root, or absolute inside it", async () => {
    await writeFile(join(root, "unicode.txt"), "héllo wörld ✓\n");
    expect(await run("read_file", { path: "a.txt" })).toMatchObject({ ok: true, content: "alpha\nbeta\n" });
    expect(await run("read_file", { path: join(root, "unicode.txt") })).toMatchObject({ ok: true, content: "héllo wörld ✓\n" });
    expect(await run("read_file", { path: "src/../a.txt" })).toMatchObject({ ok: true, content: "alpha\nbeta\n" });
  });

  it("refuses a directory, a binary file and a missing file with a message the model can act on", async () => {
    await writeFile(join(root, "image.png"), Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x00, 0x01]));
    expect(await run("read_file", { path: "src" })).toEqual({ ok: false, content: "src is a directory; use list_dir to see what is in it" });
    expect(await run("read_file", { path: "image.png" })).toMatchObject({ ok: false, content: expect.stringContaining("binary file") });
    expect(await run("read_file", { path: "nope.txt" })).toEqual({ ok: false, content: "nope.txt does not exist" });
  });

  it("shows a large file as its head and tail within maxOutputChars, reading only those bytes", async () => {
    const lines = Array.from({ length: 20_000 }, (_, index) => `line ${index + 1}`).join("\n");
    await writeFile(join(root, "big.log"), lines);
    const result = await run("read_file", { path: "big.log" }, { maxOutputChars: 2_000 });
    expect(result.ok).toBe(true);
    expect(result.content.length).toBeLessThanOrEqual(2_000);
    expect(result.content.startsWith("line 1\nline 2\n")).toBe(true);
    expect(result.content.endsWith("line 20000")).toBe(true);
    expect(result.content).toMatch(/…\[\d+ bytes not shown: the file is \d+ bytes; use search_text to find lines in it\]…/);
    expect(result.metadata).toMatchObject({ truncated: true, bytes: Buffer.byteLength(lines) });
  });

  it("refuses a symlink inside the workspace that points outside; a symlink that stays inside is fine", async () => {
    await symlink(join(outside, "secret.txt"), join(root, "leak.txt"));
    await symlink(join(root, "a.txt"), join(root, "alias.txt"));
    const refused = await run("read_file", { path: "leak.txt" });
    expect(refused).toEqual({ ok: false, content: 'refused: "leak.txt" is outside the workspace (it leads out through a symbolic link)' });
    expect(JSON.stringify(refused)).not.toContain("top secret");
    expect(await run("read_file", { path: "alias.txt" })).toMatchObject({ ok: true, content: "alpha\nbeta\n" });
  });

  it("refuses `..` and absolute escapes", async () => {
    expect(await run("read_file", { path: "../outside/secret.txt" })).toEqual({ ok: false, content: 'refused: "../outside/secret.txt" is outside the workspace' });
    expect(await run("read_file", { path: join(outside, "secret.txt") })).toMatchObject({ ok: false, content: expect.stringContaining("outside the workspace") });
    expect(await run("read_file", { path: "src/../../outside/secret.txt" })).toMatchObject({ ok: false });
  });

  it("refuses a path outside the session's workspace even when it is inside the tools' root", async () => {
    // The gate judged the path against policy.workspace.root; the tool never reaches past it.
    const narrower = context({ workspace: { root: join(root, "src"), trusted: true } });
    expect(await run("read_file", { path: "a.txt" }, {}, narrower)).toMatchObject({ ok: false, content: expect.stringContaining("outside the session's workspace") });
    expect(await run("read_file", { path: "src/main.ts" }, {}, narrower)).toMatchObject({ ok: true });
  });
});

describe("list_dir", () => {
  it("lists entries sorted by name, directories with a trailing / and symlinks with @", async () => {
    await mkdir(join(root, "B-dir"));
    await writeFile(join(root, "c.md"), "");
    await symlink(join(root, "a.txt"), join(root, "link.txt"));
    expect(await run("list_dir", { path: "." })).toMatchObject({ ok: true, content: "B-dir/\na.txt\nc.md\nlink.txt@\nsrc/" });
    expect(await run("list_dir", { path: "src" })).toMatchObject({ ok: true, content: "main.ts" });
    expect(await run("list_dir", { path: "a.txt" })).toMatchObject({ ok: false, content: expect.stringContaining("not a directory") });
  });

  it("bounds the number of entries and says how many were left out", async () => {
    await mkdir(join(root, "many"));
    await Promise.all(Array.from({ length: 1_005 }, (_, index) => writeFile(join(root, "many", `f${String(index).padStart(4, "0")}`), "")));
    const result = await run("list_dir", { path: "many" });
    const lines = result.content.split("\n");
    expect(lines).toHaveLength(1_001);
    expect(lines[0]).toBe("f0000");
    expect(lines.at(-1)).toBe("… and 5 more entries (1000 of 1005 shown)");
  });

  it("refuses a directory reached through a symlink that points outside", async () => {
    await symlink(outside, join(root, "elsewhere"));
    expect(await run("list_dir", { path: "elsewhere" })).toMatchObject({ ok: false, content: expect.stringContaining("outside the workspace") });
    expect(await run("list_dir", { path: ".." })).toMatchObject({ ok: false, content: expect.stringContaining("outside the workspace") });
  });
});

describe("search_text", () => {
  it("returns file:line: text for a literal string, walking the whole workspace by default", async () => {
    await writeFile(join(root, "notes.md"), "nothing\nTODO: write docs\n");
    const result = await run("search_text", { pattern: "TODO" });
    expect(result).toMatchObject({ ok: true });
    expect(result.content).toBe("notes.md:2: TODO: write docs\nsrc/main.ts:2: // TODO: more\n[2 matches in 2 files; 3 files searched]");
    expect((await run("search_text", { pattern: "TODO", path: "src" })).content).toBe("src/main.ts:2: // TODO: more\n[1 match in 1 file; 1 file searched]");
  });

  it("skips node_modules, .git, .turnlog and binary files; a same-named ordinary directory is searched", async () => {
    for (const dir of ["node_modules/pkg", ".git", ".turnlog", "lib/modules"]) {
      await mkdir(join(root, dir), { recursive: true });
      await writeFile(join(root, dir, "file.js"), "needle\n");
    }
    await writeFile(join(root, "blob.bin"), Buffer.concat([Buffer.from("needle"), Buffer.from([0, 1, 2])]));
    const result = await run("search_text", { pattern: "needle" });
    expect(result.content).toBe("lib/modules/file.js:1: needle\n[1 match in 1 file; 4 files searched; 1 binary skipped]");
    // Named explicitly, a skipped directory is searched.
    expect((await run("search_text", { pattern: "needle", path: "node_modules" })).content).toContain("node_modules/pkg/file.js:1: needle");
  });

  it("never follows a symlink out of the workspace; real directories are walked", async () => {
    await writeFile(join(outside, "leak.txt"), "needle outside\n");
    await symlink(outside, join(root, "linked-dir"));
    await symlink(join(outside, "leak.txt"), join(root, "linked-file.txt"));
    await mkdir(join(root, "real-dir"));
    await writeFile(join(root, "real-dir", "inside.txt"), "needle inside\n");
    const result = await run("search_text", { pattern: "needle" });
    expect(result.content).toBe("real-dir/inside.txt:1: needle inside\n[1 match in 1 file; 3 files searched]");
    expect(await run("search_text", { pattern: "needle", path: "linked-dir" })).toMatchObject({ ok: false, content: expect.stringContaining("outside the workspace") });
  });

  it("treats the pattern as a literal: regex syntax matches itself and a catastrophic pattern is harmless", async () => {
    await writeFile(join(root, "code.ts"), "const abc = 1;\nconst re = /(a+)+$/;\nif (a.c) {}\n");
    expect((await run("search_text", { pattern: "a.c" })).content).toBe("code.ts:3: if (a.c) {}\n[1 match in 1 file; 3 files searched]");
    await writeFile(join(root, "aaaa.txt"), `${"a".repeat(50_000)}!\n`);
    // As a regex, (a+)+$ would backtrack without end on the 50 000 a's; as a literal it is found only where it is written.
    expect((await run("search_text", { pattern: "(a+)+$" })).content).toBe("code.ts:2: const re = /(a+)+$/;\n[1 match in 1 file; 4 files searched]");
  });

  it("bounds the matches and says it stopped; refuses a pattern spanning lines", async () => {
    await writeFile(join(root, "many.txt"), Array.from({ length: 500 }, (_, index) => `hit ${index}`).join("\n"));
    const result = await run("search_text", { pattern: "hit", path: "many.txt" });
    expect(result.content.split("\n")).toHaveLength(201);
    expect(result.content).toMatch(/stopped at 200 matches; narrow the path or the pattern\]$/);
    expect(await run("search_text", { pattern: "a\nb" })).toMatchObject({ ok: false, content: expect.stringContaining("spans several lines") });
  });
});

describe("write_file", () => {
  it("creates a file and its parent directories inside the workspace", async () => {
    expect(await run("write_file", { path: "docs/guide/intro.md", content: "# Intro\n" })).toMatchObject({ ok: true, content: "wrote 8 bytes to docs/guide/intro.md (new file)" });
    expect(await readFile(join(root, "docs/guide/intro.md"), "utf8")).toBe("# Intro\n");
  });

  it("replaces a file atomically, keeps its permission bits and leaves no temp files behind", async () => {
    await chmod(join(root, "a.txt"), 0o640);
    for (let index = 0; index < 5; index += 1) await run("write_file", { path: "a.txt", content: `version ${index}\n` });
    expect(await readFile(join(root, "a.txt"), "utf8")).toBe("version 4\n");
    expect((await stat(join(root, "a.txt"))).mode & 0o777).toBe(0o640);
    expect(await readdir(root)).toEqual(["a.txt", "src"]);
  });

  it("a reader never sees half of the new content while a large file is replaced", async () => {
    const old = "o".repeat(3 * 1024 * 1024);
    const next = "n".repeat(3 * 1024 * 1024);
    await writeFile(join(root, "big.txt"), old);
    let done = false;
    const writing = run("write_file", { path: "big.txt", content: next }).finally(() => {
      done = true;
    });
    const seen = new Set<string>();
    while (!done) {
      const text = await readFile(join(root, "big.txt"), "utf8");
      seen.add(text === old ? "old" : text === next ? "new" : `partial(${text.length})`);
    }
    expect(await writing).toMatchObject({ ok: true });
    expect([...seen].filter((kind) => kind.startsWith("partial"))).toEqual([]);
    expect(await readdir(root)).toEqual(["a.txt", "big.txt", "src"]);
  });

  it("refuses to write through a symlink that points outside, and creates nothing there", async () => {
    await symlink(outside, join(root, "out-dir"));
    await symlink(join(outside, "secret.txt"), join(root, "secret-link.txt"));
    expect(await run("write_file", { path: "out-dir/new.txt", content: "x" })).toMatchObject({ ok: false, content: expect.stringContaining("outside the workspace") });
    expect(await run("write_file", { path: "out-dir/deep/new.txt", content: "x" })).toMatchObject({ ok: false });
    expect(await run("write_file", { path: "secret-link.txt", content: "overwritten" })).toMatchObject({ ok: false });
    expect(await readdir(outside)).toEqual(["secret.txt"]);
    expect(await readFile(join(outside, "secret.txt"), "utf8")).toBe("top secret\n");
  });

  it("refuses a dangling symlink whose target outside does not exist yet", async () => {
    await symlink(join(outside, "planted.txt"), join(root, "trap.txt"));
    expect(await run("write_file", { path: "trap.txt", content: "x" })).toMatchObject({ ok: false, content: "trap.txt is not a regular file or directory" });
    expect(await readdir(outside)).toEqual(["secret.txt"]);
  });

  it("writes through a symlink that stays inside to its target, and the link stays a link", async () => {
    await symlink(join(root, "a.txt"), join(root, "alias.txt"));
    expect(await run("write_file", { path: "alias.txt", content: "via alias\n" })).toMatchObject({ ok: true, content: "wrote 10 bytes to a.txt" });
    expect(await readFile(join(root, "a.txt"), "utf8")).toBe("via alias\n");
    expect((await lstat(join(root, "alias.txt"))).isSymbolicLink()).toBe(true);
    expect(await readlink(join(root, "alias.txt"))).toBe(join(root, "a.txt"));
  });

  it("refuses `..` escapes and a directory as the target", async () => {
    expect(await run("write_file", { path: "../outside/new.txt", content: "x" })).toEqual({ ok: false, content: 'refused: "../outside/new.txt" is outside the workspace' });
    expect(await run("write_file", { path: "src", content: "x" })).toMatchObject({ ok: false, content: "src is a directory; give a file path" });
    expect(await readdir(outside)).toEqual(["secret.txt"]);
  });

  it("never writes into a protected path such as the log's directory, also through a symlink; a file beside it is fine", async () => {
    await mkdir(join(root, ".turnlog"));
    await writeFile(join(root, ".turnlog", "CURRENT"), "MANIFEST-000001\n");
    await symlink(join(root, ".turnlog"), join(root, "log-link"));
    const options = { protectedPaths: [".turnlog"] };
    for (const path of [".turnlog/CURRENT", ".turnlog/new.txt", "log-link/CURRENT", "./src/../.turnlog/CURRENT"]) {
      const written = await run("write_file", { path, content: "x" }, options);
      expect(written).toEqual({ ok: false, content: `refused: "${path}" is inside .turnlog, which this workspace protects from writes` });
      expect(await run("edit_file", { path, oldText: "MANIFEST", newText: "x" }, options)).toMatchObject({ ok: false, content: expect.stringContaining("protects from writes") });
    }
    expect(await readFile(join(root, ".turnlog", "CURRENT"), "utf8")).toBe("MANIFEST-000001\n");
    expect(await readdir(join(root, ".turnlog"))).toEqual(["CURRENT"]);
    // Benign twins: a sibling whose name only starts the same, and reading the protected file.
    expect(await run("write_file", { path: ".turnlog-notes.txt", content: "x" }, options)).toMatchObject({ ok: true });
    expect(await run("read_file", { path: ".turnlog/CURRENT" }, options)).toMatchObject({ ok: true });
  });
});

describe("edit_file", () => {
  it("replaces the one occurrence of oldText, taking newText literally", async () => {
    const result = await run("edit_file", { path: "src/main.ts", oldText: "answer = 42", newText: "answer = '$&'" });
    expect(result).toMatchObject({ ok: true, content: "edited src/main.ts: replaced 1 occurrence at line 1" });
    expect(await readFile(join(root, "src/main.ts"), "utf8")).toBe("export const answer = '$&';\n// TODO: more\n");
    expect(await readdir(join(root, "src"))).toEqual(["main.ts"]);
  });

  it("fails without writing when oldText occurs zero times, saying so", async () => {
    const result = await run("edit_file", { path: "a.txt", oldText: "gamma", newText: "delta" });
    expect(result).toEqual({
      ok: false,
      content: "oldText was not found in a.txt (0 occurrences). Read the file and copy the text to replace exactly, whitespace and line breaks included.",
    });
    expect(await readFile(join(root, "a.txt"), "utf8")).toBe("alpha\nbeta\n");
  });

  it("fails without writing when oldText occurs twice, saying how many times; a unique quote succeeds", async () => {
    await writeFile(join(root, "dup.txt"), "x = 1\ny = 2\nx = 1\n");
    expect(await run("edit_file", { path: "dup.txt", oldText: "x = 1", newText: "x = 3" })).toEqual({
      ok: false,
      content: "oldText occurs 2 times in dup.txt; it must occur exactly once. Include more of the surrounding text so that it is unique.",
    });
    expect(await readFile(join(root, "dup.txt"), "utf8")).toBe("x = 1\ny = 2\nx = 1\n");
    expect(await run("edit_file", { path: "dup.txt", oldText: "y = 2\nx = 1", newText: "y = 2\nx = 3" })).toMatchObject({ ok: true, content: expect.stringContaining("line 2") });
    expect(await readFile(join(root, "dup.txt"), "utf8")).toBe("x = 1\ny = 2\nx = 3\n");
  });

  it("counts overlapping occurrences as ambiguous", async () => {
    await writeFile(join(root, "dashes.txt"), "a-a-a");
    expect(await run("edit_file", { path: "dashes.txt", oldText: "a-a", newText: "b" })).toMatchObject({ ok: false, content: expect.stringContaining("occurs 2 times") });
  });

  it("refuses files outside the workspace, binary files, non-UTF-8 text and an empty oldText", async () => {
    await symlink(join(outside, "secret.txt"), join(root, "leak.txt"));
    expect(await run("edit_file", { path: "leak.txt", oldText: "top", newText: "no" })).toMatchObject({ ok: false, content: expect.stringContaining("outside the workspace") });
    expect(await run("edit_file", { path: "../outside/secret.txt", oldText: "top", newText: "no" })).toMatchObject({ ok: false });
    expect(await readFile(join(outside, "secret.txt"), "utf8")).toBe("top secret\n");
    await writeFile(join(root, "latin1.txt"), Buffer.from([0x63, 0x61, 0x66, 0xe9]));
    expect(await run("edit_file", { path: "latin1.txt", oldText: "caf", newText: "CAF" })).toMatchObject({ ok: false, content: expect.stringContaining("not valid UTF-8") });
    expect(await run("edit_file", { path: "a.txt", oldText: "", newText: "x" })).toMatchObject({ ok: false, content: expect.stringContaining("oldText is empty") });
  });
});

describe("run_command", () => {
  it("runs in the workspace root and reports the exit code with stdout and stderr", async () => {
    expect(await run("run_command", { command: "pwd" })).toEqual({ ok: true, content: `exit 0\n${root}\n`, metadata: { exitCode: 0, timedOut: false, signal: null } });
    expect(await run("run_command", { command: "echo out; echo err >&2; exit 3" })).toEqual({
      ok: false,
      content: "exit 3\nout\nerr\n",
      metadata: { exitCode: 3, timedOut: false, signal: null },
    });
  });

  it("bounds the output to maxOutputChars, keeping the head and the tail", async () => {
    const result = await run("run_command", { command: "seq 1 200000" }, { maxOutputChars: 1_000 });
    expect(result.ok).toBe(true);
    expect(result.content.length).toBeLessThan(1_000 + 100);
    expect(result.content.startsWith("exit 0\n1\n2\n3\n")).toBe(true);
    expect(result.content.endsWith("199999\n200000\n")).toBe(true);
    expect(result.content).toMatch(/…\[\d+ characters of output removed\]…/);
  });

  it("kills the whole process group on timeout: the shell and a child it started are gone", async () => {
    const result = await run("run_command", { command: "echo $$ > shell.pid; sleep 30 & echo $! > sleep.pid; echo started; wait" }, { commandTimeoutMs: 500 });
    expect(result).toEqual({
      ok: false,
      content: "timed out after 500 ms; the command and everything it started were killed\nstarted\n",
      metadata: { exitCode: null, timedOut: true, signal: "SIGKILL" },
    });
    const shell = await pidFrom(join(root, "shell.pid"));
    const sleeper = await pidFrom(join(root, "sleep.pid"));
    await waitFor(() => !isAlive(shell) && !isAlive(sleeper));
  });

  it("a command that finishes in time is not killed, and leaves no background process behind", async () => {
    const result = await run("run_command", { command: "sleep 30 & echo $! > bg.pid; echo done" }, { commandTimeoutMs: 10_000 });
    expect(result).toMatchObject({ ok: true, content: "exit 0\ndone\n", metadata: { timedOut: false } });
    const background = await pidFrom(join(root, "bg.pid"));
    await waitFor(() => !isAlive(background));
  });

  it("honours cancellation through ctx.signal, killing the process group", async () => {
    const controller = new AbortController();
    const running = run("run_command", { command: "sleep 30 & echo $! > sleep.pid; wait" }, {}, context({ signal: controller.signal }));
    const sleeper = await pidFrom(join(root, "sleep.pid"));
    expect(isAlive(sleeper)).toBe(true);
    controller.abort();
    expect(await running).toMatchObject({ ok: false, content: expect.stringMatching(/^cancelled;/), metadata: { cancelled: true, timedOut: false } });
    await waitFor(() => !isAlive(sleeper));
    // Already cancelled: nothing starts.
    expect(await run("run_command", { command: "touch never.txt" }, {}, context({ signal: controller.signal }))).toMatchObject({ ok: false });
    await expect(stat(join(root, "never.txt"))).rejects.toThrow();
  });

  it("leaves secret-named variables out of the shell's environment unless the host passes them", async () => {
    process.env.TURNLOG_TEST_API_KEY = "sk-should-not-leak";
    process.env.TURNLOG_TEST_PLAIN = "visible";
    try {
      const command = 'echo "${TURNLOG_TEST_API_KEY:-unset} ${TURNLOG_TEST_PLAIN:-unset}"';
      expect((await run("run_command", { command })).content).toBe("exit 0\nunset visible\n");
      expect((await run("run_command", { command }, { env: { ...process.env } })).content).toBe("exit 0\nsk-should-not-leak visible\n");
    } finally {
      delete process.env.TURNLOG_TEST_API_KEY;
      delete process.env.TURNLOG_TEST_PLAIN;
    }
  });

  it("reports a shell that cannot start as a failed result", async () => {
    expect(await run("run_command", { command: "ls" }, { shell: join(base, "no-such-shell") })).toMatchObject({ ok: false, content: expect.stringContaining("could not") });
  });
});

describe("the gate on the workspace tools", () => {
  const policy = (approvalMode: ApprovalMode, trusted = true): PolicySnapshot => ({ approvalMode, workspace: { root, trusted }, deny: [], allow: [], blockedRiskClasses: ["sandbox-escape"] });
  const decide = (name: string, input: Record<string, unknown>, approvalMode: ApprovalMode, trusted = true) => {
    const decision = gateToolCall({ callId: "c1", status: "planned", tool: name, input }, tools().byName(name), policy(approvalMode, trusted), { realPath: resolveRealPath });
    return `${decision.decision} ${decision.rule}`;
  };

  it("run_command: forbidden commands are blocked in every mode; others ask unless full-auto runs them", () => {
    const table = Object.fromEntries(
      ["rm -rf /", "git push --force origin main", "ls", "make build"].map((command) => [
        command,
        (["read-only", "ask", "auto-edit", "full-auto"] as const).map((mode) => decide("run_command", { command }, mode)),
      ]),
    );
    expect(table).toEqual({
      "rm -rf /": ["block hard-block:command=forbidden:rm-rf-root", "block hard-block:command=forbidden:rm-rf-root", "block hard-block:command=forbidden:rm-rf-root", "block hard-block:command=forbidden:rm-rf-root"],
      "git push --force origin main": ["deny mode:read-only", "ask command=approval:git-force-push", "ask command=approval:git-force-push", "ask command=approval:git-force-push"],
      // A known-safe read runs unasked in every mode but read-only (decisions version 4).
      ls: ["deny mode:read-only", "allow command=safe:read-only", "allow command=safe:read-only", "allow command=safe:read-only"],
      // Anything else runs unasked only in full-auto and only contained: these tools have no sandbox.
      "make build": ["deny mode:read-only", "ask mode:ask", "ask mode:auto-edit", "ask containment:uncontained"],
    });
    expect(decide("run_command", { command: "ls" }, "full-auto", false)).toBe("allow command=safe:read-only");
    expect(decide("run_command", { command: "make build" }, "full-auto", false)).toBe("ask workspace:untrusted");
  });

  it("path tools: a write outside the workspace is a hard block, a read outside asks, inside follows the mode", async () => {
    await symlink(outside, join(root, "out-dir"));
    expect(decide("write_file", { path: "../x.txt", content: "" }, "full-auto")).toBe("block hard-block:path-outside-workspace");
    expect(decide("write_file", { path: "out-dir/x.txt", content: "" }, "full-auto")).toBe("block hard-block:path-outside-workspace");
    expect(decide("write_file", { path: "notes/x.txt", content: "" }, "auto-edit")).toBe("allow mode:auto-edit");
    expect(decide("edit_file", { path: "a.txt", oldText: "a", newText: "b" }, "ask")).toBe("ask mode:ask");
    expect(decide("read_file", { path: "../outside/secret.txt" }, "ask")).toBe("ask workspace:path-outside-root");
    expect(decide("read_file", { path: "a.txt" }, "ask")).toBe("allow mode:ask");
    expect(decide("search_text", { pattern: "rm -rf /" }, "read-only")).toBe("allow mode:read-only");
  });
});

describe("the workspace tools in a session", () => {
  async function open(approvalMode: ApprovalMode, script: Parameters<typeof scriptedProvider>[0], decisionsVersion?: number) {
    const provider = scriptedProvider(script);
    const runtime = await createRuntime({
      ...(decisionsVersion !== undefined ? { decisionsVersion } : {}),
      log: new MemoryEventLog({ clock: steppingClock(), ids: sequentialIds("event") }),
      provider,
      tools: workspaceTools({ root }),
      policy: { approvalMode, workspace: { root, trusted: true } },
      clock: steppingClock(),
      ids: sequentialIds("session"),
    });
    const session = await runtime.openSession("s1");
    const decisions = async () =>
      (await runtime.events("s1"))
        .filter((event) => event.type === "turn.tool_calls.gated")
        .flatMap((event) => (event.data as { decisions: { callId: string; decision: string; rule: string; riskClass: string }[] }).decisions)
        .map(({ callId, decision, rule, riskClass }) => ({ callId, decision, rule, riskClass }));
    const toolMessages = () =>
      ((provider.requests.at(-1)?.messages ?? []) as { role: string; tool_call_id?: string; content?: string }[])
        .filter((message) => message.role === "tool")
        .map((message) => [message.tool_call_id, message.content]);
    return { provider, runtime, session, decisions, toolMessages };
  }
  const call = (id: string, name: string, args: Record<string, unknown>) => ({ id, name, arguments: JSON.stringify(args) });

  it("auto-edit in a trusted workspace: the model reads, edits and lists files without asking, and the log shows why", async () => {
    const { session, runtime, provider, decisions, toolMessages } = await open("auto-edit", [
      { toolCalls: [call("call_read", "read_file", { path: "src/main.ts" }), call("call_list", "list_dir", { path: "." })] },
      {
        toolCalls: [
          call("call_edit", "edit_file", { path: "src/main.ts", oldText: "answer = 42", newText: "answer = 43" }),
          call("call_write", "write_file", { path: "docs/notes.md", content: "changed the answer\n" }),
          call("call_escape", "write_file", { path: "../outside/pwned.txt", content: "x" }),
          call("call_after", "list_dir", { path: "docs" }),
        ],
      },
      { content: "Done: the answer is 43." },
    ]);
    expect(await session.send("bump the answer and note it")).toMatchObject({ status: "completed", text: "Done: the answer is 43." });
    provider.assertConsumed();
    expect(await readFile(join(root, "src/main.ts"), "utf8")).toBe("export const answer = 43;\n// TODO: more\n");
    expect(await readFile(join(root, "docs/notes.md"), "utf8")).toBe("changed the answer\n");
    expect(await readdir(outside)).toEqual(["secret.txt"]);
    expect(await decisions()).toEqual([
      { callId: "call_read", decision: "allow", rule: "mode:auto-edit", riskClass: "read-only-local" },
      { callId: "call_list", decision: "allow", rule: "mode:auto-edit", riskClass: "read-only-local" },
      { callId: "call_edit", decision: "allow", rule: "mode:auto-edit", riskClass: "workspace-write" },
      { callId: "call_write", decision: "allow", rule: "mode:auto-edit", riskClass: "workspace-write" },
      { callId: "call_escape", decision: "block", rule: "hard-block:path-outside-workspace", riskClass: "workspace-write" },
      { callId: "call_after", decision: "allow", rule: "mode:auto-edit", riskClass: "read-only-local" },
    ]);
    // Call order semantics: the listing after the write sees the new file.
    expect(toolMessages().slice(2)).toEqual([
      ["call_edit", "edited src/main.ts: replaced 1 occurrence at line 1"],
      ["call_write", "wrote 19 bytes to docs/notes.md (new file)"],
      ["call_escape", "Error: not run: the security policy blocks this call. Do not retry it; choose another approach."],
      ["call_after", "notes.md"],
    ]);
    const firstTurnResults = JSON.stringify(provider.requests[1]?.messages);
    expect(firstTurnResults).toContain("export const answer = 42;");
    expect(firstTurnResults).toContain("a.txt\\nsrc/");
    expect((await runtime.audit("s1")).map((row) => [row.callId, row.decision, row.outcome])).toEqual([
      ["call_read", "allow", "succeeded"],
      ["call_list", "allow", "succeeded"],
      ["call_edit", "allow", "succeeded"],
      ["call_write", "allow", "succeeded"],
      ["call_escape", "block", "blocked"],
      ["call_after", "allow", "succeeded"],
    ]);
    expect(await runtime.replay("s1")).toMatchObject({ identical: true });
  });

  it("ask mode: run_command('rm -rf /') is blocked, run_command('ls') asks and runs once approved (decisions version 3)", async () => {
    const { session, decisions, toolMessages, provider } = await open("ask", [
      { toolCalls: [call("call_rm", "run_command", { command: "rm -rf /" }), call("call_ls", "run_command", { command: "ls" })] },
      { content: "listed" },
    ], 3);
    const held = await session.send("clean up, then list");
    expect(held.status).toBe("awaiting-approval");
    expect(held.pendingApprovals).toEqual([
      { callId: "call_ls", tool: "run_command", input: { command: "ls" }, riskClass: "destructive-local", rule: "mode:ask", fingerprint: expect.stringMatching(/^[0-9a-f]{64}$/) },
    ]);
    expect(await decisions()).toEqual([
      { callId: "call_rm", decision: "block", rule: "hard-block:command=forbidden:rm-rf-root", riskClass: "destructive-local" },
      { callId: "call_ls", decision: "ask", rule: "mode:ask", riskClass: "destructive-local" },
    ]);
    await session.approve("call_ls", { by: "alice" });
    expect(await session.resume()).toMatchObject({ status: "completed", text: "listed" });
    provider.assertConsumed();
    expect(toolMessages()).toEqual([
      ["call_rm", "Error: not run: the security policy blocks this call. Do not retry it; choose another approach."],
      ["call_ls", "exit 0\na.txt\nsrc\n"],
    ]);
    // The filesystem is still there.
    expect(await readFile(join(root, "a.txt"), "utf8")).toBe("alpha\nbeta\n");
  });

  it("a cancelled send kills the running command's process group", async () => {
    const controller = new AbortController();
    // Uncontained, as decisions versions up to 3 run it unasked: the process group is this host's.
    const { session } = await open("full-auto", [{ toolCalls: [call("call_sleep", "run_command", { command: "sleep 30 & echo $! > sleep.pid; wait" })] }], 3);
    const sending = session.send("wait a while", { signal: controller.signal });
    const sleeper = await pidFrom(join(root, "sleep.pid"));
    controller.abort();
    expect(await sending).toMatchObject({ status: "stopped", reason: "cancelled" });
    await waitFor(() => !isAlive(sleeper));
  });
});
