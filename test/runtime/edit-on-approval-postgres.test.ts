import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, expect, it } from "vitest";
import { createLogReader, PostgresEventLog, SessionStateError, sessionStream } from "../../src/index.js";
import { decideCommand, readEvents, SessionFold } from "../../src/core.js";
import { startLogChild } from "../support/log-child-process.js";
import { describeWithPostgres, dropSchema, freshSchemaName, requirePostgresUrl } from "../support/postgres.js";

/**
 * Edit on approval from a process without the host's code (docs/policy.md#edit-on-approval): a host
 * (a child process) parks `deploy({ version: "v2", region: "eu" })` on a PostgreSQL log; this
 * process — no tools, no provider — folds the session and records what the session decider returns
 * for an approval with edited arguments, at the stream's version. The host resumes by itself and
 * the tool runs once, with the edited arguments; a widening or schema-invalid edit is refused here
 * first, and nothing of it reaches the log.
 */

const directories: string[] = [];
afterAll(async () => {
  await Promise.all(directories.map((directory) => rm(directory, { recursive: true, force: true })));
});

/** The session as this process folds it from the log, and its stream version. */
async function foldOf(log: PostgresEventLog, stream: string) {
  const events = await log.readStream(stream);
  const fold = new SessionFold();
  for (const event of readEvents(events)) fold.apply(event);
  fold.settle();
  return { fold, version: events.length };
}

describeWithPostgres("edit on approval from a process without the host's tools, on PostgreSQL", () => {
  it("the host runs the tool once with the edited arguments; a refused edit appends nothing", async () => {
    const url = requirePostgresUrl();
    const schema = freshSchemaName("edit_approve");
    const directory = await mkdtemp(join(tmpdir(), "turnlog-edit-pg-"));
    directories.push(directory);
    const effectsFile = join(directory, "effects.txt");
    await writeFile(effectsFile, "");
    const host = startLogChild("edit-host-child.ts", [url, schema, effectsFile, directory]);
    const log = await PostgresEventLog.open(url, { schema, poolSize: 4 });
    const stream = sessionStream("deploy-edit-1");
    try {
      await host.waitForLine((line) => line.startsWith("parked "));
      const [, callId = "", fingerprint = ""] = (host.lines.find((line) => line.startsWith("parked ")) ?? "").split(" ");

      // Refused before anything is appended: arguments the recorded schema does not accept.
      const before = await foldOf(log, stream);
      expect(() => decideCommand({ type: "approveCall", callId, by: "reviewer", fingerprint, arguments: { version: "v2.1" } }, before.fold)).toThrow(SessionStateError);
      expect(await log.streamVersion(stream)).toBe(before.version);

      // Recorded: exactly what the decider returns, at the version it was decided on.
      const events = decideCommand({ type: "approveCall", callId, by: "reviewer", note: "v2.1 has the fix", fingerprint, arguments: { version: "v2.1", region: "eu" } }, before.fold);
      await log.appendToStream(stream, events, { expectedStreamVersion: before.version });

      await host.waitForLine((line) => line.startsWith("final "));
      expect(await host.exited).toMatchObject({ code: 0 });
      expect(host.lines.at(-1)).toBe("final completed Deployed.");
      // One run, with the edited arguments.
      expect(await readFile(effectsFile, "utf8")).toBe("v2.1 eu\n");
      const reader = createLogReader(log);
      expect(await reader.audit("deploy-edit-1")).toMatchObject([
        { callId, tool: "deploy", decision: "ask", outcome: "succeeded", approvedBy: "reviewer", edited: { by: "reviewer", proposed: { version: "v2", region: "eu" }, ran: { version: "v2.1", region: "eu" } } },
      ]);
      // Replayed without the host's code: the tools rebuilt from the log judge the edit again.
      expect(await reader.replay("deploy-edit-1")).toMatchObject({ identical: true });
    } finally {
      host.child.kill("SIGKILL");
      await log.close();
      await dropSchema(schema);
    }
  }, 120_000);
});
