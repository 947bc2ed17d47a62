import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { createRuntime, LevelEventLog, type ReplayReport } from "../../src/index.js";
import { scriptedProvider } from "../../src/testing/index.js";
import { sequentialIds, transferTool } from "../support/tools.js";
import { runTurnlogInProcess } from "./support/turnlog-in-process.js";

/*
 * `turnlog replay` of a host's session whose tool has a needsApproval (decisions version 7): the
 * CLI has no host code, and says which answers it took from the log (docs/replay.md, "What replay
 * cannot recompute").
 */

const directories: string[] = [];
afterAll(async () => {
  await Promise.all(directories.map((directory) => rm(directory, { recursive: true, force: true })));
});

describe("turnlog replay lists the needsApproval answers it took as logged", () => {
  it("prints each answer under the verdict, and --json carries them", async () => {
    const workDir = await mkdtemp(path.join(tmpdir(), "turnlog-host-rules-"));
    directories.push(workDir);
    const logDir = path.join(workDir, "log");
    const log = await LevelEventLog.open(logDir);
    const provider = scriptedProvider([
      { content: "", toolCalls: [{ id: "call_small", name: "transfer", arguments: '{"amount":5}' }, { id: "call_large", name: "transfer", arguments: '{"amount":500}' }] },
      { content: "Moved 5; 500 was refused." },
    ]);
    const runtime = await createRuntime({ log, provider, tools: [transferTool()], ids: sequentialIds("id"), policy: { approvalMode: "auto-edit", workspace: { root: workDir, trusted: true } } });
    const session = await runtime.openSession("host-rules");
    expect(await session.send("move 5 and 500")).toMatchObject({ status: "awaiting-approval" });
    await session.deny("call_large", { by: "ann" });
    expect(await session.resume()).toMatchObject({ status: "completed" });
    await runtime.close();
    await log.close();

    const run = await runTurnlogInProcess(["replay", "host-rules", "--dir", logDir], { cwd: workDir, env: { NO_COLOR: "1" } });
    expect(run.stderr).toBe("");
    expect(run.code).toBe(0);
    const lines = run.stdout.trimEnd().split("\n");
    expect(lines).toContainEqual(expect.stringMatching(/^identical: \d+ decisions recomputed, 0 divergences$/));
    const heading = lines.indexOf("2 needsApproval answers of the host's code taken as logged (the gate decisions after them recomputed):");
    expect(heading).toBeGreaterThan(0);
    expect(lines.slice(heading + 1, heading + 3)).toEqual([expect.stringMatching(/^ {2}#\d+ call_small transfer: no approval needed$/), expect.stringMatching(/^ {2}#\d+ call_large transfer: needs approval$/)]);

    const json = await runTurnlogInProcess(["replay", "host-rules", "--dir", logDir, "--json"], { cwd: workDir, env: { NO_COLOR: "1" } });
    expect((JSON.parse(json.stdout) as ReplayReport).hostRules).toEqual([
      { position: expect.any(Number), callId: "call_small", tool: "transfer", needsApproval: false },
      { position: expect.any(Number), callId: "call_large", tool: "transfer", needsApproval: true },
    ]);
  });
});
