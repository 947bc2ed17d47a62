/**
 * Checks the files of a LevelDB directory the way LevelDB's own readers would, without LevelDB:
 * so that a damaged file is named before LevelDB opens the directory. LevelDB (as classic-level
 * builds it, without `paranoid_checks`) recovers a write-ahead `.log` file by dropping every
 * record it cannot read and carrying on, then turns what it kept into a table and deletes the
 * `.log`: acknowledged events vanish and the evidence with them. Reading the files first is the
 * only way to say which file was damaged and where.
 *
 * Hand-written: no maintained JavaScript package reads LevelDB's log and table formats, and the
 * checks need only their framing (leveldb/doc/log_format.md and table_format.md: 32 KiB blocks of
 * CRC32C-framed records; a table's 48-byte footer, its index block and the CRC32C of each block).
 */
import { open, readdir, readFile } from "node:fs/promises";
import path from "node:path";

/** A file of the directory LevelDB cannot read whole: which, where, and why. */
export interface LevelFileDamage {
  /** The file's name within the directory (`000005.log`, `000007.ldb`, `MANIFEST-000004`, `CURRENT`). */
  file: string;
  /** The byte offset of the first bad record or block, when there is one. */
  offset?: number;
  reason: string;
}

/** How thoroughly {@link findDamagedFile} reads tables. */
export interface FileCheckOptions {
  /**
   * Also check every data block of every table against its checksum (reads every table whole).
   * Without it, only each table's footer and index block are read: cheap enough for every open.
   */
  deep?: boolean;
}

const BLOCK_SIZE = 32_768;
const HEADER_SIZE = 7;
const FOOTER_SIZE = 48;
const BLOCK_TRAILER_SIZE = 5;
/** 0xdb4775248b80fb57, little-endian: the last 8 bytes of every table. */
const TABLE_MAGIC = Buffer.from([0x57, 0xfb, 0x80, 0x8b, 0x24, 0x75, 0x47, 0xdb]);

const RECORD_FULL = 1;
const RECORD_FIRST = 2;
const RECORD_MIDDLE = 3;
const RECORD_LAST = 4;

/** CRC-32C (Castagnoli), the checksum of LevelDB's records and blocks; Node 20's zlib has none. */
const crcTable = (() => {
  const table = new Uint32Array(256);
  for (let n = 0; n < 256; n += 1) {
    let c = n;
    for (let k = 0; k < 8; k += 1) c = c & 1 ? 0x82f63b78 ^ (c >>> 1) : c >>> 1;
    table[n] = c >>> 0;
  }
  return table;
})();

function crc32c(bytes: Uint8Array, start: number, end: number): number {
  let crc = 0xffffffff;
  for (let index = start; index < end; index += 1) crc = (crcTable[(crc ^ bytes[index]!) & 0xff]! ^ (crc >>> 8)) >>> 0;
  return (crc ^ 0xffffffff) >>> 0;
}

/** LevelDB stores CRCs masked (crc32c.h `Unmask`). */
function unmask(masked: number): number {
  const rotated = (masked - 0xa282ead8) >>> 0;
  return ((rotated >>> 17) | (rotated << 15)) >>> 0;
}

/**
 * Checks a record file (a write-ahead `.log` or a `MANIFEST`). An incomplete last record — the
 * file ends inside it — is what a crash in the middle of a write leaves, and what LevelDB's
 * recovery is made to drop (its append was never acknowledged); it is not damage. Anything else
 * LevelDB would report as corruption and skip is.
 */
export function checkRecordBytes(bytes: Uint8Array): { offset: number; reason: string } | undefined {
  return readRecords(bytes).damage;
}

