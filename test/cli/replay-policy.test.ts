import { mkdtemp, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ReplayReport } from "../../src/index.js";
import { ensureBuiltCli, runTurnlog } from "./support/turnlog-bin.js";

/* `turnlog replay <session> --policy file.json`, end to end on the demo session (DESIGN.md §5, §12). */

let workDir: string;
let sessionId: string;
const logDir = "log";
const turnlog = (...args: string[]) => runTurnlog(args, { cwd: workDir });
const policyFile = async (name: string, content: string) => {
  await writeFile(path.join(workDir, name), content);
  return name;
};

function expectOneCleanLine(stderr: string): void {
  expect(stderr.trimEnd().split("\n")).toHaveLength(1);
  expect(stderr).toMatch(/^turnlog: /);
  expect(stderr).not.toMatch(/\bat .+:\d+:\d+/);
}

beforeAll(async () => {
  await ensureBuiltCli();
  workDir = await mkdtemp(path.join(os.tmpdir(), "turnlog-replay-policy-"));
  const demo = await turnlog("demo", "--dir", logDir);
  expect(demo.code).toBe(0);
  sessionId = /session\s+(demo-\S+)/.exec(demo.stdout)?.[1] ?? "";
}, 120_000);

afterAll(async () => {
  if (workDir !== undefined) await rm(workDir, { recursive: true, force: true });
});

describe("turnlog replay --policy", () => {
  it("lists exactly the calls a deny rule would change, and exits 1", async () => {
    const file = await policyFile("changed.json", JSON.stringify({ deny: [{ tool: "list_dir" }] }));
    const run = await turnlog("replay", sessionId, "--dir", logDir, "--policy", file);
    expect(run.stderr).toBe("");
    expect(run.code).toBe(1);
    const lines = run.stdout.trimEnd().split("\n");
    expect(lines[0]).toBe("would change 1 decision:");
    expect(lines[1]).toMatch(/^ {2}#\d+ \S+ list_dir: allow \(mode:ask\) → deny \(deny:tool=list_dir\)$/);
    expect(lines.filter((line) => /→/.test(line))).toHaveLength(1);
  });

  it("--json gives the report with its changes", async () => {
    const file = await policyFile("changed-json.json", JSON.stringify({ deny: [{ tool: "list_dir" }] }));
    const run = await turnlog("replay", sessionId, "--dir", logDir, "--policy", file, "--json");
    expect(run.code).toBe(1);
    const report = JSON.parse(run.stdout) as ReplayReport;
    expect(report.identical).toBe(false);
    expect(report.changes).toEqual([
      { position: expect.any(Number), callId: expect.any(String), tool: "list_dir", before: { decision: "allow", rule: "mode:ask" }, after: { decision: "deny", rule: "deny:tool=list_dir" } },
    ]);
  });

  it("the recorded mode changes nothing: identical, exit 0", async () => {
    const file = await policyFile("same.json", JSON.stringify({ approvalMode: "ask" }));
    const run = await turnlog("replay", sessionId, "--dir", logDir, "--policy", file);
    expect(run.stderr).toBe("");
    expect(run.stdout).toMatch(/^identical: \d+ decisions recomputed, 0 divergences/);
    expect(run.stdout).not.toContain("would change");
    expect(run.code).toBe(0);
  });

  it("a malformed or invalid policy file is one line and exit 2; a missing one exit 1", async () => {
    const malformed = await turnlog("replay", sessionId, "--dir", logDir, "--policy", await policyFile("bad.json", "{ deny: "));
    expectOneCleanLine(malformed.stderr);
    expect(malformed.code).toBe(2);
    const invalid = await turnlog("replay", sessionId, "--dir", logDir, "--policy", await policyFile("invalid.json", JSON.stringify({ approvalMode: "yolo" })));
    expectOneCleanLine(invalid.stderr);
    expect(invalid.stderr).toContain("approvalMode");
    expect(invalid.code).toBe(2);
    const missing = await turnlog("replay", sessionId, "--dir", logDir, "--policy", "nowhere.json");
    expectOneCleanLine(missing.stderr);
    expect(missing.stderr).toContain("not found");
    expect(missing.code).toBe(1);
  });
});
