import { readFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { spawn } from "node:child_process";
import { Command } from "commander";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { LevelEventLog, type RecordedEvent } from "../../src/index.js";
import { runCli } from "../../src/cli/run-cli.js";
import { exitCodes } from "../../src/errors/cli-error.js";
import { latestDecisionsVersion } from "../../src/reader/index.js";
import { ToolRegistry } from "../../src/tools/tool-registry.js";
import { workspaceTools } from "../../src/tools/workspace/workspace-tools.js";
import { expectOneCleanLine } from "./support/demo-fixture.js";
import { runTurnlogInProcess } from "./support/turnlog-in-process.js";
import { ensureBuiltCli, repoRoot } from "./support/turnlog-bin.js";

/*
 * The CLI's exit codes a script reads (docs/cli-run.md, "Exit codes") and the log options every
 * command takes, run in-process: they are about the commands' logic.
 */

const fixtures = fileURLToPath(new URL("../fixtures/logs/", import.meta.url));
let workDir: string;
const turnlog = (...args: string[]) => runTurnlogInProcess(args, { cwd: workDir, env: { NO_COLOR: "1" } });

beforeAll(async () => {
  workDir = await mkdtemp(path.join(os.tmpdir(), "turnlog-exit-codes-"));
});
afterAll(async () => {
  await rm(workDir, { recursive: true, force: true });
});

/**
 * A version-1 session of a host that ran turnlog's built-in workspace tools, as such a log holds
 * it: `approval-session.json` (version 1, root `/workspace`, tools recorded without their
 * schema) with its two test tools swapped for the workspace tools of the same names as version 1
 * recorded them — name, schema digest, risk class, flags and limits, no JSON Schema — the way a
 * host that offered `workspaceTools({ root })` without its shell and search tools recorded them.
 * The same names keep every recorded text (the unknown tool's "available: …" list, the token
 * counts) true. The golden file is only read.
 */
function version1WorkspaceSession(change: (started: Record<string, unknown>) => void = () => undefined): RecordedEvent[] {
  const [started, ...rest] = JSON.parse(readFileSync(path.join(fixtures, "approval-session.json"), "utf8")) as RecordedEvent[];
  const builtIn = new ToolRegistry(workspaceTools({ root: "/workspace" })).snapshot().map(({ parameters: _parameters, ...recordedInVersion1 }) => recordedInVersion1);
  const recorded = started!.data as { tools: { name: string }[] };
  const tools = recorded.tools.map(({ name }) => builtIn.find((tool) => tool.name === name)!);
  const data = { ...(started!.data as Record<string, unknown>), tools };
  change(data);
  return [{ ...started!, data }, ...rest];
}

/** Appends `events` (their types and data) as session `id` of a new log directory `name`. */
async function logWith(name: string, id: string, events: readonly RecordedEvent[]): Promise<string> {
  const dir = path.join(workDir, name);
  const log = await LevelEventLog.open(dir, { durability: "relaxed" });
  try {
    await log.appendToStream(`session-${id}`, events.map((event) => ({ type: event.type, data: event.data })), { expectedStreamVersion: 0 });
  } finally {
    await log.close();
  }
  return dir;
}

describe("turnlog replay: identical 0, diverged 1, cannot replay 5", () => {
  it("replays a version-1 session of the built-in workspace tools with the CLI's own tools, identical", async () => {
    const dir = await logWith("v1-workspace", "golden-1", version1WorkspaceSession());
    const run = await turnlog("replay", "golden-1", "--dir", dir);
    expect(run.stderr).toBe("");
    expect(run.stdout).toMatch(/^identical: 33 decisions recomputed, 0 divergences$/m);
    expect(run.code).toBe(exitCodes.ok);
    // Checked exactly, with the CLI's tools, not at schema level from recorded definitions.
    const json = JSON.parse((await turnlog("replay", "golden-1", "--dir", dir, "--json")).stdout) as { identical: boolean; toolsFromLog: string[] };
    expect(json).toMatchObject({ identical: true, toolsFromLog: [] });
  });

  it("a divergence in such a session still exits 1", async () => {
    // A policy the session did not run under: the gate's recorded decisions no longer follow.
    const dir = await logWith("v1-workspace-diverged", "golden-1", version1WorkspaceSession((started) => {
      started.policy = { ...(started.policy as object), approvalMode: "read-only" };
    }));
    const run = await turnlog("replay", "golden-1", "--dir", dir);
    expect(run.stdout).toMatch(/^diverged: /m);
    expect(run.code).toBe(exitCodes.failure);
  });

  it("a version-1 session whose workspace tools differ from the CLI's (another output limit) cannot be replayed: exit 5", async () => {
    const dir = await logWith("v1-workspace-other-limit", "golden-1", version1WorkspaceSession((started) => {
      const tools = started.tools as { name: string; maxResultChars: number }[];
      tools[1]!.maxResultChars += 1000;
    }));
    const run = await turnlog("replay", "golden-1", "--dir", dir);
    expect(run.stderr).toContain("recorded with tools the CLI does not define (write_file), before turnlog recorded tool schemas in the log");
    expectOneCleanLine(run.stderr);
    expect(run.stdout).toBe("");
    expect(run.code).toBe(exitCodes.cannotReplay);
  });

  it("a version-1 session of a host's own tools cannot be replayed: exit 5, not 1", async () => {
    const golden = JSON.parse(readFileSync(path.join(fixtures, "approval-session.json"), "utf8")) as RecordedEvent[];
    const dir = await logWith("v1-host-tools", "golden-1", golden);
    const run = await turnlog("replay", "golden-1", "--dir", dir);
    expect(run.stderr).toContain("recorded with tools the CLI does not define (read_file, write_file)");
    expectOneCleanLine(run.stderr);
    expect(run.code).toBe(exitCodes.cannotReplay);
  });

  it("a session recorded under a decisions version this turnlog does not know cannot be replayed: exit 5, not 'diverged'", async () => {
    const unknown = latestDecisionsVersion + 1;
    const dir = await logWith("newer-version", "golden-1", version1WorkspaceSession((started) => {
      started.decisionsVersion = unknown;
    }));
    const run = await turnlog("replay", "golden-1", "--dir", dir);
    expect(run.stderr).toBe(`turnlog: session "golden-1" was recorded under decisions version ${unknown}, which this turnlog does not know (it knows versions 1 to ${latestDecisionsVersion}) — replay it with the turnlog that recorded it, or a newer one\n`);
    expect(run.stdout).not.toContain("diverged");
    expect(run.code).toBe(exitCodes.cannotReplay);
  });

  it("an unknown session, a missing log and a missing --policy file cannot be replayed either: exit 5", async () => {
    const dir = await logWith("one-session", "golden-1", version1WorkspaceSession());
    const unknown = await turnlog("replay", "no-such-session", "--dir", dir);
    expect(unknown.stderr).toContain('no session "no-such-session"');
    expect(unknown.code).toBe(exitCodes.cannotReplay);
    const missing = await turnlog("replay", "golden-1", "--dir", path.join(workDir, "missing-log"));
    expect(missing.stderr).toContain("no log at");
    expect(missing.code).toBe(exitCodes.cannotReplay);
    const policy = await turnlog("replay", "golden-1", "--dir", dir, "--policy", "nowhere.json");
    expect(policy.stderr).toContain("policy file not found");
    expect(policy.code).toBe(exitCodes.cannotReplay);
    // A usage mistake stays 2.
    const usage = await turnlog("replay", "golden-1", "--dir", dir, "--decisions", "soon");
    expect(usage.code).toBe(exitCodes.usage);
  });

  it("--help lists exit code 5", async () => {
    const run = await turnlog("--help");
    expect(run.stdout).toContain("5 replay could not replay the session");
    expect((await turnlog("replay", "--help")).stdout).toContain("5 when it cannot replay the session");
  });
});

/** The program `runCli` builds, caught as it is about to parse (nothing runs). */
async function commandTree(): Promise<Command> {
  let program: Command | undefined;
  const parse = vi.spyOn(Command.prototype, "parseAsync").mockImplementation(function (this: Command) {
    program = this;
    return Promise.resolve(this);
  });
  try {
    await runCli([], { stdout: { write: () => true }, stderr: { write: () => true }, env: {} });
  } finally {
    parse.mockRestore();
  }
  if (program === undefined) throw new Error("runCli did not parse");
  return program;
}

/** Every command that runs something (a leaf of the tree), with its full name: `witness serve`. */
function leafCommands(command: Command, prefix: string[] = []): { name: string; command: Command }[] {
  return command.commands.flatMap((sub) => {
    const name = [...prefix, sub.name()];
    return sub.commands.length === 0 ? [{ name: name.join(" "), command: sub }] : leafCommands(sub, name);
  });
}

describe("--log and --dir on every command", () => {
  it("every command of the tree takes both --log and --dir", async () => {
    const leaves = leafCommands(await commandTree());
    expect(leaves.map((leaf) => leaf.name)).toEqual(expect.arrayContaining(["demo", "run", "repair", "migrate", "witness serve", "verify", "replay"]));
    const lacking = leaves.filter(({ command }) => !["--log", "--dir"].every((flag) => command.options.some((option) => option.long === flag))).map((leaf) => leaf.name);
    expect(lacking).toEqual([]);
  });

  it("repair takes the damaged log as --log or --dir, as well as its argument", async () => {
    const dir = await logWith("to-repair", "golden-1", version1WorkspaceSession());
    for (const [flag, out] of [["--log", "repaired-by-log"], ["--dir", "repaired-by-dir"]] as const) {
      const run = await turnlog("repair", flag, dir, "--out", path.join(workDir, out), "--json");
      expect(run.stderr).toBe("");
      expect(run.code).toBe(exitCodes.ok);
      expect(JSON.parse(run.stdout)).toMatchObject({ dropped: 0 });
      const replay = await turnlog("replay", "golden-1", "--dir", path.join(workDir, out));
      expect(replay.code).toBe(exitCodes.ok);
    }
    const positional = await turnlog("repair", dir, "--out", path.join(workDir, "repaired-by-argument"));
    expect(positional.code).toBe(exitCodes.ok);
  });

  it("repair refuses two names for the damaged log, none, or a PostgreSQL URL, as usage errors", async () => {
    const twice = await turnlog("repair", "a", "--log", "b", "--out", "c");
    expect(twice.stderr).toBe("turnlog: <log-dir> and --log both name the directory — give one of them\n");
    expect(twice.code).toBe(exitCodes.usage);
    const none = await turnlog("repair", "--out", "c");
    expectOneCleanLine(none.stderr);
    expect(none.stderr).toContain("repair needs the damaged log directory");
    expect(none.code).toBe(exitCodes.usage);
    const postgres = await turnlog("repair", "--log", "postgres://ada@db.invalid/agents", "--out", "c");
    expect(postgres.stderr).toContain("repair salvages a damaged LevelDB log directory");
    expect(postgres.code).toBe(exitCodes.usage);
  });

  it("witness serve names its records directory with --log or --dir, one of them", async () => {
    const none = await turnlog("witness", "serve");
    expect(none.stderr).toContain("witness serve keeps its records in a directory: pass --log <dir> (or --dir <dir>)");
    expect(none.code).toBe(exitCodes.usage);
    const both = await turnlog("witness", "serve", "--log", "a", "--dir", "b");
    expect(both.stderr).toBe("turnlog: --log and --dir both name the directory — give one of them\n");
    expect(both.code).toBe(exitCodes.usage);
  });

  it("witness serve keeps its records in the directory --log names (a real process: it serves until a signal)", async () => {
    await ensureBuiltCli();
    const records = path.join(workDir, "witness-records");
    const child = spawn(process.execPath, [path.join(repoRoot, "bin", "turnlog.js"), "witness", "serve", "--log", records], { cwd: workDir, env: process.env });
    const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)));
    let stdout = "";
    const url = await new Promise<string>((resolve, reject) => {
      child.stdout.on("data", (chunk: Buffer) => {
        stdout += chunk.toString();
        const found = /^ {2}(http:\/\/127\.0\.0\.1:\d+)$/m.exec(stdout)?.[1];
        if (found !== undefined) resolve(found);
      });
      child.on("exit", (code) => reject(new Error(`turnlog witness serve exited ${String(code)}: ${stdout}`)));
    });
    expect(stdout).toContain(`records in ${records}`);
    child.kill("SIGTERM");
    expect(await exited).toBe(0);
    expect(url).toMatch(/^http:/);
  }, 120_000);
});