/** The whole records of a record file, and its first damage (see {@link checkRecordBytes}). */
function readRecords(bytes: Uint8Array): { records: Buffer[]; damage?: { offset: number; reason: string }; tornAt?: number } {
  const records: Buffer[] = [];
  let fragments: Buffer[] = [];
  let recordStart = 0;
  const done = (damage?: { offset: number; reason: string }) => (damage === undefined ? { records } : { records, damage });
  // The file ends inside the record that starts at `recordStart`.
  const torn = () => ({ records, tornAt: recordStart });
  const size = bytes.length;
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  let offset = 0;
  let inFragment = false;
  while (offset < size) {
    const blockLeft = BLOCK_SIZE - (offset % BLOCK_SIZE);
    if (blockLeft < HEADER_SIZE) {
      offset += blockLeft;
      continue;
    }
    if (offset + HEADER_SIZE > size) return torn();
    const length = view.getUint16(offset + 4, true);
    const type = bytes[offset + 6]!;
    if (type === 0 && length === 0) {
      // A zero-filled stretch (space a writer reserved): LevelDB skips the rest of the block.
      offset += blockLeft;
      continue;
    }
    if (HEADER_SIZE + length > blockLeft) {
      if (offset + HEADER_SIZE + length > size) return torn();
      return done({ offset, reason: `bad record length ${length}` });
    }
    if (offset + HEADER_SIZE + length > size) return torn();
    const expected = unmask(view.getUint32(offset, true));
    if (crc32c(bytes, offset + 6, offset + HEADER_SIZE + length) !== expected) return done({ offset, reason: "checksum mismatch" });
    if (!inFragment) recordStart = offset;
    if (type === RECORD_FULL || type === RECORD_FIRST) {
      if (inFragment) return done({ offset, reason: "a fragmented record without its end" });
      inFragment = type === RECORD_FIRST;
    } else if (type === RECORD_MIDDLE || type === RECORD_LAST) {
      if (!inFragment) return done({ offset, reason: "the middle or end of a record without its start" });
      inFragment = type === RECORD_MIDDLE;
    } else {
      return done({ offset, reason: `unknown record type ${type}` });
    }
    fragments.push(Buffer.from(bytes.subarray(offset + HEADER_SIZE, offset + HEADER_SIZE + length)));
    if (!inFragment) {
      records.push(Buffer.concat(fragments));
      fragments = [];
    }
    offset += HEADER_SIZE + length;
  }
  return inFragment ? torn() : done();
}

function readVarint(bytes: Uint8Array, at: number): { value: number; next: number } | undefined {
  let value = 0;
  let factor = 1;
  for (let index = at; index < bytes.length && index < at + 10; index += 1) {
    const byte = bytes[index]!;
    value += (byte & 0x7f) * factor;
    if ((byte & 0x80) === 0) return { value, next: index + 1 };
    factor *= 128;
  }
  return undefined;
}

interface BlockHandle {
  offset: number;
  size: number;
}

function readHandle(bytes: Uint8Array, at: number): { handle: BlockHandle; next: number } | undefined {
  const offset = readVarint(bytes, at);
  if (offset === undefined) return undefined;
  const size = readVarint(bytes, offset.next);
  if (size === undefined) return undefined;
  return { handle: { offset: offset.value, size: size.value }, next: size.next };
}

/** Reads one block and checks its trailer's checksum; returns its contents, or why it is bad. */
async function readBlock(file: Awaited<ReturnType<typeof open>>, fileSize: number, handle: BlockHandle): Promise<{ contents: Buffer; compressed: boolean } | string> {
  if (handle.offset + handle.size + BLOCK_TRAILER_SIZE > fileSize) return "a block reaches past the end of the file (truncated)";
  const buffer = Buffer.alloc(handle.size + BLOCK_TRAILER_SIZE);
  await file.read(buffer, 0, buffer.length, handle.offset);
  const expected = unmask(buffer.readUInt32LE(handle.size + 1));
  if (crc32c(buffer, 0, handle.size + 1) !== expected) return "block checksum mismatch";
  return { contents: buffer.subarray(0, handle.size), compressed: buffer[handle.size] !== 0 };
}

/** Why the block at `handle` of a table read whole is bad, if it is. */
function checkBlockBytes(table: Buffer, handle: BlockHandle): string | undefined {
  if (handle.offset + handle.size + BLOCK_TRAILER_SIZE > table.length) return "a block reaches past the end of the file (truncated)";
  const expected = unmask(table.readUInt32LE(handle.offset + handle.size + 1));
  return crc32c(table, handle.offset, handle.offset + handle.size + 1) === expected ? undefined : "block checksum mismatch";
}

