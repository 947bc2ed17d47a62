import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, expect, it, vi } from "vitest";
import { createRuntime, PostgresEventLog, sessionStream } from "../../src/index.js";
import type { AppendResult, EventLog, RecordedEvent, SessionLeases } from "../../src/index.js";
import { scriptedProvider } from "../../src/testing/index.js";
import { postgresFamily } from "../../soak/families/postgres.js";
import { restartableServer } from "../../soak/families/postgres-hosts.js";
import { postgresOutageOf } from "../support/postgres-outage.js";
import { withAppend } from "../support/with-append.js";
import { describeWithPostgres, postgresFixtures, requirePostgresUrl } from "../support/postgres.js";
import { deployTool } from "../support/tools.js";

/**
 * The CI-sized run of soak family `postgres` (soak/families/postgres.ts): host processes SIGKILLed
 * at seeded points on a schema of the test server, and a restart of a server of its own under
 * running hosts, with the crash test's invariants after each scenario. `npm run soak -- --family
 * postgres` runs the same code at full count. Then the restart's behaviour, step by step, in
 * this process.
 */
const seed = 20_261_205;

const directories: string[] = [];
afterAll(async () => {
  await Promise.all(directories.map((directory) => rm(directory, { recursive: true, force: true })));
});

describeWithPostgres("soak family postgres (CI size)", () => {
  afterEach(() => {
    vi.unstubAllEnvs();
  });

  it(`kills hosts and restarts a server at ${postgresFamily.ciCount} seeded points, every invariant holding (seed ${seed})`, async () => {
    // The kill scenarios run on the test server, as the other PostgreSQL suites do.
    vi.stubEnv("TURNLOG_TEST_PG_URL", requirePostgresUrl());
    const result = await postgresFamily.run({ seed, count: postgresFamily.ciCount, log: () => {} });
    expect(result.failures, result.failures.join("\n\n")).toEqual([]);
    expect(result.failed).toBe(0);
    expect(result.passed).toBe(postgresFamily.ciCount);
    expect(result.summary).toMatch(/\b1 server restarts \(.*; 1 with a host running\)/);
  }, 180_000);

  it("a server that goes away mid-tool: send rejects with the server's error, nothing unstored is acknowledged, and resume() finishes once it is back; the tool ran once", async () => {
    const server = await restartableServer();
    try {
      const root = await mkdtemp(join(tmpdir(), "turnlog-pg-restart-"));
      directories.push(root);
      const log = await PostgresEventLog.open(server.url, { schema: "restart_focus", poolSize: 2 });
      // What the runtime was told is stored: every append that resolved.
      const acknowledged: RecordedEvent[] = [];
      const reporting = withAppend(log, async (stream, events, options) => {
        const result: AppendResult = await log.appendToStream(stream, events, options);
        acknowledged.push(...result.events);
        return result;
      });
      const ran: string[] = [];
      let running!: () => void;
      const started = new Promise<void>((resolve) => (running = resolve));
      let release!: () => void;
      const held = new Promise<void>((resolve) => (release = resolve));
      const deploy = deployTool(ran, { hold: held, onStart: running });
      const runtime = await createRuntime({
        log: reporting,
        provider: scriptedProvider([{ toolCalls: [{ id: "call_d", name: "deploy", arguments: '{"version":"v2"}' }] }, { content: "Deployed." }]),
        tools: [deploy],
        policy: { approvalMode: "full-auto", workspace: { root, trusted: true } },
      });
      const session = await runtime.openSession("s1");
      const sending = session.send("deploy v2");
      await started;
      // The server crashes while the deploy runs; the deploy then ends, and its outcome cannot be written.
      await server.down("immediate");
      release();
      const error = await sending.then(
        () => undefined,
        (reason: unknown) => reason,
      );
      expect(postgresOutageOf(error), `a clear error that the server is away, not ${String(error)}`).toBeDefined();
      await server.up();

      const outcome = await session.resume();
      expect(outcome).toMatchObject({ status: "completed", text: "Deployed." });
      expect(ran).toEqual(["call_d"]);
      const events = await log.readStream(sessionStream("s1"));
      for (const event of acknowledged) expect(events[event.meta.streamPosition - 1]).toEqual(event);
      // The deploy's outcome was never stored: it is in doubt, so it ends interrupted, once.
      const toolEvents = events.filter((event) => event.type.startsWith("turn.tool.")).map((event) => event.type);
      expect(toolEvents).toEqual(["turn.tool.started", "turn.tool.interrupted"]);
      expect(events.at(-1)?.type).toBe("turn.completed");
      expect(await log.verify()).toMatchObject({ ok: true });
      expect(await runtime.replay("s1")).toMatchObject({ identical: true, divergences: [] });
      await runtime.close();
      await log.close();
    } finally {
      server.stop();
    }
  }, 120_000);

  describeWithPostgres("a live host after the server lost its last asynchronous commits", () => {
    const fixtures = postgresFixtures();

    // Found by the soak's server restarts: events appended with `durable: false` (a synchronous
    // commit off) may be lost in a server crash while the host lives on. Its session still held
    // them, and a reload read only beyond them: every later append conflicted, for good.
    it("opening the session again folds the log as it is; the host finishes the turn and carries on", async () => {
      const schema = fixtures.schema("lost_tail");
      const log = await fixtures.open(schema);
      const root = await mkdtemp(join(tmpdir(), "turnlog-pg-lost-"));
      directories.push(root);
      const runtime = await createRuntime({
        log,
        provider: scriptedProvider([{ content: "one" }, { content: "two" }]),
        policy: { approvalMode: "full-auto", workspace: { root, trusted: true } },
      });
      const session = await runtime.openSession("s1");
      expect(await session.send("first")).toMatchObject({ status: "completed", text: "one" });
      const stream = sessionStream("s1");
      const before = await log.readStream(stream);
      expect(before.at(-1)?.type).toBe("turn.completed");
      // What a crashed server recovers to when the turn's last commit was not yet on disk: the
      // stream without its last event (rows and head alike).
      const kept = before.at(-2);
      const admin = await fixtures.client();
      await admin.query(`DELETE FROM ${schema}.events WHERE stream_id = $1 AND stream_position > $2`, [stream, kept?.meta.streamPosition]);
      await admin.query(`UPDATE ${schema}.streams SET version = $2, head_hash = $3 WHERE stream_id = $1`, [stream, kept?.meta.streamPosition, kept?.meta.hash]);
      expect(await log.verify()).toMatchObject({ ok: true });

      const reopened = await runtime.openSession("s1");
      expect(reopened.state().position).toBe(kept?.meta.streamPosition);
      expect(await reopened.resume()).toMatchObject({ status: "completed", text: "one" });
      expect((await log.readStream(stream)).at(-1)?.type).toBe("turn.completed");
      expect(await reopened.send("second")).toMatchObject({ status: "completed", text: "two" });
      const after = await log.readStream(stream);
      expect(after.filter((event) => event.type === "turn.completed")).toHaveLength(2);
      expect(await log.verify()).toMatchObject({ ok: true });
      expect(await runtime.replay("s1")).toMatchObject({ identical: true, divergences: [] });
      await runtime.close();
    });

    // Found by the full soak (seed 1, a postmaster SIGKILL 25 ms after a side effect): the lost
    // commits held the provider's answer, so the log ended on the host's own request, and the host
    // left the turn "in progress elsewhere" with nobody else there.
    it("a turn whose provider answer the log lost while the host drives it under the lease: the request ends as an interrupted attempt, the model is asked again, and the turn completes", async () => {
      const schema = fixtures.schema("lost_answer");
      const log = await fixtures.open(schema);
      const admin = await fixtures.client();
      const root = await mkdtemp(join(tmpdir(), "turnlog-pg-lost-answer-"));
      directories.push(root);
      let crashed = false;
      // The server "crashes" right after the asynchronous commit of the provider's answer (and the
      // decisions on it) and recovers without it, as a crash before that commit reached the disk does.
      const crashingLog = withAppend(log, async (stream, events, options) => {
        const result = await log.appendToStream(stream, events, options);
        if (!crashed && options?.durable === false && events.some((event) => event.type === "turn.provider.responded")) {
          crashed = true;
          const kept = result.events[0]!.meta.streamPosition - 1;
          const [head] = await log.readStream(stream, { from: kept, maxCount: 1 });
          await admin.query(`DELETE FROM ${schema}.events WHERE stream_id = $1 AND stream_position > $2`, [stream, kept]);
          await admin.query(`UPDATE ${schema}.streams SET version = $2, head_hash = $3 WHERE stream_id = $1`, [stream, kept, head?.meta.hash]);
        }
        return result;
      });
      const ran: string[] = [];
      const deploy = deployTool(ran);
      const runtime = await createRuntime({
        log: crashingLog,
        provider: scriptedProvider([
          { toolCalls: [{ id: "call_lost", name: "deploy", arguments: '{"version":"v2"}' }] },
          { toolCalls: [{ id: "call_d", name: "deploy", arguments: '{"version":"v2"}' }] },
          { content: "Deployed." },
        ]),
        tools: [deploy],
        policy: { approvalMode: "full-auto", workspace: { root, trusted: true } },
      });
      const session = await runtime.openSession("s1");
      expect(await session.send("deploy v2")).toMatchObject({ status: "completed", text: "Deployed." });
      expect(crashed).toBe(true);
      // The lost answer's call never ran; the one asked again ran once.
      expect(ran).toEqual(["call_d"]);
      const events = await log.readStream(sessionStream("s1"));
      const failed = events.filter((event) => event.type === "turn.provider.failed");
      expect(failed.map((event) => event.data)).toEqual([expect.objectContaining({ attempt: 1, kind: "interrupted", retryable: true, message: expect.stringMatching(/log lost the provider's answer/) })]);
      expect(events.filter((event) => event.type === "turn.tool.started").map((event) => (event.data as { callId: string }).callId)).toEqual(["call_d"]);
      expect(events.at(-1)?.type).toBe("turn.completed");
      expect(await log.verify()).toMatchObject({ ok: true });
      expect(await runtime.replay("s1")).toMatchObject({ identical: true, divergences: [] });
      await runtime.close();
    });
  });
});
