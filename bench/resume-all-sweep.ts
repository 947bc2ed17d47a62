/**
 * The worker's sweep on a large log (issue 33, deliverable 5): a LevelEventLog holds `--sessions`
 * (default 2 000) sessions that ended — `--messages` (default 1) messages, one answer each — plus `--waiting` (default
 * 20) parked for approval and `--answered` (default 20) answered and not resumed. Prints the time
 * of `runtime.resumeAll()` (which reads each session's last event and folds only the sessions that
 * may owe work), of a second sweep with nothing left to continue, and of `reader.sessions()` (which
 * folds every session in full) for comparison, with how many sessions each folded.
 *
 *   node --import tsx bench/resume-all-sweep.ts [--sessions 2000] [--messages 1] [--waiting 20] [--answered 20]
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { z } from "zod";
import { createLogReader, createRuntime, defineTool, LevelEventLog } from "../src/index.js";
import type { Provider } from "../src/index.js";
import { scriptedProvider } from "../src/testing/index.js";
import { printRows } from "./results.js";

const { values: options } = parseArgs({ options: { sessions: { type: "string", default: "2000" }, messages: { type: "string", default: "1" }, waiting: { type: "string", default: "20" }, answered: { type: "string", default: "20" } } });
const ended = Number(options.sessions);
const messages = Number(options.messages);
const waiting = Number(options.waiting);
const answered = Number(options.answered);

/** Answers from the request's history, so one provider serves every session. */
const provider: Provider = {
  id: "sweep-scripted",
  format: "openai-chat",
  async complete(request, completeOptions) {
    const deploy = request.messages.some((message) => JSON.stringify(message).includes("deploy it"));
    const answers = request.messages.filter((message) => (message as { role?: string }).role === "assistant").length;
    const script = deploy ? [{ content: "Deploying.", toolCalls: [{ name: "deploy", arguments: "{}" }] }, { content: "Deployed." }] : [{ content: "Done." }];
    return scriptedProvider(deploy ? script.slice(answers) : script).complete(request, completeOptions);
  },
};
const tools = [defineTool({ name: "deploy", description: "Deploy", risk: "external-side-effect", input: z.object({}), run: () => "deployed" })];

const directory = await mkdtemp(join(tmpdir(), "turnlog-bench-sweep-"));
try {
  const log = await LevelEventLog.open(directory, { durability: "sync" });
  const host = await createRuntime({ log, provider, tools, policy: { approvalMode: "ask", workspace: { root: directory, trusted: true } } });
  for (let index = 0; index < ended; index += 1) {
    const session = await host.openSession(`ended-${index}`);
    for (let message = 0; message < messages; message += 1) await session.send("hello");
  }
  for (let index = 0; index < waiting + answered; index += 1) {
    const session = await host.openSession(index < waiting ? `waiting-${index}` : `answered-${index}`);
    const outcome = await session.send("deploy it");
    if (index >= waiting) await session.approve(outcome.pendingApprovals[0]?.callId ?? "", { by: "bench" });
  }
  await host.close();

  const worker = await createRuntime({ log, provider, tools });
  let started = performance.now();
  const report = await worker.resumeAll();
  const firstMs = performance.now() - started;
  started = performance.now();
  const again = await worker.resumeAll();
  const secondMs = performance.now() - started;
  started = performance.now();
  const listing = await createLogReader(log).sessions();
  const listingMs = performance.now() - started;
  await worker.close();
  await log.close();

  console.log(`resumeAll over ${report.scanned} sessions: continued ${report.continued.length}, waiting ${report.waiting.length}, failed ${report.failed.length}`);
  printRows([
    ["resumeAll (continues the answered ones)", `${firstMs.toFixed(0)} ms`, `${report.folded} folded of ${report.scanned}`],
    ["resumeAll again (nothing left)", `${secondMs.toFixed(0)} ms`, `${again.folded} folded of ${again.scanned}`],
    ["reader.sessions() (for comparison)", `${listingMs.toFixed(0)} ms`, `${listing.length} folded of ${listing.length}`],
  ]);
} finally {
  await rm(directory, { recursive: true, force: true });
}
