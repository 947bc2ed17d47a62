import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { ConfigError, createRuntime, PostgresEventLog, SessionBusyError, sessionStream } from "../../src/index.js";
import type { EventLog, Provider, SendOutcome } from "../../src/index.js";
import { MemoryEventLog, scriptedProvider } from "../../src/testing/index.js";
import { describeWithPostgres, postgresFixtures } from "../support/postgres.js";
import { deployTool } from "../support/tools.js";

/** Many hosts on one log, in one test process: leases, a lost race carried on, answers from elsewhere. */

const directories: string[] = [];
afterAll(async () => {
  await Promise.all(directories.map((directory) => rm(directory, { recursive: true, force: true })));
});

const deployScript = () => [{ toolCalls: [{ id: "call_d", name: "deploy", arguments: '{"version":"v2"}' }] }, { content: "Deployed." }];
const provider = (steps = deployScript()): Provider => scriptedProvider(steps, { id: "model-a" });

async function workspace(): Promise<string> {
  const directory = await mkdtemp(join(tmpdir(), "turnlog-hosts-"));
  directories.push(directory);
  return directory;
}

describe("a lost race, on one log shared by two runtimes", () => {
  it("the host whose tool outcome lost the race carries on from the log instead of failing; the tool ran once", async () => {
    const log = new MemoryEventLog();
    const root = await workspace();
    let release!: () => void;
    const hold = new Promise<void>((resolve) => (release = resolve));
    const ran: string[] = [];
    let started!: () => void;
    const running = new Promise<void>((resolve) => (started = resolve));
    const a = await createRuntime({ log, provider: provider(), tools: [deployTool(ran, { hold })], policy: { approvalMode: "full-auto", workspace: { root, trusted: true } } });
    log.subscribe((event) => event.type === "turn.tool.started" && started(), { stream: sessionStream("s1") });
    const sending = (await a.openSession("s1")).send("deploy");
    await running;
    // Another runtime opens the session while the deploy runs: to it the call is in doubt (it
    // cannot tell a live host from a dead one), so its recovery marks it interrupted.
    const b = await createRuntime({ log, provider: provider([]), tools: [deployTool([])], policy: { approvalMode: "full-auto", workspace: { root, trusted: true } } });
    await b.openSession("s1");
    release();
    // A's outcome append loses the race; A folds B's event, keeps it (the call has its one end) and finishes the turn.
    expect(await sending).toMatchObject({ status: "completed", text: "Deployed." });
    expect(ran).toEqual(["call_d"]);
    const types = (await log.readStream(sessionStream("s1"))).map((event) => event.type);
    expect(types.filter((type) => type.startsWith("turn.tool."))).toEqual(["turn.tool.started", "turn.tool.interrupted"]);
    expect(await a.replay("s1")).toMatchObject({ identical: true });
  });
});

describe("session.waitForAnswers() and autoResume, on one log", () => {
  async function parked(log: EventLog, ran: string[], extra: Parameters<typeof createRuntime>[0] extends infer O ? Partial<O> : never = {}) {
    const root = await workspace();
    const runtime = await createRuntime({ log, provider: provider(), tools: [deployTool(ran)], policy: { approvalMode: "ask", workspace: { root, trusted: true } }, ...extra });
    const session = await runtime.openSession("s1");
    expect(await session.send("deploy")).toMatchObject({ status: "awaiting-approval" });
    const reviewer = await createRuntime({ log, provider: provider([]), tools: [deployTool([])], policy: { approvalMode: "ask", workspace: { root, trusted: true } } });
    return { runtime, session, answer: async () => (await reviewer.openSession("s1", { create: false })).approve("call_d", { by: "bob" }) };
  }

  it("resolves once another runtime answered, and resume() then runs the call once", async () => {
    const log = new MemoryEventLog();
    const ran: string[] = [];
    const { session, answer } = await parked(log, ran);
    const waiting = session.waitForAnswers();
    await answer();
    expect(await waiting).toEqual({ status: "needs-resume", reason: "approvals-answered", pendingApprovals: [] });
    expect(await session.resume()).toMatchObject({ status: "completed", text: "Deployed." });
    expect(ran).toEqual(["call_d"]);
    // Nothing held: it resolves at once with the outcome.
    expect(await session.waitForAnswers()).toMatchObject({ status: "completed" });
  });

  it("rejects when its signal aborts", async () => {
    const { session } = await parked(new MemoryEventLog(), []);
    const controller = new AbortController();
    const waiting = session.waitForAnswers({ signal: controller.signal });
    controller.abort(new Error("gave up"));
    await expect(waiting).rejects.toThrow("gave up");
  });

  it("autoResume resumes a session this runtime parked once it is answered elsewhere, and tells the host", async () => {
    const log = new MemoryEventLog();
    const ran: string[] = [];
    let told!: (outcome: SendOutcome) => void;
    const outcome = new Promise<SendOutcome>((resolve) => (told = resolve));
    const { runtime, answer } = await parked(log, ran, { autoResume: { onOutcome: (resumed) => told(resumed) } });
    await answer();
    expect(await outcome).toMatchObject({ status: "completed", text: "Deployed." });
    expect(ran).toEqual(["call_d"]);
    await runtime.close();
  });
});

