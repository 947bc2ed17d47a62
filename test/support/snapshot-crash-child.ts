/**
 * Child process for the snapshot crash test: opens a relaxed LevelEventLog in argv[2] and grows
 * session "s1" with a runtime that writes a snapshot every 30 events, one user message after
 * another (two reads and an answer each), printing "sent <n>" after each, until it is killed.
 */
import { createRuntime, LevelEventLog } from "../../src/index.js";
import { scriptedProvider } from "../../src/testing/index.js";
import type { ScriptStep } from "../../src/testing/index.js";
import { workspace } from "./tools.js";

const [directory] = process.argv.slice(2);
if (directory === undefined) throw new TypeError("usage: snapshot-crash-child.ts <directory>");
const messages = 10_000;
const steps: ScriptStep[] = Array.from({ length: messages }, (_, index) => [
  { toolCalls: [{ name: "read_file", arguments: '{"path":"a.txt"}' }, { name: "read_file", arguments: '{"path":"b.txt"}' }] },
  { content: `done ${index}` },
]).flat();
const log = await LevelEventLog.open(directory, { durability: "relaxed", answers: false });
const ws = workspace({ "a.txt": "alpha ".repeat(30), "b.txt": "beta" });
const runtime = await createRuntime({ log, provider: scriptedProvider(steps), tools: ws.tools, snapshots: { every: 30 } });
const session = await runtime.openSession("s1");
// A run killed in the middle of a turn left it for the next run to finish.
if (session.outcome().status === "needs-resume") await session.resume();
process.stdout.write("ready\n");
for (let message = 0; message < messages; message += 1) {
  await session.send(`read ${message}`);
  process.stdout.write(`sent ${message + 1}\n`);
}
