/**
 * The realistic-calls scenario (bench/realistic.ts) alone, run `runs` times in one process with one
 * durability, for a CPU profile of turnlog's own work (docs/performance.md#profile):
 *
 *   node --cpu-prof --cpu-prof-dir=<dir> --import tsx bench/profile-realistic.ts [sync|relaxed] [turns=200] [runs=6]
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { z } from "zod";
import { createRuntime, defineTool, LevelEventLog } from "../src/index.js";
import { scriptedProvider } from "../src/testing/index.js";
import { realisticAnswer, realisticPrompt, realisticScript, realisticTools } from "./realistic-workload.js";
const durability = (process.argv[2] ?? "relaxed") as "sync" | "relaxed";
const turns = Number(process.argv[3] ?? 200);
const runs = Number(process.argv[4] ?? 6);
const script = realisticScript(turns);
const outputs = new Map(script.flat().map((c) => [c.id, c.output]));
const tools = realisticTools.map((spec) => defineTool({ name: spec.name, description: spec.description, risk: spec.readOnly ? "read-only-local" : "workspace-write", input: z.looseObject({}), run: (_i, ctx) => outputs.get(ctx.callId)! }));
for (let run = 0; run < runs; run += 1) {
  const dir = await mkdtemp(join(tmpdir(), "turnlog-prof-"));
  const log = await LevelEventLog.open(dir, { durability });
  const runtime = await createRuntime({ log, provider: scriptedProvider([...script.map((calls) => ({ toolCalls: calls.map((c) => ({ id: c.id, name: c.tool, arguments: c.arguments })) })), { content: realisticAnswer }]), tools, policy: { approvalMode: "full-auto", workspace: { root: dir, trusted: true } }, budgets: { maxIterations: turns + 1, maxToolCalls: turns * 4 + 1 } });
  const session = await runtime.openSession("p");
  const started = process.hrtime.bigint();
  const cpu = process.cpuUsage();
  const outcome = await session.send(realisticPrompt);
  const used = process.cpuUsage(cpu);
  // CPU time (all threads) as well as wall time: on a loaded machine the CPU time moves less.
  console.log(`run ${run}: ${outcome.status}, ${(Number(process.hrtime.bigint() - started) / 1000 / (turns * 4)).toFixed(0)} µs per call, CPU ${((used.user + used.system) / (turns * 4)).toFixed(0)} µs per call`);
  await runtime.close(); await log.close(); await rm(dir, { recursive: true, force: true });
}
