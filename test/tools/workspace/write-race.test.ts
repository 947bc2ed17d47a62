import { spawn, type ChildProcess } from "node:child_process";
import { mkdir, mkdtemp, readdir, readFile, realpath, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { workspaceTools } from "../../../src/index.js";
import type { ToolContext, ToolDefinition, ToolResult } from "../../../src/index.js";

/*
 * A concurrent process swaps a workspace directory for a symbolic link out of the workspace, and
 * back, as fast as it can, while write_file and edit_file write into that directory (the attack of
 * issue 12, item 6: before, 3–14 of 200 writes landed outside). By effect: nothing may appear or
 * change outside the workspace; the writes that went through are in the workspace.
 */

let base: string;
let root: string;
let outside: string;
let swapper: ChildProcess | undefined;

beforeEach(async () => {
  base = await realpath(await mkdtemp(join(tmpdir(), "turnlog-write-race-")));
  root = join(base, "workspace");
  outside = join(base, "outside");
  await mkdir(join(root, "dir"), { recursive: true });
  await mkdir(outside);
  await writeFile(join(outside, "victim.txt"), "untouched\n");
});

afterEach(async () => {
  swapper?.kill("SIGKILL");
  swapper = undefined;
  await rm(base, { recursive: true, force: true });
});

/** A real process that swaps `dir` for a symlink to `outside` and back, in a loop, until killed. */
function startSwapper(dir: string, parked: string, target: string): Promise<ChildProcess> {
  const script = `
    const fs = require("node:fs");
    const [dir, parked, target] = process.argv.slice(1);
    const quietly = (f) => { try { f(); } catch {} };
    const scratch = parked + ".scratch";
    process.stdout.write("ready\\n");
    // Each state stands while a file is written elsewhere, so the real directory is not rare
    // however the machine schedules the swapper (both states must be met for the race to be real).
    for (;;) {
      quietly(() => fs.renameSync(dir, parked));
      quietly(() => fs.symlinkSync(target, dir));
      quietly(() => fs.writeFileSync(scratch, "symlink"));
      quietly(() => fs.unlinkSync(dir));
      quietly(() => fs.renameSync(parked, dir));
      quietly(() => fs.writeFileSync(scratch, "directory"));
    }`;
  const child = spawn(process.execPath, ["-e", script, dir, parked, target], { stdio: ["ignore", "pipe", "inherit"] });
  return new Promise((resolve, reject) => {
    child.once("error", reject);
    child.stdout?.once("data", () => resolve(child));
  });
}

const context = (): ToolContext => ({ signal: new AbortController().signal, callId: "call_1", sessionId: "s1", workspace: { root, trusted: true } });

async function run(tool: ToolDefinition, input: Record<string, unknown>): Promise<Exclude<ToolResult, string>> {
  const result = await tool.run(tool.input.parse(input), context());
  return typeof result === "string" ? { ok: true, content: result } : result;
}

describe("writes while a directory is swapped for a symlink out of the workspace", () => {
  it("never land outside: write_file (new files, new subdirectories) and edit_file", async () => {
    const tools = workspaceTools({ root });
    const writeFileTool = tools.find((tool) => tool.name === "write_file")!;
    const editFileTool = tools.find((tool) => tool.name === "edit_file")!;
    await writeFile(join(root, "dir", "victim.txt"), "untouched\n");
    const victim = join(outside, "victim.txt");
    const before = await stat(victim);
    swapper = await startSwapper(join(root, "dir"), join(root, "parked"), outside);

    let written = 0;
    // At least 200 rounds, and on until some write went through (the race met the real directory), up to a bound.
    for (let index = 0; index < 5_000 && (index < 200 || written === 0); index += 1) {
      const results = await Promise.all([
        run(writeFileTool, { path: `dir/file-${index}.txt`, content: `written ${index}\n` }),
        run(writeFileTool, { path: `dir/sub-${index}/file.txt`, content: `nested ${index}\n` }),
        run(editFileTool, { path: "dir/victim.txt", oldText: "untouched", newText: "untouched" }),
      ]);
      written += results.filter((result) => result.ok).length;
    }
    swapper.kill("SIGKILL");
    swapper = undefined;

    expect((await readdir(outside)).sort()).toEqual(["victim.txt"]);
    // An edit redirected outside would have replaced the file (a new inode), even with the same text.
    expect((await stat(victim)).ino).toBe(before.ino);
    expect(await readFile(victim, "utf8")).toBe("untouched\n");
    expect(written).toBeGreaterThan(0);
  });
});
