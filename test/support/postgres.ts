/**
 * The PostgreSQL server the tests run against (started by test/support/postgres-global-setup.ts),
 * and fresh schemas on it: every test gets a schema of its own, so tests never see each other's
 * events and can run in parallel on one server.
 */
import { randomBytes } from "node:crypto";
import pg from "pg";
import { describe, inject } from "vitest";

/** The test server's URL, or undefined when the PostgreSQL suites do not run on this machine. */
export const postgresUrl: string | undefined = inject("turnlogPostgresUrl");

/** `describe` that runs only when there is a test server (the global setup said loudly when not). */
export const describeWithPostgres = postgresUrl === undefined ? describe.skip : describe;

/** The test server's URL; throws when there is none (for code that runs only under describeWithPostgres). */
export function requirePostgresUrl(): string {
  if (postgresUrl === undefined) throw new Error("no PostgreSQL test server");
  return postgresUrl;
}

/** A schema name no other test uses: `t_<label>_<random>`. */
export function freshSchemaName(label = "log"): string {
  return `t_${label.replace(/[^a-z0-9_]/gi, "_").toLowerCase().slice(0, 20)}_${randomBytes(6).toString("hex")}`;
}

/** Drops a schema and everything in it (a test's clean-up). */
export async function dropSchema(schema: string): Promise<void> {
  const client = new pg.Client({ connectionString: requirePostgresUrl() });
  await client.connect();
  try {
    await client.query(`DROP SCHEMA IF EXISTS ${pg.escapeIdentifier(schema)} CASCADE`);
  } finally {
    await client.end();
  }
}
