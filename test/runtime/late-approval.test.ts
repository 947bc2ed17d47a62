import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, expect, it } from "vitest";
import { createLogReader, createRuntime, PostgresEventLog, sessionStream } from "../../src/index.js";
import { startLogChild } from "../support/log-child-process.js";
import { describeWithPostgres, dropSchema, freshSchemaName, requirePostgresUrl } from "../support/postgres.js";
import { approvalPolicy, approvalProvider, approvalSessionId, approvalTools } from "../support/approval-host-script.js";

/**
 * Decisions version 7 (docs/policy.md, "Approval deadlines"): a deadline is judged by the recorded
 * time an answer's append carries, in whatever process appends it. This host parks a session on
 * PostgreSQL with its clock two hours back and a one-hour timeout, so the deadline lies an hour in
 * the past of the system clock; a reviewer's process (the system clock) approving now is refused,
 * nothing is appended, and the host, its clock put right, denies the call by approval:timeout.
 */

const directories: string[] = [];
afterAll(async () => {
  await Promise.all(directories.map((directory) => rm(directory, { recursive: true, force: true })));
});

describeWithPostgres("an answer after the deadline, from another process", () => {
  it("is refused; the call never runs and is denied by approval:timeout", async () => {
    const url = requirePostgresUrl();
    const schema = freshSchemaName("late_approval");
    const directory = await mkdtemp(join(tmpdir(), "turnlog-late-"));
    directories.push(directory);
    const effectsFile = join(directory, "effects.txt");
    await writeFile(effectsFile, "");
    let offset = -2 * 3_600_000;
    const clock = { now: () => Date.now() + offset };
    const log = await PostgresEventLog.open(url, { schema, poolSize: 4, clock });
    try {
      const runtime = await createRuntime({ log, clock, provider: approvalProvider(log), tools: approvalTools(effectsFile), policy: { ...approvalPolicy(directory), approvalTimeoutMs: 3_600_000 } });
      const session = await runtime.openSession(approvalSessionId);
      const parked = await session.send("Deploy v2");
      const [held] = parked.pendingApprovals;
      expect(parked.status).toBe("awaiting-approval");
      const before = await log.streamVersion(sessionStream(approvalSessionId));

      const reviewer = startLogChild("late-approver-child.ts", [url, schema, effectsFile, held?.callId ?? ""]);
      expect(await reviewer.exited).toMatchObject({ code: 0 });
      expect(reviewer.lines).toContain(`deadline ${held?.deadline}`);
      expect(reviewer.lines.find((line) => line.startsWith("refused "))).toMatch(/^refused SessionStateError: call .* was not answered before its deadline/);
      expect(await log.streamVersion(sessionStream(approvalSessionId))).toBe(before);

      // This host's clock put right: its resume denies the call and finishes the turn.
      offset = 0;
      const outcome = await session.resume();
      expect(outcome.status).toBe("completed");
      expect(await readFile(effectsFile, "utf8")).toBe("");
      expect(await createLogReader(log).audit(approvalSessionId)).toMatchObject([{ callId: held?.callId, rule: "approval:timeout", outcome: "denied" }]);
      expect(await createLogReader(log, { tools: approvalTools(effectsFile) }).replay(approvalSessionId)).toMatchObject({ identical: true });
      await runtime.close();
    } finally {
      await log.close();
      await dropSchema(schema);
    }
  }, 120_000);
});