/** The block handles an uncompressed index block lists (table_format.md: prefix-compressed entries, then restarts). */
function indexEntries(contents: Buffer): BlockHandle[] | undefined {
  if (contents.length < 4) return undefined;
  const restarts = contents.readUInt32LE(contents.length - 4);
  const end = contents.length - 4 * (restarts + 1);
  if (end < 0) return undefined;
  const handles: BlockHandle[] = [];
  let at = 0;
  while (at < end) {
    const shared = readVarint(contents, at);
    const unshared = shared && readVarint(contents, shared.next);
    const valueLength = unshared && readVarint(contents, unshared.next);
    if (valueLength === undefined || unshared === undefined) return undefined;
    const valueAt = valueLength.next + unshared.value;
    const handle = readHandle(contents, valueAt);
    if (handle === undefined) return undefined;
    handles.push(handle.handle);
    at = valueAt + valueLength.value;
  }
  return handles;
}

/** Checks a table: its footer, its index block, and (deep) each data block's checksum. */
async function checkTable(filePath: string, deep: boolean): Promise<{ offset?: number; reason: string } | undefined> {
  const file = await open(filePath, "r");
  try {
    const { size } = await file.stat();
    if (size < FOOTER_SIZE) return { offset: 0, reason: `${size} bytes is too short to be a table (truncated)` };
    const footer = Buffer.alloc(FOOTER_SIZE);
    await file.read(footer, 0, FOOTER_SIZE, size - FOOTER_SIZE);
    if (!footer.subarray(FOOTER_SIZE - 8).equals(TABLE_MAGIC)) return { offset: size - FOOTER_SIZE, reason: "no table footer at the end of the file (truncated, or not a table)" };
    const metaindex = readHandle(footer, 0);
    const index = metaindex && readHandle(footer, metaindex.next);
    if (index === undefined) return { offset: size - FOOTER_SIZE, reason: "the table footer is unreadable" };
    const block = await readBlock(file, size, index.handle);
    if (typeof block === "string") return { offset: index.handle.offset, reason: `index block: ${block}` };
    // The metaindex and the filter block it lists: a damaged filter would make LevelDB miss keys.
    const meta = await readBlock(file, size, metaindex!.handle);
    if (typeof meta === "string") return { offset: metaindex!.handle.offset, reason: `metaindex block: ${meta}` };
    for (const handle of meta.compressed ? [] : (indexEntries(meta.contents) ?? [])) {
      const filter = await readBlock(file, size, handle);
      if (typeof filter === "string") return { offset: handle.offset, reason: `filter block: ${filter}` };
    }
    if (!deep || block.compressed) return undefined;
    const handles = indexEntries(block.contents);
    if (handles === undefined) return { offset: index.handle.offset, reason: "the index block is unreadable" };
    // Deep: the whole table in one read, each data block checked in memory.
    const whole = Buffer.alloc(size);
    await file.read(whole, 0, size, 0);
    for (const handle of handles) {
      const reason = checkBlockBytes(whole, handle);
      if (reason !== undefined) return { offset: handle.offset, reason };
    }
    return undefined;
  } finally {
    await file.close();
  }
}

/** What a MANIFEST says of the files: the live tables, and the oldest write-ahead file still needed. */
interface ManifestFiles {
  tables: Set<number>;
  logNumber: number;
  prevLogNumber: number;
}

/** Replays a MANIFEST's version edits (leveldb/db/version_edit.cc); `undefined` when one is unreadable. */
function manifestFiles(records: readonly Buffer[]): ManifestFiles | undefined {
  const tables = new Set<number>();
  let logNumber = 0;
  let prevLogNumber = 0;
  for (const record of records) {
    let at = 0;
    const varint = () => {
      const read = readVarint(record, at);
      if (read === undefined) throw new RangeError("varint");
      at = read.next;
      return read.value;
    };
    const slice = () => {
      const length = varint();
      at += length;
      if (at > record.length) throw new RangeError("slice");
    };
    try {
      while (at < record.length) {
        const tag = varint();
        if (tag === 1) slice();
        else if (tag === 2) logNumber = varint();
        else if (tag === 3 || tag === 4) varint();
        else if (tag === 5) {
          varint();
          slice();
        } else if (tag === 6) {
          varint();
          tables.delete(varint());
        } else if (tag === 7) {
          varint();
          tables.add(varint());
          varint();
          slice();
          slice();
        } else if (tag === 9) prevLogNumber = varint();
        else return undefined;
      }
    } catch {
      return undefined;
    }
  }
  return { tables, logNumber, prevLogNumber };
}

