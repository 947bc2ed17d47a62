import { describe, expect, it } from "vitest";
import type { AuditRow } from "../../src/index.js";
import { expectOneCleanLine, useDemoSession } from "./support/demo-fixture.js";

/* `turnlog audit`, run in-process (runCli) against a demo session in its own temporary directory. */

const demo = useDemoSession("audit");
const { turnlog } = demo;

describe("turnlog audit", () => {
  it("prints one row per tool call of the demo as JSON, with the gate's decision and what finally happened", async () => {
    const run = await turnlog("audit", demo.sessionId, "--dir", demo.logDir, "--json");
    expect(run.stderr).toBe("");
    expect(run.code).toBe(0);
    const rows = JSON.parse(run.stdout) as AuditRow[];
    const byCall = new Map(rows.map((row) => [row.callId, row]));
    expect(new Set(rows.map((row) => row.callId)).size).toBe(rows.length);
    expect(rows.every((row) => row.source === "model" && typeof row.turn === "number" && row.position > 0)).toBe(true);
    // Allowed reads that ran.
    expect(byCall.get("call_read_notes")).toMatchObject({ tool: "read_file", decision: "allow", outcome: "succeeded", riskClass: "read-only-local" });
    // A malformed call and an unknown tool, rejected before the gate.
    expect(byCall.get("call_read_todo")).toMatchObject({ decision: null, outcome: "rejected", rule: "rejected:malformed-arguments" });
    expect(byCall.get("call_cleanup")).toMatchObject({ tool: "delete_everything", decision: null, outcome: "rejected", rule: "rejected:unknown-tool" });
    // The approved write.
    expect(byCall.get("call_save_summary")).toMatchObject({
      tool: "write_file",
      decision: "ask",
      outcome: "succeeded",
      approvedBy: "demo-user",
      approval: { granted: true, by: "demo-user" },
    });
    // The force push a person denied: the gate asked, the outcome is the denial.
    const push = byCall.get("call_force_push");
    expect(push).toMatchObject({ tool: "run_command", decision: "ask", outcome: "denied", approval: { granted: false, by: "demo-user" } });
    expect(push?.approvedBy).toBeUndefined();
    // The blocked install command and the approved status check.
    expect(byCall.get("call_install")).toMatchObject({ decision: "block", outcome: "blocked", rule: "hard-block:command=forbidden:download-to-interpreter" });
    expect(byCall.get("call_status")).toMatchObject({ decision: "ask", outcome: "succeeded", approvedBy: "demo-user" });
  });

  it("filters by decision: --decision block shows only the blocked command", async () => {
    const run = await turnlog("audit", demo.sessionId, "--dir", demo.logDir, "--decision", "block", "--json");
    expect(run.code).toBe(0);
    expect(JSON.parse(run.stdout)).toEqual([
      expect.objectContaining({ callId: "call_install", decision: "block", rule: "hard-block:command=forbidden:download-to-interpreter", outcome: "blocked" }),
    ]);
  });

  it("combines filters with AND", async () => {
    const asked = JSON.parse((await turnlog("audit", demo.sessionId, "--dir", demo.logDir, "--decision", "ask", "--json")).stdout) as AuditRow[];
    expect(asked.map((row) => row.callId).sort()).toEqual(["call_force_push", "call_save_summary", "call_status"]);
    const run = await turnlog("audit", demo.sessionId, "--dir", demo.logDir, "--decision", "ask", "--tool", "run_command", "--outcome", "succeeded", "--json");
    expect((JSON.parse(run.stdout) as AuditRow[]).map((row) => row.callId)).toEqual(["call_status"]);
    const none = await turnlog("audit", demo.sessionId, "--dir", demo.logDir, "--tool", "write_file", "--outcome", "denied", "--json");
    expect(JSON.parse(none.stdout)).toEqual([]);
  });

  it("prints a table with its headers that fits a 120-column terminal", async () => {
    const run = await turnlog("audit", demo.sessionId, "--dir", demo.logDir);
    expect(run.code).toBe(0);
    expect(run.stderr).toBe("");
    const lines = run.stdout.trimEnd().split("\n");
    for (const header of ["#pos", "turn", "tool", "call", "risk", "decision", "rule", "outcome", "approved by", "duration"]) expect(lines[0]).toContain(header);
    expect(Math.max(...lines.map((line) => [...line].length))).toBeLessThanOrEqual(120);
    expect(run.stdout).toMatch(/run_command\s+call_install\s+.*block\s+hard-block:command=.*blocked/);
    expect(run.stdout).toMatch(/write_file\s+call_save_s\S*\s+.*ask\s+mode:ask\s+succeeded\s+demo-user/);
    expect(lines.at(-1)).toMatch(/^\d+ of \d+ tool calls/);
  });

  it("refuses an unknown decision or outcome as a usage error, in one line (exit 2)", async () => {
    for (const args of [["--decision", "maybe"], ["--outcome", "exploded"]]) {
      const run = await turnlog("audit", demo.sessionId, "--dir", demo.logDir, ...args);
      expect(run.code).toBe(2);
      expect(run.stdout).toBe("");
      expectOneCleanLine(run.stderr);
    }
  });

  it("reports an unknown session in one line (exit 1)", async () => {
    const run = await turnlog("audit", "no-such-session", "--dir", demo.logDir);
    expect(run.code).toBe(1);
    expectOneCleanLine(run.stderr);
    expect(run.stderr).toContain('no session "no-such-session"');
  });
});
