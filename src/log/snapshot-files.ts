import { createHash, randomBytes } from "node:crypto";
import { mkdir, readdir, readFile, rename, rm, unlink, writeFile } from "node:fs/promises";
import path from "node:path";
import { BackgroundWrites, type SnapshotStore } from "./snapshot-store.js";

/**
 * Snapshots as files in a directory of their own — for a `LevelEventLog`, `snapshots/` inside the
 * log's directory (docs/design.md#5-projections says why not in the LevelDB itself):
 *
 *     snapshots/chunks/<sha-256>                          a chunk, named by its bytes' digest
 *     snapshots/streams/<sha-256 of the stream>/<position>  a record (position zero-padded)
 *
 * Each file is written to a temporary name and renamed: a reader sees a whole file or none, and a
 * crash leaves at most a `.tmp` file, which is never read (`clear` removes it). No fsync: a
 * snapshot is a cache, checked before it is used, and a file a power loss empties is ignored like
 * any damaged one — so writing one never waits on, or competes with, the log's fsyncs.
 *
 * @example
 * const store = new FileSnapshotStore(path.join(logDirectory, "snapshots"));
 */
export class FileSnapshotStore extends BackgroundWrites implements SnapshotStore {
  readonly #chunks: string;
  readonly #streams: string;
  /** Directories known to exist (made once each). */
  readonly #made = new Set<string>();

  constructor(readonly directory: string) {
    super();
    this.#chunks = path.join(directory, "chunks");
    this.#streams = path.join(directory, "streams");
  }

  async putChunk(digest: string, bytes: Uint8Array): Promise<void> {
    assertDigest(digest);
    await this.#write(this.#chunks, digest, bytes);
  }

  async getChunk(digest: string): Promise<Uint8Array | undefined> {
    assertDigest(digest);
    return readOrUndefined(path.join(this.#chunks, digest));
  }

  async putRecord(stream: string, position: number, bytes: Uint8Array): Promise<void> {
    await this.#write(this.#streamDirectory(stream), recordName(position), bytes);
  }

  async getRecord(stream: string, position: number): Promise<Uint8Array | undefined> {
    return readOrUndefined(path.join(this.#streamDirectory(stream), recordName(position)));
  }

  async positions(stream: string): Promise<number[]> {
    let names: string[];
    try {
      names = await readdir(this.#streamDirectory(stream));
    } catch {
      return [];
    }
    return names
      .filter((name) => /^\d{16}$/.test(name))
      .map(Number)
      .sort((a, b) => a - b);
  }

  async deleteRecord(stream: string, position: number): Promise<void> {
    await unlink(path.join(this.#streamDirectory(stream), recordName(position))).catch(() => undefined);
  }

  async clear(): Promise<void> {
    await rm(this.directory, { recursive: true, force: true });
    this.#made.clear();
  }

  #streamDirectory(stream: string): string {
    // Hashed: a stream name may hold any character and be longer than a file name may be.
    return path.join(this.#streams, createHash("sha256").update(stream).digest("hex"));
  }

  async #write(directory: string, name: string, bytes: Uint8Array): Promise<void> {
    if (this.closed) return;
    if (!this.#made.has(directory)) {
      // The snapshot directory is made inside an existing one only: a log directory removed under
      // a write in flight is not made again by it.
      await mkdir(this.directory).catch((error: NodeJS.ErrnoException) => {
        if (error.code !== "EEXIST") throw error;
      });
      await mkdir(directory, { recursive: true });
      this.#made.add(directory);
    }
    const temporary = path.join(directory, `${name}.${randomBytes(6).toString("hex")}.tmp`);
    try {
      await writeFile(temporary, bytes);
      await rename(temporary, path.join(directory, name));
    } catch (error) {
      await unlink(temporary).catch(() => undefined);
      // The directory was removed under the store (`clear`, a person): made again next time.
      this.#made.delete(directory);
      throw error;
    }
  }
}

function recordName(position: number): string {
  if (!Number.isSafeInteger(position) || position < 1) throw new TypeError(`snapshot position must be a stream position ≥ 1 (got ${String(position)})`);
  return String(position).padStart(16, "0");
}

function assertDigest(digest: string): void {
  if (!/^[0-9a-f]{64}$/.test(digest)) throw new TypeError(`a chunk is named by a SHA-256 digest in hex (got ${JSON.stringify(digest)})`);
}

async function readOrUndefined(file: string): Promise<Uint8Array | undefined> {
  try {
    return await readFile(file);
  } catch {
    return undefined;
  }
}
