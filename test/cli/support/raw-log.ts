/**
 * Reaches under the EventLog API into a LevelDB log directory, the way an attacker with file
 * access would, to prove that `turnlog verify` notices.
 */
import { Level } from "level";
import { globalKey, streamIndexKey } from "../../../src/log/level/level-keys.js";

type RawDatabase = Level<string, string>;

/** Opens the raw database, runs `work`, closes it (releasing the lock before the CLI runs). */
export async function withRawLog<T>(directory: string, work: (db: RawDatabase) => Promise<T>): Promise<T> {
  const db = new Level<string, string>(directory, { keyEncoding: "utf8", valueEncoding: "utf8" });
  await db.open();
  try {
    return await work(db);
  } finally {
    await db.close();
  }
}

/** The key under which the event at `position` of `stream` is stored. */
export async function eventKey(db: RawDatabase, stream: string, position: number): Promise<string> {
  const globalPosition = await db.get(streamIndexKey(stream, position));
  if (globalPosition === undefined) throw new Error(`no event at ${stream} #${position}`);
  return globalKey(Number(globalPosition));
}

/** Rewrites one stored event's JSON (keeping it valid JSON, leaving its hash as it was). */
export async function rewriteEvent(directory: string, stream: string, position: number, change: (event: { type: string; data: Record<string, unknown> }) => void): Promise<void> {
  await withRawLog(directory, async (db) => {
    const key = await eventKey(db, stream, position);
    const event = JSON.parse((await db.get(key)) ?? "null") as { type: string; data: Record<string, unknown> };
    change(event);
    await db.put(key, JSON.stringify(event));
  });
}

/** Removes one event entirely: its stored value and its entry in the stream index. */
export async function deleteEvent(directory: string, stream: string, position: number): Promise<void> {
  await withRawLog(directory, async (db) => {
    const key = await eventKey(db, stream, position);
    await db.batch([
      { type: "del", key },
      { type: "del", key: streamIndexKey(stream, position) },
    ]);
  });
}

/** Swaps the stored values of two events of a stream. */
export async function swapEvents(directory: string, stream: string, first: number, second: number): Promise<void> {
  await withRawLog(directory, async (db) => {
    const firstKey = await eventKey(db, stream, first);
    const secondKey = await eventKey(db, stream, second);
    const [firstValue, secondValue] = await db.getMany([firstKey, secondKey]);
    await db.batch([
      { type: "put", key: firstKey, value: secondValue ?? "" },
      { type: "put", key: secondKey, value: firstValue ?? "" },
    ]);
  });
}
