import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { LevelEventLog } from "../../src/index.js";
import type { AuditRow, RecordedEvent } from "../../src/index.js";
import { runTurnlogInProcess } from "./support/turnlog-in-process.js";

/*
 * `turnlog audit` and `turnlog show` on a session whose held write was approved with edited
 * arguments (the golden log of decisions version 7, copied into a LevelDB log): both say who edited
 * it, and the JSON has what was proposed and what ran.
 */

let logDir: string;
beforeAll(async () => {
  logDir = await mkdtemp(join(tmpdir(), "turnlog-edited-cli-"));
  const golden = JSON.parse(await readFile(new URL("../fixtures/logs/v7-edited-approval-session.json", import.meta.url), "utf8")) as RecordedEvent[];
  const log = await LevelEventLog.open(logDir);
  await log.appendToStream("session-golden-edit", golden.map(({ type, data }) => ({ type, data })));
  await log.close();
});
afterAll(async () => {
  await rm(logDir, { recursive: true, force: true });
});

const turnlog = (...args: string[]) => runTurnlogInProcess(args, { cwd: logDir, env: { NO_COLOR: "1", COLUMNS: "160" } });

describe("an edited approval on the command line", () => {
  it("turnlog audit names the editor, and --json prints what was proposed and what ran", async () => {
    const table = await turnlog("audit", "golden-edit", "--dir", logDir);
    expect(table.code).toBe(0);
    expect(table.stdout).toMatch(/write_file .* succeeded +ann \(edited\)/);
    const rows = JSON.parse((await turnlog("audit", "golden-edit", "--dir", logDir, "--json")).stdout) as AuditRow[];
    expect(rows.find((row) => row.callId === "call_save")?.edited).toEqual({
      by: "ann",
      proposed: { path: "summary.txt", content: "Ship on Fridy." },
      ran: { path: "summary.txt", content: "Ship on Friday (owner: Ann)." },
    });
  });

  it("turnlog show says the call was approved with edited arguments", async () => {
    const show = await turnlog("show", "golden-edit", "--dir", logDir);
    expect(show.code).toBe(0);
    expect(show.stdout).toContain("approved by ann with edited arguments");
  });
});
