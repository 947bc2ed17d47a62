/**
 * Where opening a long session from its newest snapshot, and its next request, spend their time
 * (docs/performance.md#snapshots-on-disk-issue-35-first-measurement): the pieces of what
 * `runtime.openSession` and the first `send` do, each timed alone, on the log bench/snapshots.ts
 * keeps (run that first, with a log directory), in a fresh process (nothing decoded yet):
 *
 * - the snapshot read (`SessionSnapshotReader.newest`: its record, the checks, every chunk it names
 *   read, checked and decoded, the lists built), and inside it: the record alone, and the chunks'
 *   bytes read and hashed without being decoded;
 * - the fold of the events after the snapshot;
 * - the tokenizer's first load (what any session's first request pays once per process);
 * - the first request history built from the opened state, and a second one (extended);
 * - what an open of only what the next decisions read would cost at least: the record, and the
 *   message chunks from the last compaction's boundary on, decoded.
 *
 *   node --import tsx --expose-gc bench/snapshot-open-pieces.ts <log-directory>
 */
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { deserialize } from "node:v8";
import { LevelEventLog } from "../src/index.js";
import { readEvents } from "../src/core/read-events.js";
import { SessionFold } from "../src/core/session-fold.js";
import { sessionStream } from "../src/core/session-stream.js";
import { defaultTokenEstimator } from "../src/history/token-estimator.js";
import { SessionSnapshotReader } from "../src/projections/session-snapshot.js";
import type { SessionMessage, SessionState } from "../src/projections/session-state.js";
import { buildRequestHistory } from "../src/providers/format-history.js";

const directory = process.argv[2];
if (directory === undefined) throw new Error("usage: bench/snapshot-open-pieces.ts <log-directory kept by bench/snapshots.ts>");
const load = (): string => readFileSync("/proc/loadavg", "utf8").split(" ").slice(0, 3).join(" ");
const cpuMs = (): number => {
  const used = process.cpuUsage();
  return (used.user + used.system) / 1000;
};
const rows: string[][] = [];
/** Runs `work`, recording its wall and CPU milliseconds. */
async function timed<Value>(name: string, work: () => Promise<Value> | Value): Promise<Value> {
  const cpu = cpuMs();
  const began = performance.now();
  const value = await work();
  rows.push([name, `${(performance.now() - began).toFixed(0)} ms (CPU ${(cpuMs() - cpu).toFixed(0)} ms)`]);
  return value;
}

const log = await LevelEventLog.open(directory, { durability: "relaxed", answers: false });
const stream = sessionStream("bench");
const store = log.snapshots;
const positions = await store.positions(stream);
const newest = positions.at(-1);
if (newest === undefined) throw new Error(`no snapshot of ${stream} in ${directory}: run bench/snapshots.ts with it first`);
rows.push([`session of ${await log.streamVersion(stream)} events, newest snapshot at ${newest}`, `load ${load()}`]);

interface Payload {
  head: SessionState;
  lists: Record<string, { chunks: string[]; tail: unknown[] }>;
}
const payload = await timed("  its record alone: read and decoded", async () => deserialize(((await store.getRecord(stream, newest)) as Uint8Array).subarray(32)) as Payload);
const digests = Object.values(payload.lists).flatMap((list) => list.chunks);
await timed(`  the ${digests.length} chunks it names: read and hashed, not decoded`, async () => {
  for (let from = 0; from < digests.length; from += 16) {
    const batch = await Promise.all(digests.slice(from, from + 16).map((digest) => store.getChunk(digest)));
    for (const bytes of batch) createHash("sha256").update(bytes as Uint8Array).digest("hex");
  }
});
global.gc?.();
const found = await timed("the snapshot read, checked and decoded (SessionSnapshotReader.newest)", () => new SessionSnapshotReader().newest(log, store, stream, Number.MAX_SAFE_INTEGER));
if (found === undefined) throw new Error("the newest snapshot was passed over");
const fold = new SessionFold();
await timed(`the events after it folded`, async () => {
  fold.resume(found);
  fold.applyAll(readEvents(await log.readStream(stream, { from: found.position + 1 })));
  return fold.pending;
});
await timed("the tokenizer's first load (once per process)", () => defaultTokenEstimator.count("one more message"));
await timed(`the first request history of the opened state (${fold.state.messages.length} messages)`, () => buildRequestHistory(fold.state));
await timed("  and again (extended)", () => buildRequestHistory(fold.state));

// Only what the next decisions read: the messages from the last compaction's boundary on.
const boundary = payload.head.historySummary?.beforePosition ?? 0;
await timed(`at least, an open of the live part only: the record, and the message chunks from position ${boundary} on`, async () => {
  const record = deserialize(((await store.getRecord(stream, newest)) as Uint8Array).subarray(32)) as Payload;
  const messages = record.lists.messages as { chunks: string[]; tail: SessionMessage[] };
  let live = messages.tail.filter((message) => message.position >= boundary).length;
  for (let index = messages.chunks.length - 1; index >= 0 && (messages.tail[0]?.position ?? Infinity) >= boundary; index -= 1) {
    const chunk = deserialize((await store.getChunk(messages.chunks[index] as string)) as Uint8Array) as SessionMessage[];
    live += chunk.filter((message) => message.position >= boundary).length;
    if ((chunk[0] as SessionMessage).position < boundary) break;
  }
  return live;
});
await log.close();
const width = Math.max(...rows.map((row) => (row[0] as string).length));
for (const [name, value] of rows) console.log(`${(name as string).padEnd(width)}  ${value}`);
console.log(`load after: ${load()}`);
