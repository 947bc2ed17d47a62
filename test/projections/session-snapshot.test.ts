import { createHash } from "node:crypto";
import { copyFile, readdir, readFile, writeFile } from "node:fs/promises";
import path from "node:path";
import { deserialize, serialize } from "node:v8";
import { beforeEach, describe, expect, it } from "vitest";
import { createRuntime, LevelEventLog } from "../../src/index.js";
import type { RecordedTurnlogEvent, SessionState } from "../../src/index.js";
import { foldEvents } from "../../src/projections/projection.js";
import { sessionStateProjection } from "../../src/projections/session-state.js";
import { SessionSnapshotReader, SessionSnapshotWriter } from "../../src/projections/session-snapshot.js";
import { scriptedProvider } from "../../src/testing/index.js";
import type { ScriptStep } from "../../src/testing/index.js";
import { temporary } from "../support/temporary-directories.js";
import { sequentialIds, steppingClock, workspace } from "../support/tools.js";

const stream = "session-s1";
let directory: string;
let log: LevelEventLog;
let events: RecordedTurnlogEvent[];

const stateAt = (position: number): SessionState => foldEvents(sessionStateProjection, events.slice(0, position));
const hashAt = (position: number): string => (events[position - 1] as RecordedTurnlogEvent).meta.hash;

/** The one record file of `position` (a LevelDB log keeps them in snapshots/streams/<stream digest>/). */
async function recordFile(position: number): Promise<string> {
  const streams = path.join(directory, "snapshots", "streams");
  const [only] = await readdir(streams);
  return path.join(streams, only as string, String(position).padStart(16, "0"));
}

async function flipByte(file: string, at: (length: number) => number): Promise<void> {
  const bytes = await readFile(file);
  const index = at(bytes.length);
  bytes[index] = (bytes[index] as number) ^ 0x5a;
  await writeFile(file, bytes);
}

beforeEach(async () => {
  directory = await temporary("turnlog-session-snapshot-");
  log = await LevelEventLog.open(directory, { durability: "relaxed", answers: false, clock: steppingClock(), ids: sequentialIds("event") });
  const ws = workspace({ "a.txt": "alpha ".repeat(20), "b.txt": "beta" });
  const steps: ScriptStep[] = [];
  for (let message = 0; message < 4; message += 1) {
    steps.push({ toolCalls: [{ name: "read_file", arguments: '{"path":"a.txt"}' }, { name: "read_file", arguments: '{"path":"b.txt"}' }] }, { content: `done ${message}` });
  }
  const runtime = await createRuntime({ log, provider: scriptedProvider(steps), tools: ws.tools, clock: steppingClock(), snapshots: false });
  const session = await runtime.openSession("s1");
  for (let message = 0; message < 4; message += 1) expect((await session.send(`read ${message}`)).status).toBe("completed");
  events = [...(await runtime.events("s1"))];
  return async () => {
    await runtime.close();
    await log.close();
  };
});

