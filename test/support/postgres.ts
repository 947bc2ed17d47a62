/**
 * The PostgreSQL server the tests run against (started by test/support/postgres-global-setup.ts),
 * and fresh schemas on it: every test gets a schema of its own, so tests never see each other's
 * events and can run in parallel on one server.
 */
import { randomBytes } from "node:crypto";
import pg from "pg";
import { afterEach, describe, inject } from "vitest";
import { PostgresEventLog } from "../../src/log/postgres/postgres-event-log.js";
import type { PostgresEventLogOptions } from "../../src/log/postgres/postgres-event-log.js";

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

/** What {@link postgresFixtures} gives a test file: logs, schemas and clients cleaned up after each test. */
export interface PostgresFixtures {
  /** A log on `schema` of the test server (a small pool, quick polling), closed after the test. */
  open(schema: string, options?: PostgresEventLogOptions): Promise<PostgresEventLog>;
  /** A schema of its own for this test, dropped after it (after its logs are closed). */
  schema(label: string): string;
  /** A plain connection to the test server (to look at or tamper with tables), ended after the test. */
  client(applicationName?: string): Promise<pg.Client>;
  /** Runs `cleanup` after the test, before the schemas are dropped. */
  defer(cleanup: () => Promise<unknown>): void;
}

/**
 * Registers an `afterEach` that closes the logs and clients a test opened and drops its schemas.
 * Call once per `describe`.
 */
export function postgresFixtures(): PostgresFixtures {
  const cleanups: Array<() => Promise<unknown>> = [];
  const schemas: string[] = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
    for (const schema of schemas.splice(0)) await dropSchema(schema);
  });
  return {
    async open(schema, options = {}) {
      const log = await PostgresEventLog.open(requirePostgresUrl(), { schema, poolSize: 4, pollIntervalMs: 200, ...options });
      cleanups.push(() => log.close());
      return log;
    },
    schema(label) {
      const schema = freshSchemaName(label);
      schemas.push(schema);
      return schema;
    },
    async client(applicationName) {
      const client = new pg.Client({ connectionString: requirePostgresUrl(), ...(applicationName === undefined ? {} : { application_name: applicationName }) });
      await client.connect();
      cleanups.push(() => client.end());
      return client;
    },
    defer(cleanup) {
      cleanups.push(cleanup);
    },
  };
}
