import { cp, mkdtemp, readdir, rm } from "node:fs/promises";
import { existsSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { Level } from "level";
import type { RecordedEvent } from "../event-log.js";
import { ChainVerifier } from "../hash-chain.js";
import { describeDamage, findDamagedFile, type LevelFileDamage } from "./level-files.js";
import {
  ABSENT_KEY,
  FORMAT_KEY,
  HEAD_PREFIX,
  LAST_GLOBAL_KEY,
  LAYOUT_FORMAT,
  globalKey,
  prefixRange,
  streamHeadKey,
  streamIndexKey,
} from "./level-keys.js";
import { isSealStream, sealStreamOf } from "../seal/seal-record.js";
import { memberOf } from "../../util/json-value.js";

/** What {@link repairLevelLog} kept and dropped of one stream. */
export interface RepairedStream {
  stream: string;
  /** Events kept: stream positions 1..kept, each chain-verified. */
  kept: number;
  /** Events of the stream known to have existed (its head's version, or the highest position found) past what was kept. */
  dropped: number;
  /** The first position not kept, and why (absent when nothing was dropped). */
  firstBadPosition?: number;
  reason?: string;
}

/** What {@link repairLevelLog} did. */
export interface RepairReport {
  /** The damaged log, read and never changed. */
  source: string;
  /** The new log. */
  out: string;
  /** The first damaged file the check found in the source (`undefined`: its files read whole; the damage is in the events). */
  damagedFile: LevelFileDamage | undefined;
  /** One row per stream, sorted by name. */
  streams: RepairedStream[];
  kept: number;
  dropped: number;
  /** Global positions of the new log that hold no event (dropped ones), recorded in it so readers know the holes. */
  absentPositions: number;
}

type Database = Level<string, string>;

const globalRange = prefixRange("g!");

/**
 * Salvages the valid prefix of every stream of a damaged LevelDB log into a new log, and never
 * changes the damaged one. The source is copied to a temporary directory (without its LOCK), and
 * LevelDB's own repair (`RepairDB`: every record of every write-ahead file and table it can still
 * read, under a new MANIFEST) is run on the copy. Each stream's events are then walked from
 * position 1 with the hash-chain check, and kept up to the first one that is missing or does not
 * verify; a seal stream keeps the seals that cover only kept events. The kept events are written
 * to `out` exactly as they were stored (same positions, IDs and hashes, so seals of them still
 * verify), and the global positions left without an event are recorded in `out` (`m!absent`), so
 * that its readers never take a dropped event for a lost one.
 *
 * @example
 * const report = await repairLevelLog(".turnlog", ".turnlog-repaired");
 * for (const row of report.streams) console.log(row.stream, row.kept, row.dropped);
 */
export async function repairLevelLog(source: string, out: string): Promise<RepairReport> {
  const from = path.resolve(source);
  const to = path.resolve(out);
  if (from === to) throw new TypeError("repair writes a new log: --out must name another directory");
  if (existsSync(to) && (await readdir(to)).length > 0) throw new TypeError(`${to} is not empty: repair writes a new log into a new (or empty) directory`);
  const { damagedFile, salvaged } = await salvage(from);
  return writeRepaired(salvaged, from, to, damagedFile);
}

/**
 * What {@link repairLevelLog} would keep and drop of each stream, without writing a new log:
 * `turnlog verify` names the first bad position of each stream of a log whose files are damaged
 * this way. The log is read from a copy and never changed.
 *
 * @example
 * const { damagedFile, streams } = await salvageLevelLog(".turnlog");
 */
export async function salvageLevelLog(source: string): Promise<{ damagedFile: LevelFileDamage | undefined; streams: RepairedStream[] }> {
  const { damagedFile, salvaged } = await salvage(path.resolve(source));
  return { damagedFile, streams: [...prefixes(salvaged).rows.values()].filter((row) => row.kept > 0 || row.dropped > 0) };
}

async function salvage(from: string): Promise<{ damagedFile: LevelFileDamage | undefined; salvaged: Salvaged }> {
  if (!existsSync(path.join(from, "CURRENT"))) throw new TypeError(`no LevelDB log at ${from}`);
  const damagedFile = await findDamagedFile(from, { deep: true });
  const copy = await mkdtemp(path.join(tmpdir(), "turnlog-repair-"));
  try {
    // Not the snapshots (docs/design.md#5-projections): a cache, and the repaired log gets none.
    await cp(from, copy, { recursive: true, filter: (file) => path.basename(file) !== "LOCK" && file !== path.join(from, "snapshots") });
    // `level` is classic-level's ClassicLevel in Node, whose static `repair` runs LevelDB's RepairDB
    // (its types, written for every platform, do not declare it). RepairDB reads write-ahead files
    // without checking their checksums, so it keeps more than an open would; the hash chain then
    // judges every event it kept.
    await (Level as unknown as { repair(location: string): Promise<void> }).repair(copy);
    return { damagedFile, salvaged: await readSalvaged(copy) };
  } finally {
    await rm(copy, { recursive: true, force: true });
  }
}

interface Salvaged {
  /** Each stream's parsed events by stream position, with the text they were stored as. */
  streams: Map<string, Map<number, { event: RecordedEvent; raw: string }>>;
  /** Each stream's head version, where its head is readable. */
  heads: Map<string, number>;
  /** The last global position the source used (so the new log never reuses one). */
  lastGlobal: number;
}

async function readSalvaged(directory: string): Promise<Salvaged> {
  const db: Database = new Level<string, string>(directory, { keyEncoding: "utf8", valueEncoding: "utf8", compression: false });
  await db.open();
  try {
    const streams: Salvaged["streams"] = new Map();
    let lastGlobal = Number(await db.get(LAST_GLOBAL_KEY)) || 0;
    for await (const [key, raw] of db.iterator(globalRange)) {
      let event: RecordedEvent;
      try {
        event = JSON.parse(raw) as RecordedEvent;
      } catch {
        continue;
      }
      const meta = event?.meta;
      if (typeof meta?.stream !== "string" || !Number.isSafeInteger(meta.streamPosition) || globalKey(meta.globalPosition) !== key) continue;
      lastGlobal = Math.max(lastGlobal, meta.globalPosition);
      let stream = streams.get(meta.stream);
      if (stream === undefined) streams.set(meta.stream, (stream = new Map()));
      if (!stream.has(meta.streamPosition)) stream.set(meta.streamPosition, { event, raw });
    }
    const heads: Salvaged["heads"] = new Map();
    for await (const [key, value] of db.iterator(prefixRange(HEAD_PREFIX))) {
      try {
        const head = JSON.parse(value) as { stream?: unknown; version?: unknown };
        if (typeof head.stream === "string" && Number.isSafeInteger(head.version)) heads.set(head.stream, head.version as number);
      } catch {
        heads.set(decodeURIComponent(key.slice(HEAD_PREFIX.length)), 0);
      }
    }
    return { streams, heads, lastGlobal };
  } finally {
    await db.close();
  }
}

/** The chain-verified prefix of one stream: how many events, and where and why it ends early. */
function validPrefix(stream: string, events: Map<number, { event: RecordedEvent; raw: string }>, known: number): { kept: number; firstBad?: number; reason?: string } {
  const verifier = new ChainVerifier(stream);
  let kept = 0;
  for (let position = 1; position <= known; position += 1) {
    const found = events.get(position);
    if (found === undefined) return { kept, firstBad: position, reason: "missing: no readable event of this position was salvaged" };
    if (!verifier.check({ position, globalPosition: found.event.meta.globalPosition, raw: found.raw })) {
      const result = verifier.finish();
      return { kept, firstBad: position, reason: result.ok ? "missing" : result.reason };
    }
    kept = position;
  }
  return { kept };
}

/** Each stream's verified prefix: a row per stream, and the events kept. */
function prefixes(salvaged: Salvaged): { rows: Map<string, RepairedStream>; keptEvents: Array<{ event: RecordedEvent; raw: string }> } {
  const names = [...new Set([...salvaged.streams.keys(), ...salvaged.heads.keys()])].sort();
  const rows = new Map<string, RepairedStream>();
  const keptEvents: Array<{ event: RecordedEvent; raw: string }> = [];
  // Sealed streams first, so that each seal stream is cut to the seals of kept events.
  for (const stream of [...names.filter((name) => !isSealStream(name)), ...names.filter(isSealStream)]) {
    const events = salvaged.streams.get(stream) ?? new Map();
    const known = Math.max(salvaged.heads.get(stream) ?? 0, ...events.keys());
    let { kept, firstBad, reason } = validPrefix(stream, events, known);
    if (isSealStream(stream)) {
      const sealed = rows.get(stream.slice(sealStreamOf("").length));
      const limit = sealed?.kept ?? 0;
      for (let position = 1; position <= kept; position += 1) {
        const version = memberOf(events.get(position)?.event.data, "version");
        if (typeof version !== "number" || version > limit) {
          kept = position - 1;
          firstBad = position;
          reason = `seal ${position} covers events the repair dropped (version ${String(version)}, kept ${limit})`;
          break;
        }
      }
    }
    for (let position = 1; position <= kept; position += 1) keptEvents.push(events.get(position)!);
    const row: RepairedStream = { stream, kept, dropped: known - kept };
    if (firstBad !== undefined && known > kept) Object.assign(row, { firstBadPosition: firstBad, reason });
    rows.set(stream, row);
  }
  return { rows, keptEvents };
}

async function writeRepaired(salvaged: Salvaged, source: string, out: string, damagedFile: LevelFileDamage | undefined): Promise<RepairReport> {
  const { rows, keptEvents } = prefixes(salvaged);
  keptEvents.sort((a, b) => a.event.meta.globalPosition - b.event.meta.globalPosition);
  const lastGlobal = Math.max(salvaged.lastGlobal, keptEvents.at(-1)?.event.meta.globalPosition ?? 0);
  const absent: Array<[number, number]> = [];
  let next = 1;
  for (const { event } of keptEvents) {
    if (event.meta.globalPosition > next) absent.push([next, event.meta.globalPosition - 1]);
    next = event.meta.globalPosition + 1;
  }
  if (next <= lastGlobal) absent.push([next, lastGlobal]);
  const db: Database = new Level<string, string>(out, { keyEncoding: "utf8", valueEncoding: "utf8", compression: false });
  await db.open();
  try {
    let batch = db.batch();
    for (const { event, raw } of keptEvents) {
      batch.put(globalKey(event.meta.globalPosition), raw);
      batch.put(streamIndexKey(event.meta.stream, event.meta.streamPosition), String(event.meta.globalPosition));
      if (batch.length >= 2_000) {
        await batch.write();
        batch = db.batch();
      }
    }
    const lastOf = new Map<string, RecordedEvent>();
    for (const { event } of keptEvents) lastOf.set(event.meta.stream, event);
    for (const [stream, event] of lastOf) batch.put(streamHeadKey(stream), JSON.stringify({ stream, version: event.meta.streamPosition, hash: event.meta.hash }));
    batch.put(LAST_GLOBAL_KEY, String(lastGlobal));
    if (absent.length > 0) batch.put(ABSENT_KEY, JSON.stringify(absent));
    batch.put(FORMAT_KEY, LAYOUT_FORMAT);
    await batch.write({ sync: true });
  } finally {
    await db.close();
  }
  const streams = [...rows.values()].filter((row) => row.kept > 0 || row.dropped > 0);
  return {
    source,
    out,
    damagedFile,
    streams,
    kept: keptEvents.length,
    dropped: streams.reduce((sum, row) => sum + row.dropped, 0),
    absentPositions: absent.reduce((sum, [from, to]) => sum + to - from + 1, 0),
  };
}

/** The lines `turnlog repair` prints for a report. */
export function describeRepair(report: RepairReport): string[] {
  const lines = [
    `repaired ${report.source} into ${report.out}: kept ${report.kept} events, dropped ${report.dropped}${report.damagedFile === undefined ? "" : ` (damaged file: ${describeDamage(report.damagedFile)})`}`,
  ];
  for (const row of report.streams) {
    lines.push(row.dropped === 0 ? `  ${row.stream}: kept ${row.kept}, dropped 0` : `  ${row.stream}: kept ${row.kept}${row.kept > 0 ? ` (1–${row.kept})` : ""}, dropped ${row.dropped} from position ${row.firstBadPosition ?? row.kept + 1}: ${row.reason ?? "missing"}`);
  }
  return lines;
}
