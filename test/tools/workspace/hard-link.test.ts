import { spawn, type ChildProcess } from "node:child_process";
import { link, mkdir, mkdtemp, readdir, readFile, realpath, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { workspaceTools } from "../../../src/index.js";
import type { ToolContext, ToolDefinition, ToolResult, WorkspaceToolsOptions } from "../../../src/index.js";

/*
 * A hard link made by run_command is a regular file inside the workspace that is a file outside
 * it under a second name (issue 12, item 6). By effect: the canary's text never appears in a tool
 * result, and the canary is unchanged after writes and edits through the link. The canary and the
 * workspace share one parent, so link() works (same file system).
 */

// The kernel release the tools see: this machine's, unless a test stands in an older one (this
// machine cannot boot one) to reach the branch for file systems without fine-grained ctimes.
const kernel = vi.hoisted(() => ({ release: undefined as string | undefined }));
vi.mock("node:os", async (importOriginal) => {
  const actual = await importOriginal<typeof import("node:os")>();
  return { ...actual, release: () => kernel.release ?? actual.release() };
});

const secret = "CANARY-7f3a-do-not-leak";
const benign = "ordinary workspace text\n";

let base: string;
let root: string;
let canary: string;
let swapper: ChildProcess | undefined;

beforeEach(async () => {
  base = await realpath(await mkdtemp(join(tmpdir(), "turnlog-hard-link-")));
  root = join(base, "workspace");
  canary = join(base, "outside", "canary.txt");
  await mkdir(root);
  await mkdir(join(base, "outside"));
  await writeFile(canary, `${secret}\nsecond line\n`);
});

afterEach(async () => {
  kernel.release = undefined;
  swapper?.kill("SIGKILL");
  swapper = undefined;
  await rm(base, { recursive: true, force: true });
});

const context = (): ToolContext => ({ signal: new AbortController().signal, callId: "call_1", sessionId: "s1", workspace: { root, trusted: true } });

function toolsWith(options: Partial<WorkspaceToolsOptions> = {}) {
  const list = workspaceTools({ root, ...options });
  return (name: string) => list.find((tool) => tool.name === name) as ToolDefinition;
}

async function run(tool: ToolDefinition, input: Record<string, unknown>): Promise<Exclude<ToolResult, string>> {
  const result = await tool.run(tool.input.parse(input), context());
  return typeof result === "string" ? { ok: true, content: result } : result;
}

describe("a hard link to a file outside the workspace", () => {
  it("made by run_command: read_file, edit_file and search_text refuse or skip it; the canary's text never shows", async () => {
    const tool = toolsWith();
    const made = await run(tool("run_command"), { command: "ln ../outside/canary.txt inside.txt" });
    expect(made).toMatchObject({ ok: true });
    expect((await stat(join(root, "inside.txt"))).ino).toBe((await stat(canary)).ino);

    const read = await run(tool("read_file"), { path: "inside.txt" });
    expect(read.ok).toBe(false);
    expect(read.content).toContain("refused: inside.txt is a hard link (the file has 2 names on disk");
    expect(read.content).toContain("allowHardLinks");

    // A count of occurrences would be an oracle for the canary's text; nothing is counted or written.
    const edit = await run(tool("edit_file"), { path: "inside.txt", oldText: secret, newText: "x" });
    expect(edit.ok).toBe(false);
    expect(edit.content).toContain("refused: inside.txt is a hard link");

    await writeFile(join(root, "twin.txt"), `${secret} is only a word here\n`);
    const search = await run(tool("search_text"), { pattern: "CANARY" });
    expect(search.ok).toBe(true);
    expect(search.content).toContain(`twin.txt:1: ${secret} is only a word here`);
    expect(search.content).not.toContain("inside.txt");
    expect(search.content).toContain("1 hard-linked skipped");
    const searchTheFile = await run(tool("search_text"), { pattern: "second", path: "inside.txt" });
    expect(searchTheFile.content).toBe(`[no matches for "second"; 1 file searched; 1 hard-linked skipped (a file with more than one link may be a file outside the workspace)]`);

    for (const result of [read, edit, search, searchTheFile]) expect(result.content).not.toContain("second line");
    expect(await readFile(canary, "utf8")).toBe(`${secret}\nsecond line\n`);
  });

  it("write_file replaces the link by a file of its own: the canary keeps its content and inode", async () => {
    const tool = toolsWith();
    await link(canary, join(root, "inside.txt"));
    const before = await stat(canary);

    const write = await run(tool("write_file"), { path: "inside.txt", content: "new text\n" });
    expect(write).toMatchObject({ ok: true, content: "wrote 9 bytes to inside.txt" });
    expect(await readFile(canary, "utf8")).toBe(`${secret}\nsecond line\n`);
    const after = await stat(canary);
    expect(after.ino).toBe(before.ino);
    expect(after.nlink).toBe(1);
    expect(after.mtimeMs).toBe(before.mtimeMs);
    // Now an ordinary file of one link: it reads and edits like any other.
    expect(await run(tool("read_file"), { path: "inside.txt" })).toMatchObject({ ok: true, content: "new text\n" });
    expect(await run(tool("edit_file"), { path: "inside.txt", oldText: "new", newText: "edited" })).toMatchObject({ ok: true });
    expect(await readFile(canary, "utf8")).toBe(`${secret}\nsecond line\n`);
    expect(await readFile(join(root, "inside.txt"), "utf8")).toBe("edited text\n");
  });

  it("the benign twin: an ordinary file of one link reads, edits and is searched", async () => {
    const tool = toolsWith();
    await writeFile(join(root, "plain.txt"), benign);
    expect(await run(tool("read_file"), { path: "plain.txt" })).toMatchObject({ ok: true, content: benign });
    expect(await run(tool("search_text"), { pattern: "workspace" })).toMatchObject({ ok: true, content: "plain.txt:1: ordinary workspace text\n[1 match in 1 file; 1 file searched]" });
    expect(await run(tool("edit_file"), { path: "plain.txt", oldText: "ordinary", newText: "plain" })).toMatchObject({ ok: true });
    expect(await readFile(join(root, "plain.txt"), "utf8")).toBe("plain workspace text\n");
  });

  it("allowHardLinks: true reads a file linked twice on purpose (a pnpm store); by default it is refused", async () => {
    await writeFile(join(root, "store.js"), "module.exports = 1;\n");
    await mkdir(join(root, "node_modules", "dep"), { recursive: true });
    await link(join(root, "store.js"), join(root, "node_modules", "dep", "index.js"));
    expect((await run(toolsWith()("read_file"), { path: "node_modules/dep/index.js" })).ok).toBe(false);
    expect(await run(toolsWith({ allowHardLinks: true })("read_file"), { path: "node_modules/dep/index.js" })).toMatchObject({ ok: true, content: "module.exports = 1;\n" });
    expect(await run(toolsWith({ allowHardLinks: true })("search_text"), { pattern: "exports", path: "node_modules" })).toMatchObject({
      ok: true,
      content: "node_modules/dep/index.js:1: module.exports = 1;\n[1 match in 1 file; 1 file searched]",
    });
  });
});

/**
 * A real process that swaps `target` between an ordinary file and a hard link to `canary` until
 * killed, holding each state for a random while: each state is put in place by a rename, so the
 * path always exists.
 */
function startSwapper(target: string, canaryPath: string): Promise<ChildProcess> {
  const script = `
    const fs = require("node:fs");
    const [target, canary, text] = process.argv.slice(1);
    const quietly = (f) => { try { f(); } catch {} };
    const plain = target + ".plain", linked = target + ".linked";
    // Each state stands for a hold drawn anew every time: none (a swap lands in the middle of a
    // read's proof) up to 20 ms (a whole read fits in it even when the machine is loaded and every
    // system call waits). Without the long holds, a loaded machine met the ordinary file no time
    // in 20 000 rounds: the read's proof takes longer than the swapper's own steps.
    const holds = [0, 0, 0.05, 0.5, 2, 20];
    const pause = new Int32Array(new SharedArrayBuffer(4));
    const hold = () => { const ms = holds[Math.floor(Math.random() * holds.length)]; if (ms > 0) Atomics.wait(pause, 0, 0, ms); };
    process.stdout.write("ready\\n");
    fs.writeFileSync(plain, text);
    for (;;) {
      quietly(() => fs.renameSync(plain, target));
      quietly(() => fs.writeFileSync(plain, text));
      hold();
      quietly(() => fs.linkSync(canary, linked));
      quietly(() => fs.renameSync(linked, target));
      hold();
    }`;
  return startReadyChild(script, [target, canaryPath, benign]);
}

/** Runs `script` in a real Node process with `args`; resolves once it prints its first line ("ready"). */
function startReadyChild(script: string, args: readonly string[]): Promise<ChildProcess> {
  const child = spawn(process.execPath, ["-e", script, ...args], { stdio: ["ignore", "pipe", "inherit"] });
  return new Promise((resolve, reject) => {
    child.once("error", reject);
    child.stdout?.once("data", () => resolve(child));
  });
}

/** By effect: the canary keeps its text, and no file of one link in the workspace holds it. */
async function expectCanaryUntouched(): Promise<void> {
  expect(await readFile(canary, "utf8")).toBe(`${secret}\nsecond line\n`);
  for (const name of await readdir(root)) {
    if ((await stat(join(root, name))).nlink === 1) expect(await readFile(join(root, name), "utf8"), name).not.toContain("CANARY");
  }
}

describe("a path swapped between an ordinary file and a hard link while it is read", () => {
  it("never yields the canary's text: read_file, search_text and edit_file", async () => {
    const tool = toolsWith();
    swapper = await startSwapper(join(root, "target.txt"), canary);
    const outcomes = { read: 0, refused: 0 };
    // At least 1 500 rounds, and on until both states of the race were met, up to a bound.
    for (let index = 0; index < 20_000 && (index < 1_500 || outcomes.read === 0 || outcomes.refused === 0); index += 1) {
      const results = await Promise.all([
        run(tool("read_file"), { path: "target.txt" }),
        run(tool("search_text"), { pattern: "e" }),
        run(tool("edit_file"), { path: "target.txt", oldText: "second line", newText: "changed" }),
      ]);
      for (const result of results) {
        expect(result.content).not.toContain("CANARY");
        expect(result.content).not.toContain("second line\n");
      }
      // An edit that went through would have copied the canary's text into the workspace.
      expect(results[2]?.ok).toBe(false);
      const [read] = results;
      if (read?.ok === true) outcomes.read += 1;
      if (read?.content.includes("refused") === true) outcomes.refused += 1;
    }
    swapper.kill("SIGKILL");
    swapper = undefined;
    await expectCanaryUntouched();
    // Both states were met: the race was real, not one side of it every time.
    expect(outcomes.read).toBeGreaterThan(0);
    expect(outcomes.refused).toBeGreaterThan(0);
  }, 180_000);
});

/**
 * A real process that does nothing but `link(canary, target)` and `unlink(target)`, as fast as it
 * can, until killed: the path names the canary (two links) or nothing. Aimed at a check that looks
 * the path up and reads the count in two steps: the name can be found, then removed, and the count
 * read afterwards says one link — while the only name left is the canary's own, outside.
 */
function startLinkUnlinkSwapper(target: string, canaryPath: string): Promise<ChildProcess> {
  const script = `
    const fs = require("node:fs");
    const [target, canary] = process.argv.slice(1);
    process.stdout.write("ready\\n");
    for (;;) {
      try { fs.linkSync(canary, target); } catch {}
      try { fs.unlinkSync(target); } catch {}
    }`;
  return startReadyChild(script, [target, canaryPath]);
}

describe("a hard link to the canary made and removed over and over while it is read", () => {
  it("never yields the canary's text: read_file, search_text and edit_file refuse or miss it every time", async () => {
    const tool = toolsWith();
    await writeFile(join(root, "plain.txt"), benign);
    swapper = await startLinkUnlinkSwapper(join(root, "target.txt"), canary);
    const outcomes = { refused: 0, missing: 0 };
    // At least 10 000 rounds (the check this replaced let the canary through two or three times in
    // 5 000), and on until both states of the race were met, up to a bound.
    for (let index = 0; index < 30_000 && (index < 10_000 || outcomes.refused === 0 || outcomes.missing === 0); index += 1) {
      const results = await Promise.all([
        run(tool("read_file"), { path: "target.txt" }),
        run(tool("search_text"), { pattern: "e" }),
        run(tool("edit_file"), { path: "target.txt", oldText: "second line", newText: "changed" }),
      ]);
      for (const result of results) {
        expect(result.content).not.toContain("CANARY");
        expect(result.content).not.toContain("second line");
      }
      expect(results[2]?.ok).toBe(false);
      // The ordinary file beside it is found every time: the search itself goes on.
      expect(results[1]?.content).toContain("plain.txt:1: ordinary workspace text");
      const [read] = results;
      if (read?.content.includes("refused") === true) outcomes.refused += 1;
      if (read?.content.includes("does not exist") === true) outcomes.missing += 1;
    }
    swapper.kill("SIGKILL");
    swapper = undefined;
    await expectCanaryUntouched();
    // Both states of the race were met: the link was there to refuse, and gone.
    expect(outcomes.refused).toBeGreaterThan(0);
    expect(outcomes.missing).toBeGreaterThan(0);
  }, 300_000);
});

describe("where a link or unlink may leave the ctime as it was (a kernel before 6.13)", () => {
  it("a file changed a moment ago is read once its change is a second old; the link-and-unlink race still never yields the canary", async () => {
    kernel.release = "6.1.0";
    const tool = toolsWith();
    await writeFile(join(root, "plain.txt"), benign);
    expect(await run(tool("read_file"), { path: "plain.txt" })).toMatchObject({ ok: true, content: benign });
    expect(await run(tool("edit_file"), { path: "plain.txt", oldText: "ordinary", newText: "plain" })).toMatchObject({ ok: true });
    expect(await run(tool("search_text"), { pattern: "plain" })).toMatchObject({ ok: true, content: "plain.txt:1: plain workspace text\n[1 match in 1 file; 1 file searched]" });

    swapper = await startLinkUnlinkSwapper(join(root, "target.txt"), canary);
    for (let index = 0; index < 20; index += 1) {
      const results = await Promise.all([
        run(tool("read_file"), { path: "target.txt" }),
        run(tool("search_text"), { pattern: "e" }),
        run(tool("edit_file"), { path: "target.txt", oldText: "second line", newText: "changed" }),
      ]);
      for (const result of results) expect(result.content).not.toContain("CANARY");
      expect(results[0]?.ok).toBe(false);
      expect(results[2]?.ok).toBe(false);
    }
    swapper.kill("SIGKILL");
    swapper = undefined;
    expect(await readFile(canary, "utf8")).toBe(`${secret}\nsecond line\n`);
  }, 300_000);
});
