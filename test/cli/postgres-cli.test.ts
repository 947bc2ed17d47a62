/**
 * The CLI on a PostgreSQL log (`--log postgres://…`, `$TURNLOG_LOG`), against the test server,
 * while a real host process writes to the same schema. The commands run in-process (runCli with the
 * environment given as its `env`); `events --follow`, stopped with Ctrl-C, runs the built bin.
 */
import { spawn, type ChildProcessWithoutNullStreams } from "node:child_process";
import { readdir, readFile, mkdtemp, rm } from "node:fs/promises";
import { createServer } from "node:net";
import os from "node:os";
import path from "node:path";
import pg from "pg";
import { afterAll, beforeAll, expect, it } from "vitest";
import { PostgresEventLog } from "../../src/log/postgres/postgres-event-log.js";
import { sessionStream } from "../../src/core/session-stream.js";
import { describeWithPostgres, dropSchema, freshSchemaName, requirePostgresUrl } from "../support/postgres.js";
import { expectOneCleanLine } from "./support/demo-fixture.js";
import { ensureBuiltCli, repoRoot } from "./support/turnlog-bin.js";
import { runTurnlogInProcess } from "./support/turnlog-in-process.js";

/** A password no output may ever show. */
const password = "Zq7-unmistakable-Pw";

/** The test server's URL with `password` in it (the server trusts loopback, so it is not checked). */
function urlWithPassword(url: string): string {
  const parsed = new URL(url);
  parsed.password = password;
  return parsed.toString();
}

/** A host writing sessions to the schema until its standard input is closed. */
function startHost(url: string, schema: string) {
  const child: ChildProcessWithoutNullStreams = spawn(process.execPath, ["--import", "tsx", path.join(repoRoot, "test/cli/support/postgres-host-child.ts"), url, schema], { cwd: repoRoot });
  let stdout = "";
  let stderr = "";
  const waiters: { count: number; resolve: () => void }[] = [];
  const completed = () => (stdout.match(/^completed host-\d+$/gm) ?? []).length;
  child.stdout.on("data", (chunk: Buffer) => {
    stdout += chunk.toString();
    for (const waiter of [...waiters]) {
      if (completed() < waiter.count) continue;
      waiters.splice(waiters.indexOf(waiter), 1);
      waiter.resolve();
    }
  });
  child.stderr.on("data", (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)));
  return {
    exited,
    completed,
    get running() {
      return child.exitCode === null && child.signalCode === null;
    },
    /** Resolves once the host has completed `count` sessions (the test's own time limit applies). */
    waitForSessions(count: number): Promise<void> {
      return new Promise((resolve, reject) => {
        waiters.push({ count, resolve });
        exited.then((code) => reject(new Error(`the host exited (${code}) first; stderr: ${stderr}`)));
        if (completed() >= count) resolve();
      });
    },
    async stop(): Promise<number | null> {
      child.stdin.end();
      return exited;
    },
  };
}

