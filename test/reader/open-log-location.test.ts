/**
 * Opening a log by where it is: `openLog({ url, schema })` and `createRuntime`'s default log under
 * `$TURNLOG_LOG`, against the test server.
 */
import pg from "pg";
import { afterAll, expect, it } from "vitest";
import { LogClosedError, LogNotFoundError, openLog, PostgresEventLog } from "../../src/index.js";
import { createRuntime } from "../../src/runtime/create-runtime.js";
import { scriptedProvider } from "../../src/testing/index.js";
import { describeWithPostgres, dropSchema, freshSchemaName, requirePostgresUrl } from "../support/postgres.js";

describeWithPostgres("a PostgreSQL log opened by location", () => {
  const schemas: string[] = [];
  const schema = (label: string) => {
    const name = freshSchemaName(label);
    schemas.push(name);
    return name;
  };
  afterAll(async () => {
    for (const name of schemas) await dropSchema(name);
  });

  /** Runs `work` with `$TURNLOG_LOG` and `$TURNLOG_SCHEMA` set, restoring them afterwards. */
  async function withEnvironment<T>(values: Record<string, string>, work: () => Promise<T>): Promise<T> {
    const previous = Object.fromEntries(Object.keys(values).map((key) => [key, process.env[key]]));
    Object.assign(process.env, values);
    try {
      return await work();
    } finally {
      for (const [key, value] of Object.entries(previous)) {
        if (value === undefined) delete process.env[key];
        else process.env[key] = value;
      }
    }
  }

  it("createRuntime's default log is the PostgreSQL schema $TURNLOG_LOG and $TURNLOG_SCHEMA name, and runtime.close() closes it", async () => {
    const url = requirePostgresUrl();
    const named = schema("runtime");
    const runtime = await withEnvironment({ TURNLOG_LOG: url, TURNLOG_SCHEMA: named }, () => createRuntime({ provider: scriptedProvider([{ content: "hello from postgres" }]) }));
    expect(runtime.log).toBeInstanceOf(PostgresEventLog);
    const session = await runtime.openSession("s1");
    expect((await session.send("hi")).status).toBe("completed");
    await runtime.close();
    await expect(runtime.log.listStreams()).rejects.toSatisfy((error: unknown) => LogClosedError.isInstance(error));

    // Another handle on the same schema sees the session.
    const reader = await openLog({ url, schema: named });
    try {
      expect((await reader.sessions()).map((row) => [row.id, row.status])).toEqual([["s1", "completed"]]);
      expect((await reader.state("s1")).lastOutcome?.text).toBe("hello from postgres");
    } finally {
      await reader.close();
    }
  });

  it("openLog({ url, schema }) refuses a schema without a log (LogNotFoundError) and creates nothing; create: true makes one", async () => {
    const url = requirePostgresUrl();
    const missing = schema("reader");
    await expect(openLog({ url, schema: missing })).rejects.toSatisfy((error: unknown) => LogNotFoundError.isInstance(error) && String((error as Error).message).includes(missing));
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    try {
      expect((await client.query("SELECT 1 FROM information_schema.schemata WHERE schema_name = $1", [missing])).rows).toHaveLength(0);
    } finally {
      await client.end();
    }
    const created = await openLog({ url, schema: missing, create: true });
    try {
      expect(await created.sessions()).toEqual([]);
    } finally {
      await created.close();
    }
  });
});
