import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, expect, it } from "vitest";
import { createLogReader, createRuntime, PostgresEventLog, sessionStream } from "../../src/index.js";
import { startLogChild } from "../support/log-child-process.js";
import { describeWithPostgres, dropSchema, freshSchemaName, requirePostgresUrl } from "../support/postgres.js";
import { approvalFinalAnswer, approvalPolicy, approvalProvider, approvalSessionId, approvalTools } from "../support/approval-host-script.js";

/**
 * Issue 14, "approvals from anywhere": a host parks a session for approval; a reviewer's process
 * answers it through the public API on the same PostgreSQL log; the first host learns of the
 * answer through its subscription (NOTIFY) and finishes the turn without a restart — by itself
 * (`autoResume`) or when it asks (`waitForAnswers()` then `resume()`). The tool runs once.
 */

const directories: string[] = [];
afterAll(async () => {
  await Promise.all(directories.map((directory) => rm(directory, { recursive: true, force: true })));
});

describeWithPostgres("approvals from another process on one PostgreSQL log", () => {
  for (const mode of ["auto", "wait"] as const) {
    it(`the parked host finishes the turn without a restart (${mode === "auto" ? "autoResume" : "waitForAnswers + resume"}), and the tool runs once`, async () => {
      const url = requirePostgresUrl();
      const schema = freshSchemaName(`approve_${mode}`);
      const directory = await mkdtemp(join(tmpdir(), "turnlog-approve-"));
      directories.push(directory);
      const effectsFile = join(directory, "effects.txt");
      await writeFile(effectsFile, "");
      const hostA = startLogChild("approval-host-child.ts", [`${url}#${schema}`, effectsFile, directory, mode]);
      const log = await PostgresEventLog.open(url, { schema, poolSize: 4 });
      try {
        await hostA.waitForLine((line) => line.startsWith("parked "));
        const callId = hostA.lines.find((line) => line.startsWith("parked "))?.slice("parked ".length) ?? "";
        expect(await readFile(effectsFile, "utf8")).toBe("");

        // Process B: the reviewer's, with a runtime of its own on the same log.
        const reviewer = await createRuntime({ log, provider: approvalProvider(log), tools: approvalTools(effectsFile), policy: approvalPolicy(directory) });
        const held = await reviewer.openSession(approvalSessionId, { create: false });
        expect(held.outcome()).toMatchObject({ status: "awaiting-approval", pendingApprovals: [{ callId, tool: "deploy" }] });
        await held.approve(callId, { by: "reviewer", note: "go ahead" });
        await reviewer.close();

        await hostA.waitForLine((line) => line.startsWith("final "));
        expect(await hostA.exited).toMatchObject({ code: 0 });
        expect(hostA.lines.at(-1)).toBe(`final completed ${approvalFinalAnswer}`);
        if (mode === "wait") expect(hostA.lines).toContain("answered needs-resume");

        // One run of the tool, recorded once, after the reviewer's answer; the session replays identical.
        expect(await readFile(effectsFile, "utf8")).toBe(`${approvalSessionId} ${callId}\n`);
        const types = (await log.readStream(sessionStream(approvalSessionId))).map((event) => event.type);
        expect(types.filter((type) => type === "turn.tool.started")).toHaveLength(1);
        expect(types.indexOf("turn.approval.granted")).toBeLessThan(types.indexOf("turn.tool.started"));
        expect(types.at(-1)).toBe("turn.completed");
        expect(await createLogReader(log).audit(approvalSessionId)).toMatchObject([{ callId, tool: "deploy", decision: "ask", outcome: "succeeded", approval: { granted: true, by: "reviewer" } }]);
        expect(await createLogReader(log, { tools: approvalTools(effectsFile) }).replay(approvalSessionId)).toMatchObject({ identical: true });
      } finally {
        hostA.child.kill("SIGKILL");
        await log.close();
        await dropSchema(schema);
      }
    }, 120_000);
  }
});