describe("sessionLease", () => {
  it('"fail" needs a log that grants leases: a ConfigError on a memory log', async () => {
    await expect(createRuntime({ log: new MemoryEventLog(), provider: provider(), sessionLease: "fail" })).rejects.toSatisfy(
      (error) => ConfigError.isInstance(error) && /sessionLease/.test(error.message),
    );
  });
});

describeWithPostgres("leases on PostgreSQL", () => {
  const fixtures = postgresFixtures();
  const openLog = (schema: string) => fixtures.open(schema);
  const schemaForTest = fixtures.schema;

  it("a lease is held by one holder at a time, per schema; release() and a lost connection free it", async () => {
    const schema = schemaForTest("lease");
    const [one, two] = [await openLog(schema), await openLog(schema)];
    const held = await one.tryLease("session-s1");
    expect(held).toBeDefined();
    expect(await two.tryLease("session-s1")).toBeUndefined();
    expect(await one.tryLease("session-s1")).toBeUndefined();
    // Another name, or the same name in another schema, is another lease.
    const other = await two.tryLease("session-s2");
    expect(other).toBeDefined();
    const elsewhere = await openLog(schemaForTest("lease_other"));
    const inOtherSchema = await elsewhere.tryLease("session-s1");
    expect(inOtherSchema).toBeDefined();
    await held?.release();
    await held?.release(); // twice is harmless
    const again = await two.tryLease("session-s1");
    expect(again).toBeDefined();

    // The holder's connection dies (as with a crashed process): the server frees the lease.
    const admin = await fixtures.client();
    await admin.query(
      `WITH lease AS (SELECT hashtextextended($1, 0) AS key)
       SELECT pg_terminate_backend(pid) FROM pg_locks, lease WHERE locktype = 'advisory' AND granted AND objsubid = 1
         AND classid = ((key >> 32) & 4294967295)::oid AND objid = (key & 4294967295)::oid`,
      [`turnlog.lease:${schema}:session-s1`],
    );
    let retaken: Awaited<ReturnType<PostgresEventLog["tryLease"]>>;
    // The server ends the backend asynchronously: it is asked again until it is gone (each try is a query, not a timer).
    for (let tries = 0; (retaken = await one.tryLease("session-s1")) === undefined && tries < 1_000; tries += 1) await one.streamVersion("session-s1");
    expect(retaken).toBeDefined();
    await again?.release(); // its connection is gone: release() still resolves
    await Promise.all([retaken?.release(), other?.release(), inOtherSchema?.release()]);
  });

  it("while another process holds a session's lease, send and resume throw SessionBusyError and append nothing; with sessionLease off they do not ask", async () => {
    const schema = schemaForTest("busy");
    const log = await openLog(schema);
    const root = await workspace();
    const runtime = await createRuntime({ log, provider: provider([{ content: "hi" }]), policy: { workspace: { root, trusted: true } } });
    const session = await runtime.openSession("s1");
    const holder = await (await openLog(schema)).tryLease(sessionStream("s1"));
    const before = await log.streamVersion(sessionStream("s1"));
    const busy = await session.send("hello").catch((error: unknown) => error);
    expect(SessionBusyError.isInstance(busy)).toBe(true);
    expect(busy).toMatchObject({ code: "TURNLOG_SESSION_BUSY", actor: "host", sessionId: "s1" });
    expect((busy as Error).message).toMatch(/another process/);
    await expect(session.resume()).rejects.toThrow(SessionBusyError);
    expect(await log.streamVersion(sessionStream("s1"))).toBe(before);

    const racing = await createRuntime({ log, provider: provider([{ content: "raced" }]), policy: { workspace: { root, trusted: true } }, sessionLease: "off" });
    expect(await (await racing.openSession("s1")).send("hello")).toMatchObject({ status: "completed", text: "raced" });
    await holder?.release();
    // Free again: the first runtime drives it (its session reloads what the other wrote).
    expect(await session.resume()).toMatchObject({ status: "completed", text: "raced" });
  });
});
