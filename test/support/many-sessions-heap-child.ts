/**
 * Child process of the bounded-memory test (argv: `<directory> <sessions> [maxOpenSessions]`),
 * run with `--expose-gc`: one runtime on a LevelEventLog opens `sessions` sessions in turn, each
 * with one short send through a scripted provider, keeping no reference to them. It prints
 * `baseline <bytes>` (heap used after a gc, with the runtime created and 50 sessions opened and
 * sent, the working set warm), `after <bytes>` once every session ran and a gc, then `done`.
 */
import { z } from "zod";
import { createRuntime, defineTool, LevelEventLog } from "../../src/index.js";
import type { Provider } from "../../src/index.js";
import { scriptedProvider } from "../../src/testing/index.js";

const [directory, sessionsText, maxOpenText] = process.argv.slice(2);
if (directory === undefined || sessionsText === undefined) throw new TypeError("usage: many-sessions-heap-child.ts <directory> <sessions> [maxOpenSessions]");
const gc = (globalThis as { gc?: () => void }).gc;
if (gc === undefined) throw new Error("run with --expose-gc");
const sessions = Number(sessionsText);
const print = (line: string) => process.stdout.write(`${line}\n`);

const readNote = defineTool({ name: "read_note", description: "Read a note", risk: "read-only-local", input: z.object({ id: z.number() }), run: ({ id }) => `note ${id}` });
// A scripted provider per request: each session's turn is one call and one answer, and nothing of
// an earlier session is kept by the provider (a single scripted provider keeps every request).
const provider: Provider = {
  id: "scripted",
  format: "openai-chat",
  complete: (request, options) => scriptedProvider([{ content: "done" }]).complete(request, options),
};
const log = await LevelEventLog.open(directory, { durability: "relaxed" });
const runtime = await createRuntime({
  log,
  provider,
  tools: [readNote],
  ...(maxOpenText !== undefined ? { maxOpenSessions: Number(maxOpenText) } : {}),
});

async function run(index: number): Promise<void> {
  const session = await runtime.openSession(`s${index}`);
  const outcome = await session.send("read note 1");
  if (outcome.status !== "completed") throw new Error(`session s${index} ended ${outcome.status}`);
}

/** Heap used after a full collection, once finalizers that collection queued have run, and another. */
const heap = async () => {
  gc();
  await new Promise((resolve) => setImmediate(resolve));
  gc();
  return process.memoryUsage().heapUsed;
};
const warm = 50;
for (let index = 0; index < warm; index += 1) await run(index);
const baseline = await heap();
print(`baseline ${baseline}`);
const started = Date.now();
// A few lanes, each opening its sessions one after another: LevelDB's writes of one lane overlap
// the others' work (the session count is what matters here, not how they interleave).
const lanes = 4;
let next = warm;
await Promise.all(
  Array.from({ length: lanes }, async () => {
    while (next < sessions) await run(next++);
  }),
);
print(`after ${await heap()}`);
print(`ms ${Date.now() - started}`);
await runtime.close();
await log.close();
print("done");
