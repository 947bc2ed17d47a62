/**
 * Rewrites a LevelDB log directory under the EventLog API, the way someone with file access but
 * without the seal key would: with the hash chain re-computed so that `log.verify()` alone finds
 * nothing. For the seal and witness tests.
 */
import { readdir, truncate } from "node:fs/promises";
import path from "node:path";
import { Level } from "level";
import { computeEventHash, type UnhashedEvent } from "../../src/log/hash-chain.js";
import type { RecordedEvent } from "../../src/log/event-log.js";
import { globalKey, prefixRange, streamHeadKey, streamIndexKey, streamIndexPrefix } from "../../src/log/level/level-keys.js";
import { sealStreamOf } from "../../src/log/seal/seal-record.js";

type RawDatabase = Level<string, string>;

async function withDatabase<T>(directory: string, work: (db: RawDatabase) => Promise<T>): Promise<T> {
  const db = new Level<string, string>(directory, { keyEncoding: "utf8", valueEncoding: "utf8", compression: false });
  await db.open();
  try {
    return await work(db);
  } finally {
    await db.close();
  }
}

async function readRawStream(db: RawDatabase, stream: string): Promise<RecordedEvent[]> {
  const positions = await db.values(prefixRange(streamIndexPrefix(stream))).all();
  const raws = await db.getMany(positions.map((position) => globalKey(Number(position))));
  return raws.map((raw) => JSON.parse(raw ?? "null") as RecordedEvent);
}

/**
 * Replaces the events of `stream` with what `change` makes of them (edited, fewer, reordered),
 * then re-computes positions, `prevHash` and `hash` and writes the stream, its index and its head
 * back: a consistently re-chained rewrite. Removed events' values are deleted too.
 */
export async function rechainStream(directory: string, stream: string, change: (events: RecordedEvent[]) => RecordedEvent[]): Promise<void> {
  await withDatabase(directory, async (db) => {
    const before = await readRawStream(db, stream);
    const after = change(structuredClone(before));
    const operations: Array<{ type: "put"; key: string; value: string } | { type: "del"; key: string }> = [];
    for (const event of before) operations.push({ type: "del", key: globalKey(event.meta.globalPosition) }, { type: "del", key: streamIndexKey(stream, event.meta.streamPosition) });
    let prevHash = "";
    after.forEach((event, index) => {
      event.meta.streamPosition = index + 1;
      event.meta.prevHash = prevHash;
      event.meta.hash = computeEventHash(prevHash, event as UnhashedEvent);
      prevHash = event.meta.hash;
      operations.push({ type: "put", key: globalKey(event.meta.globalPosition), value: JSON.stringify(event) });
      operations.push({ type: "put", key: streamIndexKey(stream, index + 1), value: String(event.meta.globalPosition) });
    });
    if (after.length === 0) operations.push({ type: "del", key: streamHeadKey(stream) });
    else operations.push({ type: "put", key: streamHeadKey(stream), value: JSON.stringify({ stream, version: after.length, hash: prevHash }) });
    // Later puts of the same key win within a batch, so a kept event's delete above is undone.
    await db.batch(operations);
  });
}

/** The events of `stream` as stored (for choosing what to tamper with). */
export async function rawStream(directory: string, stream: string): Promise<RecordedEvent[]> {
  return withDatabase(directory, (db) => readRawStream(db, stream));
}

/**
 * Drops the tail of `stream` after `keep` events, and with it every seal that covers a dropped
 * event: the chain and the remaining seals stay valid, so only a witness can tell.
 */
export async function dropTail(directory: string, stream: string, keep: number): Promise<void> {
  await rechainStream(directory, stream, (events) => events.slice(0, keep));
  await rechainStream(directory, sealStreamOf(stream), (seals) => seals.filter((seal) => (seal.data as { version: number }).version <= keep));
}

/** Deletes a stream and its seals entirely: events, index entries and heads. */
export async function deleteStream(directory: string, stream: string): Promise<void> {
  await rechainStream(directory, stream, () => []);
  await rechainStream(directory, sealStreamOf(stream), () => []);
}

/** Truncates every LevelDB write-ahead file (`*.log`) of the directory to zero bytes, as `truncate -s 0 .turnlog/*.log` does. */
export async function truncateLogFiles(directory: string): Promise<string[]> {
  const files = (await readdir(directory)).filter((name) => name.endsWith(".log"));
  for (const file of files) await truncate(path.join(directory, file), 0);
  return files;
}
