/**
 * A PostgreSQL log that cannot be reached or used — a refused port, a missing database, an
 * unknown role, a missing privilege, a wrong password, a server stopped mid-session — fails with
 * one typed error, `LogUnavailableError` (TURNLOG_LOG_UNAVAILABLE), that names the server without
 * the password and keeps the driver's error as its cause; the CLI prints it as one line with its
 * code. Against real servers: the suites' own, and one of this file's that checks passwords.
 */
import { createServer } from "node:net";
import { inspect } from "node:util";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCli } from "../../src/cli/run-cli.js";
import { LogUnavailableError } from "../../src/errors/log-unavailable-error.js";
import { TurnlogError } from "../../src/errors/turnlog-error.js";
import { migratePostgres, PostgresEventLog } from "../../src/index.js";
// @ts-expect-error: a plain ES module script without types (scripts/ is not compiled).
import { startPostgres } from "../../scripts/postgres-server.mjs";
import { describeWithPostgres, postgresFixtures, requirePostgresUrl } from "../support/postgres.js";

/** Passwords no message, rendering or CLI output may ever show. */
const urlPassword = "Url-unmistakable-9f3Q";
const environmentPassword = "Env-unmistakable-4kZw";

/** A loopback port nothing listens on: bound, then closed. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  if (address === null || typeof address === "string") throw new Error("no port");
  return address.port;
}

function withUrl(url: string, change: (parsed: URL) => void): string {
  const parsed = new URL(url);
  change(parsed);
  return parsed.toString();
}

/** What `work` rejected with (it must reject). */
async function rejection(work: Promise<unknown>): Promise<unknown> {
  return work.then(
    (value) => {
      throw new Error(`expected a rejection, got ${inspect(value, { depth: 0 })}`);
    },
    (error: unknown) => error,
  );
}

/**
 * Checks the typed error: its code and actor, the fields given, the message's words, and that
 * neither password is in the message nor anywhere in its rendering with its cause chain.
 */
function expectUnavailable(error: unknown, expected: Partial<Pick<LogUnavailableError, "kind" | "operation" | "location" | "sqlState" | "condition" | "errno">>, words: string[]): LogUnavailableError {
  expect(LogUnavailableError.isInstance(error), inspect(error)).toBe(true);
  const typed = error as LogUnavailableError;
  expect(TurnlogError.isTurnlogError(typed)).toBe(true);
  expect({ code: typed.code, actor: typed.actor }).toEqual({ code: "TURNLOG_LOG_UNAVAILABLE", actor: "log" });
  expect(typed).toMatchObject(expected);
  for (const word of words) expect(typed.message).toContain(word);
  expect(typed.cause, "the driver's error is kept").toBeInstanceOf(Error);
  const rendering = `${inspect(typed, { depth: Infinity })}\n${String(typed.stack)}\n${JSON.stringify(typed)}`;
  for (const password of [urlPassword, environmentPassword]) expect(rendering).not.toContain(password);
  return typed;
}

/** Runs the CLI in this process, as a user's shell would with `env`. */
async function cli(argv: string[], env: NodeJS.ProcessEnv = {}): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = "";
  let stderr = "";
  // node-postgres reads PGPASSWORD from the process's environment, not from the CLI's `env`.
  const saved = process.env.PGPASSWORD;
  if (env.PGPASSWORD === undefined) delete process.env.PGPASSWORD;
  else process.env.PGPASSWORD = env.PGPASSWORD;
  try {
    const code = await runCli(argv, {
      stdout: { write: (text: string) => (stdout += text) },
      stderr: { write: (text: string) => (stderr += text) },
      env: { ...process.env, TURNLOG_LOG: undefined, TURNLOG_SCHEMA: undefined, ...env },
    });
    return { code, stdout, stderr };
  } finally {
    if (saved === undefined) delete process.env.PGPASSWORD;
    else process.env.PGPASSWORD = saved;
  }
}

/** A CLI failure for an unavailable log: one line with the code, exit 1, no password anywhere. */
function expectOneLineWithCode(run: { code: number; stdout: string; stderr: string }, words: string[]): void {
  expect(run.code, run.stderr).toBe(1);
  expect(run.stderr.trimEnd().split("\n"), run.stderr).toHaveLength(1);
  expect(run.stderr).toMatch(/^turnlog: cannot open the log at .* \[TURNLOG_LOG_UNAVAILABLE\]\n$/);
  for (const word of words) expect(run.stderr).toContain(word);
  for (const password of [urlPassword, environmentPassword]) expect(run.stdout + run.stderr).not.toContain(password);
}