describe("session snapshots on a LevelDB log", () => {
  it("read back equal the fold, and each check passes over a snapshot that fails it for the next older one", async () => {
    const writer = new SessionSnapshotWriter(log.snapshots, stream, { chunkSize: 2 });
    const positions = [10, 20, 30, events.length];
    for (const position of positions) await writer.write(stateAt(position), { hash: hashAt(position), pending: [] });
    const reader = () => new SessionSnapshotReader();

    const newest = await reader().newest(log, log.snapshots, stream, events.length);
    expect(newest?.position).toBe(events.length);
    expect(newest?.state).toEqual(stateAt(events.length));
    expect((await reader().newest(log, log.snapshots, stream, 25))?.state).toEqual(stateAt(20));

    // Bytes flipped in a record: passed over, and deleted so that it is written again.
    await flipByte(await recordFile(events.length), (length) => length - 3);
    const afterFlip = await reader().newest(log, log.snapshots, stream, events.length);
    expect(afterFlip?.position).toBe(30);
    expect(afterFlip?.state).toEqual(stateAt(30));
    expect(await log.snapshots.positions(stream)).toEqual([10, 20, 30]);

    // The record of 30 under the name of 31: of another position than its name says.
    await copyFile(await recordFile(30), (await recordFile(30)).replace(/0030$/, "0031"));
    expect((await reader().newest(log, log.snapshots, stream, 31))?.position).toBe(30);

    // A record that names the hash of another event at its own position.
    await writer.write(stateAt(25), { hash: hashAt(24), pending: [] });
    expect((await reader().newest(log, log.snapshots, stream, 25))?.position).toBe(20);
    expect(await log.snapshots.positions(stream)).toEqual([10, 20, 30]);
  });

  it("keeps a snapshot it could not read (the store failed, not a check): passed over this time, used the next", async () => {
    const writer = new SessionSnapshotWriter(log.snapshots, stream, { chunkSize: 2 });
    for (const position of [10, 20]) await writer.write(stateAt(position), { hash: hashAt(position), pending: [] });
    const store = log.snapshots;
    const failing = new Proxy(store, {
      get(target, key) {
        if (key === "getRecord") {
          return async (name: string, position: number) => {
            if (position === 20) throw new Error("EIO: the disk hiccupped");
            return target.getRecord(name, position);
          };
        }
        const value = Reflect.get(target, key, target) as unknown;
        return typeof value === "function" ? value.bind(target) : value;
      },
    });
    const reader = new SessionSnapshotReader();
    expect((await reader.newest(log, failing, stream, 30))?.position).toBe(10);
    expect(reader.passedOver).toBe(0);
    expect(await log.snapshots.positions(stream)).toEqual([10, 20]);
    expect((await reader.newest(log, log.snapshots, stream, 30))?.state).toEqual(stateAt(20));
  });

  it("passes over a snapshot of an older projection version, one with a damaged chunk, and one whose chunk is gone", async () => {
    const positions = [12, 24, 36];
    const writer = new SessionSnapshotWriter(log.snapshots, stream, { chunkSize: 3 });
    await writer.write(stateAt(12), { hash: hashAt(12), pending: [] });
    await writer.write(stateAt(24), { hash: hashAt(24), pending: [] });
    const projection = sessionStateProjection as { version: number };
    const current = projection.version;
    projection.version = current - 1;
    try {
      await new SessionSnapshotWriter(log.snapshots, stream, { chunkSize: 3 }).write(stateAt(36), { hash: hashAt(36), pending: [] });
    } finally {
      projection.version = current;
    }
    expect(await log.snapshots.positions(stream)).toEqual(positions);
    expect((await new SessionSnapshotReader().newest(log, log.snapshots, stream, 40))?.position).toBe(24);

    // A chunk of 24's (and only 24's: the first of its messages after 12's chunks) damaged.
    const chunks = path.join(directory, "snapshots", "chunks");
    const reader = new SessionSnapshotReader();
    const at12 = await reader.newest(log, log.snapshots, stream, 12);
    const shared = new Set([...(at12?.chunks.values() ?? [])].flat().map((chunk) => chunk.digest));
    const onlyIn24 = (await readdir(chunks)).find((name) => !shared.has(name)) as string;
    await flipByte(path.join(chunks, onlyIn24), (length) => length >> 1);
    const found = await new SessionSnapshotReader().newest(log, log.snapshots, stream, 40);
    expect(found?.position).toBe(12);
    expect(found?.state).toEqual(stateAt(12));

    // Every chunk gone: no snapshot is usable, and that is a miss, never an error.
    await log.snapshots.clear();
    await writer.write(stateAt(12), { hash: hashAt(12), pending: [] });
    expect(await new SessionSnapshotReader().newest(log, log.snapshots, stream, 40)).toBeUndefined();
  });

  it("passes over, when it is opened, a snapshot whose calls (decoded only when read) are in a chunk a newer Node wrote or of another length", async () => {
    const writer = new SessionSnapshotWriter(log.snapshots, stream, { chunkSize: 2 });
    for (const position of [12, 24]) await writer.write(stateAt(position), { hash: hashAt(position), pending: [] });
    const digest = (bytes: Uint8Array) => createHash("sha256").update(bytes).digest("hex");
    /** The record of 24 written again, its first chunk of calls replaced by `bytes` (stored under their digest). */
    const replaceFirstCallChunk = async (bytes: Uint8Array) => {
      const record = (await log.snapshots.getRecord(stream, 24)) as Uint8Array;
      const payload = deserialize(record.subarray(32)) as { lists: { calls: { chunks: string[] } } };
      payload.lists.calls.chunks[0] = digest(bytes);
      await log.snapshots.putChunk(digest(bytes), bytes);
      const body = serialize(payload);
      await log.snapshots.putRecord(stream, 24, Buffer.concat([Buffer.from(digest(body), "hex"), body]));
    };
    const original = deserialize((await log.snapshots.getChunk((await new SessionSnapshotReader().newest(log, log.snapshots, stream, 24))?.chunks.get("calls")?.[0]?.digest as string)) as Uint8Array) as unknown[];
    expect(original).toHaveLength(2);

    const newerNode = serialize(original);
    newerNode[1] = (newerNode[1] as number) + 1;
    await replaceFirstCallChunk(newerNode);
    let found = await new SessionSnapshotReader().newest(log, log.snapshots, stream, 24);
    expect(found?.position).toBe(12);
    expect(found?.state).toEqual(stateAt(12));

    await writer.write(stateAt(24), { hash: hashAt(24), pending: [] });
    await replaceFirstCallChunk(serialize(original.slice(0, 1)));
    found = await new SessionSnapshotReader().newest(log, log.snapshots, stream, 24);
    expect(found?.position).toBe(12);

    await writer.write(stateAt(24), { hash: hashAt(24), pending: [] });
    found = await new SessionSnapshotReader().newest(log, log.snapshots, stream, 24);
    expect(found?.position).toBe(24);
    expect(found?.state).toEqual(stateAt(24));
  });
});
