import { writeFile } from "node:fs/promises";
import path from "node:path";
import { describe, expect, it } from "vitest";
import type { ReplayReport } from "../../src/index.js";
import { expectOneCleanLine, useDemoSession } from "./support/demo-fixture.js";

/* `turnlog replay <session> --policy file.json`, run in-process (runCli) on the demo session (docs/replay.md, "What-if"). */

const demo = useDemoSession("replay-policy");
const { turnlog } = demo;
const policyFile = async (name: string, content: string) => {
  await writeFile(path.join(demo.workDir, name), content);
  return name;
};

describe("turnlog replay --policy", () => {
  it("lists exactly the calls a deny rule would change, and exits 1", async () => {
    const file = await policyFile("changed.json", JSON.stringify({ deny: [{ tool: "list_dir" }] }));
    const run = await turnlog("replay", demo.sessionId, "--dir", demo.logDir, "--policy", file);
    expect(run.stderr).toBe("");
    expect(run.code).toBe(1);
    const lines = run.stdout.trimEnd().split("\n");
    expect(lines[0]).toBe("would change 1 decision:");
    expect(lines[1]).toMatch(/^ {2}#\d+ \S+ list_dir: allow \(mode:ask\) → deny \(deny:tool=list_dir\)$/);
    expect(lines.filter((line) => /→/.test(line))).toHaveLength(1);
  });

  it("--json gives the report with its changes", async () => {
    const file = await policyFile("changed-json.json", JSON.stringify({ deny: [{ tool: "list_dir" }] }));
    const run = await turnlog("replay", demo.sessionId, "--dir", demo.logDir, "--policy", file, "--json");
    expect(run.code).toBe(1);
    const report = JSON.parse(run.stdout) as ReplayReport;
    expect(report.identical).toBe(false);
    expect(report.changes).toEqual([
      { kind: "call", position: expect.any(Number), callId: expect.any(String), tool: "list_dir", before: { decision: "allow", rule: "mode:ask" }, after: { decision: "deny", rule: "deny:tool=list_dir" } },
    ]);
  });

  it("the recorded mode changes nothing: identical, exit 0", async () => {
    const file = await policyFile("same.json", JSON.stringify({ approvalMode: "ask" }));
    const run = await turnlog("replay", demo.sessionId, "--dir", demo.logDir, "--policy", file);
    expect(run.stderr).toBe("");
    expect(run.stdout).toMatch(/^identical: \d+ decisions recomputed, 0 divergences/);
    expect(run.stdout).not.toContain("would change");
    expect(run.code).toBe(0);
  });

  it("a malformed or invalid policy file is one line and exit 2; a missing one exit 1", async () => {
    const malformed = await turnlog("replay", demo.sessionId, "--dir", demo.logDir, "--policy", await policyFile("bad.json", "{ deny: "));
    expectOneCleanLine(malformed.stderr);
    expect(malformed.code).toBe(2);
    const invalid = await turnlog("replay", demo.sessionId, "--dir", demo.logDir, "--policy", await policyFile("invalid.json", JSON.stringify({ approvalMode: "yolo" })));
    expectOneCleanLine(invalid.stderr);
    expect(invalid.stderr).toContain("approvalMode");
    expect(invalid.code).toBe(2);
    const missing = await turnlog("replay", demo.sessionId, "--dir", demo.logDir, "--policy", "nowhere.json");
    expectOneCleanLine(missing.stderr);
    expect(missing.stderr).toContain("not found");
    // No replay happened: exit 5, not 1 (which would say "diverged").
    expect(missing.code).toBe(5);
  });
});