describeWithPostgres("a PostgreSQL log that cannot be reached or used", () => {
  const fixtures = postgresFixtures();

  it("a port nothing listens on: unreachable (ECONNREFUSED), naming host:port/database and never the URL's password", async () => {
    const port = await closedPort();
    const url = `postgres://turnlog:${urlPassword}@127.0.0.1:${port}/agents`;
    const error = await rejection(PostgresEventLog.open(url));
    const typed = expectUnavailable(error, { kind: "unreachable", operation: "open", errno: "ECONNREFUSED", sqlState: undefined }, [
      `cannot open the log at postgres://turnlog@127.0.0.1:${port}/agents (schema turnlog)`,
      "the server cannot be reached",
      "ECONNREFUSED",
    ]);
    expect((typed.cause as { code?: string }).code).toBe("ECONNREFUSED");
    expect(typed.location).toBe(`postgres://turnlog@127.0.0.1:${port}/agents (schema turnlog)`);
  });

  it("a pg.Pool of the host's that cannot connect: the same error, naming the pool's host:port/database and never its password", async () => {
    const port = await closedPort();
    const pool = new pg.Pool({ host: "127.0.0.1", port, database: "agents", user: "ada", password: urlPassword, max: 1 });
    fixtures.defer(() => pool.end());
    const error = await rejection(PostgresEventLog.open(pool, { schema: "team_a" }));
    expectUnavailable(error, { kind: "unreachable", operation: "open", location: `postgres://ada@127.0.0.1:${port}/agents (schema team_a)` }, ["cannot open the log at postgres://ada@127.0.0.1"]);
  });

  it("a database that does not exist: no-database, with SQLSTATE 3D000 and its meaning", async () => {
    const url = withUrl(requirePostgresUrl(), (parsed) => {
      parsed.password = urlPassword;
      parsed.pathname = "/no_such_database";
    });
    const error = await rejection(PostgresEventLog.open(url, { schema: fixtures.schema("nodb") }));
    expectUnavailable(error, { kind: "no-database", sqlState: "3D000", condition: "invalid_catalog_name" }, [
      "the database does not exist",
      'database "no_such_database" does not exist',
      "(SQLSTATE 3D000 invalid_catalog_name)",
    ]);
  });

  it("a role the server does not know: authentication, SQLSTATE 28000", async () => {
    const url = withUrl(requirePostgresUrl(), (parsed) => {
      parsed.username = "no_such_role";
      parsed.password = urlPassword;
    });
    const error = await rejection(PostgresEventLog.open(url, { schema: fixtures.schema("norole"), migrate: false }));
    expectUnavailable(error, { kind: "authentication", sqlState: "28000", condition: "invalid_authorization_specification" }, [
      `postgres://no_such_role@`,
      "the server refused the login",
      'role "no_such_role" does not exist',
    ]);
  });

  it("a role without the privileges the log needs: permission-denied (42501), on open, on migrate, and with migrate: false", async () => {
    const role = `t_reader_${Math.random().toString(36).slice(2, 10)}`;
    const admin = await fixtures.client();
    await admin.query(`CREATE ROLE ${pg.escapeIdentifier(role)} LOGIN`);
    fixtures.defer(() => admin.query(`DROP ROLE IF EXISTS ${pg.escapeIdentifier(role)}`));
    const schema = fixtures.schema("denied");
    await fixtures.open(schema);
    const asRole = withUrl(requirePostgresUrl(), (parsed) => {
      parsed.username = role;
      parsed.password = urlPassword;
    });

    const creating = await rejection(PostgresEventLog.open(asRole, { schema: fixtures.schema("create") }));
    expectUnavailable(creating, { kind: "permission-denied", operation: "open", sqlState: "42501", condition: "insufficient_privilege" }, ["the role lacks a privilege the log needs", "permission denied"]);

    const reading = await rejection(PostgresEventLog.open(asRole, { schema, migrate: false }));
    expectUnavailable(reading, { kind: "permission-denied", sqlState: "42501" }, [`permission denied for schema ${schema}`]);

    const pool = new pg.Pool({ connectionString: asRole, max: 1 });
    fixtures.defer(() => pool.end());
    const migrating = await rejection(migratePostgres(pool, fixtures.schema("migrate")));
    expectUnavailable(migrating, { kind: "permission-denied", operation: "migrate" }, [`cannot migrate the log at postgres://${role}@`]);
  });

  it("the CLI prints one line with the code and exits 1, without the password, for a refused port and a missing database", async () => {
    const port = await closedPort();
    const refused = await cli(["sessions", "--log", `postgres://turnlog:${urlPassword}@127.0.0.1:${port}/postgres`]);
    expectOneLineWithCode(refused, [`postgres://turnlog@127.0.0.1:${port}/postgres (schema turnlog)`, "ECONNREFUSED"]);

    const missing = withUrl(requirePostgresUrl(), (parsed) => {
      parsed.password = urlPassword;
      parsed.pathname = "/no_such_database";
    });
    const debug = await cli(["sessions", "--log", missing], { TURNLOG_DEBUG: "1", PGPASSWORD: environmentPassword });
    expect(debug.code).toBe(1);
    expect(debug.stderr).toContain("(SQLSTATE 3D000 invalid_catalog_name) [TURNLOG_LOG_UNAVAILABLE]");
    for (const password of [urlPassword, environmentPassword]) expect(debug.stderr).not.toContain(password);

    const migrate = await cli(["migrate", "--log", missing]);
    expect(migrate.code).toBe(1);
    expect(migrate.stderr).toMatch(/^turnlog: cannot migrate the log at .*no_such_database.* \[TURNLOG_LOG_UNAVAILABLE\]\n$/);
    expect(migrate.stderr).not.toContain(urlPassword);
  });

  describe("on a server that checks passwords", () => {
    const password = "Right-password-7Hx2";
    let server: { url: string; stop(): void } | undefined;
    beforeAll(async () => {
      server = (await startPostgres({ fast: true, password })) as { url: string; stop(): void };
    }, 120_000);
    afterAll(() => server?.stop());
    const serverUrl = () => {
      if (server === undefined) throw new Error("the password server did not start");
      return server.url;
    };

    it("a wrong password in the URL or in PGPASSWORD: authentication (28P01); neither password is printed, by the log or by the CLI", async () => {
      const wrongInUrl = withUrl(serverUrl(), (parsed) => {
        parsed.password = urlPassword;
      });
      const fromUrl = await rejection(PostgresEventLog.open(wrongInUrl));
      expectUnavailable(fromUrl, { kind: "authentication", sqlState: "28P01", condition: "invalid_password" }, [
        `cannot open the log at ${serverUrl()} (schema turnlog)`,
        'password authentication failed for user "turnlog"',
        "(SQLSTATE 28P01 invalid_password)",
      ]);

      const saved = process.env.PGPASSWORD;
      process.env.PGPASSWORD = environmentPassword;
      try {
        const fromEnvironment = await rejection(PostgresEventLog.open(serverUrl()));
        expectUnavailable(fromEnvironment, { kind: "authentication", sqlState: "28P01" }, ["password authentication failed"]);
      } finally {
        if (saved === undefined) delete process.env.PGPASSWORD;
        else process.env.PGPASSWORD = saved;
      }

      const cliUrl = await cli(["sessions", "--log", wrongInUrl]);
      expectOneLineWithCode(cliUrl, ["(SQLSTATE 28P01 invalid_password)"]);
      const cliEnvironment = await cli(["events", "s1", "--log", serverUrl()], { PGPASSWORD: environmentPassword, TURNLOG_DEBUG: "1" });
      expect(cliEnvironment.code).toBe(1);
      expect(cliEnvironment.stderr).toContain("[TURNLOG_LOG_UNAVAILABLE]");
      expect(cliEnvironment.stderr).not.toContain(environmentPassword);

      // The right password opens it: what failed was the password, nothing else.
      const right = await PostgresEventLog.open(withUrl(serverUrl(), (parsed) => (parsed.password = password)));
      await right.close();
    });

    // Stops this describe's server: it stays the last test of the file.
    it("a server stopped mid-session: the next append and read reject with LogUnavailableError, and close() still ends the log", async () => {
      const log = await PostgresEventLog.open(withUrl(serverUrl(), (parsed) => (parsed.password = password)), { poolSize: 2 });
      await log.appendToStream("s1", [{ type: "test.appended", data: {} }]);
      server?.stop();
      server = undefined;
      const append = await rejection(log.appendToStream("s1", [{ type: "test.appended", data: {} }]));
      const typed = expectUnavailable(append, { operation: "appendToStream" }, ["became unavailable during appendToStream"]);
      expect(["unreachable", "terminated"]).toContain(typed.kind);
      const read = await rejection(log.readStream("s1"));
      expectUnavailable(read, { operation: "readStream" }, []);
      await log.close();
    });
  });
});