/** Numbered files in LevelDB's order (the order it wrote them). */
function byNumber(names: string[]): string[] {
  return names.sort((a, b) => Number(/\d+/.exec(a)?.[0] ?? 0) - Number(/\d+/.exec(b)?.[0] ?? 0));
}

/**
 * The first file of the LevelDB directory LevelDB cannot read whole — the `CURRENT` pointer, the
 * `MANIFEST` it names, a write-ahead `.log`, a table (`.ldb`/`.sst`) — or `undefined` when each
 * one reads. A directory with no `CURRENT` holds no database yet and is not checked.
 *
 * @example
 * const damage = await findDamagedFile(".turnlog", { deep: true });
 * if (damage) console.error(`${damage.file} at byte ${damage.offset}: ${damage.reason}`);
 */
export async function findDamagedFile(directory: string, options: FileCheckOptions = {}): Promise<LevelFileDamage | undefined> {
  const names = await readdir(directory);
  if (!names.includes("CURRENT")) return undefined;
  const current = (await readFile(path.join(directory, "CURRENT"), "utf8"));
  const manifest = /^(MANIFEST-\d+)\n$/.exec(current)?.[1];
  if (manifest === undefined) return { file: "CURRENT", reason: "it does not name a MANIFEST file" };
  if (!names.includes(manifest)) return { file: manifest, reason: "the MANIFEST that CURRENT names is missing" };
  const manifestRecords = readRecords(await readFile(path.join(directory, manifest)));
  if (manifestRecords.damage !== undefined) return { file: manifest, ...manifestRecords.damage };
  if (manifestRecords.tornAt !== undefined) {
    // LevelDB writes each version edit in one write and syncs it, so a torn edit is a file cut
    // short, not an interrupted append; and dropping it (as LevelDB's recovery would) makes
    // LevelDB delete the tables that edit added, with every event in them.
    return { file: manifest, offset: manifestRecords.tornAt, reason: "it ends inside a version edit (cut short): LevelDB would drop the edit and delete the tables it added" };
  }
  const files = manifestFiles(manifestRecords.records);
  if (files === undefined || manifestRecords.records.length === 0) return { file: manifest, offset: 0, reason: "its version edits are unreadable or missing (truncated)" };
  const numberOf = (name: string) => Number(/^\d+/.exec(name)?.[0]);
  // Only the files LevelDB will read: write-ahead files not yet turned into tables, and live tables
  // (a table a compaction is still writing, or one it has replaced, is not read, and may be partial).
  const logs = names.filter((name) => /^\d+\.log$/.test(name) && (numberOf(name) >= files.logNumber || numberOf(name) === files.prevLogNumber));
  for (const name of byNumber(logs)) {
    const damage = checkRecordBytes(await readFile(path.join(directory, name)));
    if (damage !== undefined) return { file: name, ...damage };
  }
  for (const name of byNumber(names.filter((name) => /^\d+\.(ldb|sst)$/.test(name) && files.tables.has(numberOf(name))))) {
    const damage = await checkTable(path.join(directory, name), options.deep === true);
    if (damage !== undefined) return { file: name, ...damage };
  }
  return undefined;
}

/** One line for a damaged file: `000005.log at byte 196608: checksum mismatch`. */
export function describeDamage(damage: LevelFileDamage): string {
  return `${damage.file}${damage.offset !== undefined ? ` at byte ${damage.offset}` : ""}: ${damage.reason}`;
}

/** The file a LevelDB error message names (`…/000005.ldb`, `…/MANIFEST-000004`), if it names one. */
export function fileNamedIn(message: string): string | undefined {
  return /(\d{6}\.(?:ldb|sst|log)|MANIFEST-\d{6}|CURRENT)\b/.exec(message)?.[1];
}