/** A loopback port nothing listens on. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  if (address === null || typeof address === "string") throw new Error("no port");
  return address.port;
}

describeWithPostgres("the CLI on a PostgreSQL log", () => {
  let url = "";
  let workDir = "";
  const schemas: string[] = [];
  const schema = (label: string) => {
    const name = freshSchemaName(label);
    schemas.push(name);
    return name;
  };
  const turnlog = (args: string[], env: Record<string, string | undefined> = {}) => runTurnlogInProcess(args, { cwd: workDir, env: { TURNLOG_LOG: undefined, TURNLOG_SCHEMA: undefined, PGPASSWORD: undefined, ...env } });

  beforeAll(async () => {
    url = requirePostgresUrl();
    workDir = await mkdtemp(path.join(os.tmpdir(), "turnlog-pg-cli-"));
    await ensureBuiltCli();
  }, 120_000);
  afterAll(async () => {
    for (const name of schemas) await dropSchema(name);
    if (workDir !== "") await rm(workDir, { recursive: true, force: true });
  });

  it("sessions, show, audit, replay, verify, events and history read the log while a host process keeps writing to it", async () => {
    const live = schema("live");
    const host = startHost(url, live);
    try {
      await host.waitForSessions(2);
      const log = ["--log", url, "--schema", live];

      const sessions = await turnlog(["sessions", ...log, "--json"]);
      expect(sessions.stderr).toBe("");
      expect(sessions.code).toBe(0);
      const rows = JSON.parse(sessions.stdout) as { id: string; status: string }[];
      expect(rows.find((row) => row.id === "host-0")?.status).toBe("completed");
      expect(rows.find((row) => row.id === "host-1")?.status).toBe("completed");

      const show = await turnlog(["show", "host-1", ...log]);
      expect(show.code).toBe(0);
      expect(show.stdout).toContain("lookup");
      expect(show.stdout).toContain("answer 1");

      const audit = await turnlog(["audit", "host-0", ...log, "--json"]);
      expect(audit.code).toBe(0);
      expect(JSON.parse(audit.stdout)).toMatchObject([{ callId: "call_lookup_0", tool: "lookup", decision: "allow", outcome: "succeeded" }]);

      const replay = await turnlog(["replay", "host-0", ...log]);
      expect(replay.stdout).toContain("identical");
      expect(replay.code).toBe(0);

      const events = await turnlog(["events", "host-1", ...log, "--json"]);
      expect(events.code).toBe(0);
      expect((JSON.parse(events.stdout) as { type: string }[]).map((event) => event.type)).toContain("turn.tool.succeeded");

      const history = await turnlog(["history", "host-1", "--format", "openai-chat", ...log, "--json"]);
      expect(history.code).toBe(0);
      expect(JSON.stringify(JSON.parse(history.stdout).messages)).toContain("word1: a word");

      const verify = await turnlog(["verify", ...log, "--json"]);
      expect(verify.stderr).toBe("");
      expect(verify.code).toBe(0);
      expect(JSON.parse(verify.stdout)).toMatchObject({ ok: true });

      // The host wrote throughout: nothing above kept it out of the log, and no copy was read.
      expect(host.running).toBe(true);
      for (const run of [sessions, show, audit, replay, events, history, verify]) expect(run.stderr).not.toContain("copy");
    } finally {
      expect(await host.stop()).toBe(0);
    }
    // Everything the host wrote is there, each session complete.
    const after = await turnlog(["sessions", "--log", url, "--schema", live, "--json"]);
    const rows = JSON.parse(after.stdout) as { id: string; status: string }[];
    expect(rows.length).toBe(host.completed());
    expect(rows.every((row) => row.status === "completed")).toBe(true);
    // A guard against a hang only: the host is a tsx process, seconds to start on a loaded machine.
  }, 180_000);

  it("$TURNLOG_LOG and $TURNLOG_SCHEMA name the log when no flag does, and --dir or --log still wins over them", async () => {
    const fromEnv = schema("env");
    const demo = await turnlog(["demo"], { TURNLOG_LOG: url, TURNLOG_SCHEMA: fromEnv });
    expect(demo.code).toBe(0);
    const sessionId = /session\s+(demo-\S+)/.exec(demo.stdout)?.[1] ?? "";
    expect(sessionId).not.toBe("");
    // The printed commands need no --log: the environment names the same log.
    expect(demo.stdout).toContain(`npx turnlog show ${sessionId}  `);

    const listed = await turnlog(["sessions", "--json"], { TURNLOG_LOG: url, TURNLOG_SCHEMA: fromEnv });
    expect((JSON.parse(listed.stdout) as { id: string }[]).map((row) => row.id)).toEqual([sessionId]);

    const viaFlag = await turnlog(["sessions", "--log", url, "--schema", fromEnv, "--json"], { TURNLOG_DIR: path.join(workDir, "unused") });
    expect((JSON.parse(viaFlag.stdout) as { id: string }[]).map((row) => row.id)).toEqual([sessionId]);

    const overridden = await turnlog(["sessions", "--dir", path.join(workDir, "no-log-here")], { TURNLOG_LOG: url, TURNLOG_SCHEMA: fromEnv });
    expect(overridden.code).toBe(1);
    expect(overridden.stderr).toContain("no log at");
    expect(overridden.stderr).toContain("no-log-here");
  });

  it("approve and deny append the answer to a session parked for approval, as a second handle on the log reads it back", async () => {
    const parked = schema("approve");
    const demo = await turnlog(["demo", "--pause", "--log", url, "--schema", parked]);
    expect(demo.code).toBe(3);
    const sessionId = /session\s+(demo-\S+)/.exec(demo.stdout)?.[1] ?? "";
    const approveLine = /npx turnlog approve (\S+) (\S+) --log (\S+) --schema (\S+)/.exec(demo.stdout);
    expect(approveLine?.[1]).toBe(sessionId);
    expect(approveLine?.[3]).toBe(url);
    expect(approveLine?.[4]).toBe(parked);
    const callId = approveLine?.[2] ?? "";

    const approved = await turnlog(["approve", sessionId, callId, "--by", "reviewer", "--note", "looks fine", "--log", url, "--schema", parked]);
    expect(approved.stderr).toBe("");
    expect(approved.code).toBe(0);
    expect(approved.stdout).toContain(`approved`);

    const second = await PostgresEventLog.open(url, { schema: parked, migrate: false });
    try {
      const events = await second.readStream(sessionStream(sessionId), { maxCount: Number.MAX_SAFE_INTEGER });
      const granted = events.find((event) => event.type === "turn.approval.granted");
      expect(granted?.data).toMatchObject({ callId, by: "reviewer", note: "looks fine" });
    } finally {
      await second.close();
    }

    // A second demo session parks again; deny answers it the other way.
    const again = await turnlog(["demo", "--pause", "--log", url, "--schema", parked]);
    const secondId = /session\s+(demo-\S+)/.exec(again.stdout)?.[1] ?? "";
    const denied = await turnlog(["deny", secondId, callId, "--by", "reviewer", "--log", url, "--schema", parked]);
    expect(denied.code).toBe(0);
    const third = await PostgresEventLog.open(url, { schema: parked, migrate: false });
    try {
      const events = await third.readStream(sessionStream(secondId), { maxCount: Number.MAX_SAFE_INTEGER });
      const denial = events.find((event) => event.type === "turn.approval.denied");
      expect(denial?.data).toMatchObject({ callId, by: "reviewer" });
    } finally {
      await third.close();
    }
  });

  it("events --follow prints what another process appends to the session, read from the log itself", async () => {
    const followed = schema("follow");
    const demo = await turnlog(["demo", "--log", url, "--schema", followed]);
    const sessionId = /session\s+(demo-\S+)/.exec(demo.stdout)?.[1] ?? "";
    const child = spawn(process.execPath, [path.join(repoRoot, "bin", "turnlog.js"), "events", sessionId, "--json", "--follow", "--log", url, "--schema", followed], {
      cwd: workDir,
      env: { ...process.env, NO_COLOR: "1", TURNLOG_DIR: "" },
    });
    let stdout = "";
    let stderr = "";
    const checks = new Set<() => void>();
    child.stdout.on("data", (chunk: Buffer) => {
      stdout += chunk.toString();
      for (const check of checks) check();
    });
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
    const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)));
    /** Resolves once the follower has printed `text` (the test's own time limit applies). */
    const seen = (text: string) =>
      new Promise<void>((resolve, reject) => {
        const check = () => {
          if (!stdout.includes(text)) return;
          checks.delete(check);
          resolve();
        };
        checks.add(check);
        exited.then((code) => reject(new Error(`the follower exited (${code}); stderr: ${stderr}`)));
        check();
      });
    try {
      await seen('"session.started"');
      const writer = await PostgresEventLog.open(url, { schema: followed, migrate: false });
      try {
        await writer.appendToStream(sessionStream(sessionId), [{ type: "session.user_message.added", data: { content: "appended from elsewhere" } }]);
      } finally {
        await writer.close();
      }
      await seen("appended from elsewhere");
    } finally {
      child.kill("SIGINT");
    }
    expect(await exited).toBe(0);
    expect(stderr).toBe("");
    expect(stdout.trim().split("\n").filter((line) => line.includes("appended from elsewhere"))).toHaveLength(1);
  }, 120_000);

  it("migrate applies the schema once, then says it is current; on a directory it says LevelDB needs none", async () => {
    const fresh = schema("migrate");
    const first = await turnlog(["migrate", "--log", url, "--schema", fresh]);
    expect(first.code).toBe(0);
    expect(first.stdout).toMatch(/migrated .* to schema version 2:\n\s+1\s+\S.*\n\s+2\s+\S/);
    const second = await turnlog(["migrate", "--log", url, "--schema", fresh]);
    expect(second.code).toBe(0);
    expect(second.stdout).toContain("current");
    expect(second.stdout).toContain("nothing to apply");
    const empty = await turnlog(["sessions", "--log", url, "--schema", fresh]);
    expect(empty.code).toBe(0);
    expect(empty.stdout).toContain("no sessions in");

    const directory = await turnlog(["migrate", "--dir", path.join(workDir, "level")]);
    expect(directory.code).toBe(0);
    expect(directory.stdout).toContain("LevelDB needs no migration");
  });

  it("a read command on a schema without a log says so in one line and creates nothing", async () => {
    const missing = schema("missing");
    const run = await turnlog(["sessions", "--log", url, "--schema", missing]);
    expect(run.code).toBe(1);
    expectOneCleanLine(run.stderr);
    expect(run.stderr).toContain(`no log at ${url} (schema ${missing})`);
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    try {
      const { rows } = await client.query("SELECT 1 FROM information_schema.schemata WHERE schema_name = $1", [missing]);
      expect(rows).toHaveLength(0);
    } finally {
      await client.end();
    }
  });

  it("verify checks the seals of a PostgreSQL log against a witness of its own, and finds a session deleted from the database", async () => {
    const sealed = schema("sealed");
    const demo = await turnlog(["demo", "--log", urlWithPassword(url), "--schema", sealed]);
    expect(demo.code).toBe(0);
    const sessionId = /session\s+(demo-\S+)/.exec(demo.stdout)?.[1] ?? "";

    const verified = await turnlog(["verify", "--log", url, "--schema", sealed]);
    expect(verified.code).toBe(0);
    expect(verified.stdout).toMatch(/seals? verified/);
    const witnessFile = /witness (\S+\.json)/.exec(verified.stdout)?.[1] ?? "";
    expect(witnessFile).toContain(sealed);
    // The witness is the same log's whoever names it: with a password or without.
    const witnessText = await readFile(witnessFile, "utf8");
    expect(witnessText).toContain(sealed);
    expect(witnessText).not.toContain(password);
    expect((await readdir(path.dirname(witnessFile))).join("\n")).not.toContain(password);

    const client = new pg.Client({ connectionString: url });
    await client.connect();
    try {
      await client.query(`DELETE FROM ${pg.escapeIdentifier(sealed)}.events WHERE stream_id = $1`, [sessionStream(sessionId)]);
      await client.query(`DELETE FROM ${pg.escapeIdentifier(sealed)}.streams WHERE stream_id = $1`, [sessionStream(sessionId)]);
    } finally {
      await client.end();
    }
    const tampered = await turnlog(["verify", "--log", url, "--schema", sealed]);
    expect(tampered.code).toBe(1);
    expect(tampered.stdout).toMatch(/deleted-stream|truncated|emptied-log/);
  });

  it("never prints a password given in a URL: not in hints, not in errors, not in help, whether the server answers or not", async () => {
    const secretUrl = urlWithPassword(url);
    const held = schema("secret");
    const outputs: string[] = [];
    const record = async (args: string[], env: Record<string, string | undefined> = {}) => {
      const run = await turnlog(args, env);
      outputs.push(run.stdout, run.stderr);
      return run;
    };

    // (a) the test server: a session parked for approval prints the commands that answer it.
    const demo = await record(["demo", "--pause", "--log", secretUrl, "--schema", held]);
    expect(demo.code).toBe(3);
    const withoutPassword = new URL(secretUrl);
    withoutPassword.password = "";
    expect(demo.stdout).toContain(`--log ${withoutPassword.toString()} --schema ${held}`);
    expect(demo.stdout).toContain("PGPASSWORD");
    const sessionId = /session\s+(demo-\S+)/.exec(demo.stdout)?.[1] ?? "";
    await record(["show", sessionId, "--log", secretUrl, "--schema", held]);
    await record(["show", "no-such-session", "--log", secretUrl, "--schema", held]);
    await record(["sessions", "--log", secretUrl, "--schema", freshSchemaName("absent")]);
    await record(["sessions", "--json"], { TURNLOG_LOG: secretUrl, TURNLOG_SCHEMA: held });
    await record(["events", "no-such-session"], { TURNLOG_LOG: secretUrl, TURNLOG_SCHEMA: held, TURNLOG_DEBUG: "1" });
    await record(["migrate", "--log", secretUrl, "--schema", held]);
    await record(["verify", "--log", secretUrl, "--schema", held]);
    await record(["sessions", "--help"], { TURNLOG_LOG: secretUrl });
    await record(["sessions", "--log", secretUrl, "--schema", "Not-A-Schema"]);

    // (b) a port nothing listens on.
    const port = await closedPort();
    const refused = `postgres://turnlog:${password}@127.0.0.1:${port}/postgres`;
    const down = await record(["sessions", "--log", refused]);
    expect(down.code).toBe(1);
    expectOneCleanLine(down.stderr);
    expect(down.stderr).toContain(`cannot open the log at postgres://turnlog@127.0.0.1:${port}/postgres (schema turnlog)`);
    await record(["sessions"], { TURNLOG_LOG: refused, TURNLOG_DEBUG: "1" });
    await record(["approve", "s1", "call_1", "--log", refused]);
    await record(["migrate", "--log", refused]);
    await record(["verify", "--log", refused]);
    await record(["sessions", "--log", `postgres://turnlog:${password}@127.0.0.1:${port}/postgres?password=${password}`]);

    for (const output of outputs) expect(output).not.toContain(password);
    expect(outputs.join("")).not.toContain(password.toLowerCase());
  });
});
