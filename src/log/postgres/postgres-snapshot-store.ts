import type { PostgresPool } from "./postgres-pool.js";
import { BackgroundWrites, type SnapshotStore } from "../snapshot-store.js";

/**
 * Snapshots of a `PostgresEventLog`, in two tables of its schema (migration 2,
 * src/log/postgres/postgres-migrations.ts): `snapshot_chunks` (a chunk by its digest) and
 * `snapshots` (a record by stream and position). Both are UNLOGGED: a cache costs no WAL, and a
 * server crash empties them rather than leave anything half-written (docs/design.md#5-projections).
 *
 * @example
 * const store = new PostgresSnapshotStore(log.pool, '"turnlog"');
 */
export class PostgresSnapshotStore extends BackgroundWrites implements SnapshotStore {
  /**
   * @param pool the log's pool
   * @param s the log's schema, already quoted as an identifier
   */
  constructor(
    private readonly pool: PostgresPool,
    private readonly s: string,
  ) {
    super();
  }

  async putChunk(digest: string, bytes: Uint8Array): Promise<void> {
    if (this.closed) return;
    await this.pool.query(`INSERT INTO ${this.s}.snapshot_chunks (digest, body) VALUES ($1, $2) ON CONFLICT (digest) DO NOTHING`, [digest, Buffer.from(bytes)]);
  }

  async getChunk(digest: string): Promise<Uint8Array | undefined> {
    const { rows } = await this.pool.query<{ body: Buffer }>(`SELECT body FROM ${this.s}.snapshot_chunks WHERE digest = $1`, [digest]);
    return rows[0]?.body;
  }

  async putRecord(stream: string, position: number, bytes: Uint8Array): Promise<void> {
    if (this.closed) return;
    await this.pool.query(
      `INSERT INTO ${this.s}.snapshots (stream_id, stream_position, body) VALUES ($1, $2, $3)
       ON CONFLICT (stream_id, stream_position) DO UPDATE SET body = excluded.body`,
      [stream, position, Buffer.from(bytes)],
    );
  }

  async getRecord(stream: string, position: number): Promise<Uint8Array | undefined> {
    const { rows } = await this.pool.query<{ body: Buffer }>(`SELECT body FROM ${this.s}.snapshots WHERE stream_id = $1 AND stream_position = $2`, [stream, position]);
    return rows[0]?.body;
  }

  async positions(stream: string): Promise<number[]> {
    const { rows } = await this.pool.query<{ stream_position: string }>(`SELECT stream_position FROM ${this.s}.snapshots WHERE stream_id = $1 ORDER BY stream_position`, [stream]);
    return rows.map((row) => Number(row.stream_position));
  }

  async deleteRecord(stream: string, position: number): Promise<void> {
    await this.pool.query(`DELETE FROM ${this.s}.snapshots WHERE stream_id = $1 AND stream_position = $2`, [stream, position]);
  }

  async clear(): Promise<void> {
    await this.pool.query(`TRUNCATE ${this.s}.snapshots, ${this.s}.snapshot_chunks`);
  }
}
