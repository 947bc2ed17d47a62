import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { createRuntime, ExpectedVersionConflictError, LevelEventLog, SessionBusyError, SessionStateError, sessionStream } from "../../src/index.js";
import type { EventLog } from "../../src/index.js";
import { scriptedProvider } from "../../src/testing/index.js";
import { describeWithPostgres, postgresFixtures } from "../support/postgres.js";
import { deployTool } from "../support/tools.js";

/**
 * Issue 31, "stale after a lost race": two runtimes write one session, and one of them (B) is in
 * the middle of a turn — its deploy runs — when the other (A) sends. A's message loses the race
 * (`ExpectedVersionConflictError`, nothing of it appended), and A's `Session` is then current: it
 * says the turn is another writer's (`in-progress-elsewhere`, not a crash's `unfinished-turn`), a
 * send meanwhile is refused as busy (not "answer its approvals and resume()": nothing is held),
 * and once B's turn has ended, A's next send works. Real logs: one LevelDB handle handed to both
 * runtimes, and two PostgreSQL handles (two hosts) racing without the lease.
 */

const directories: string[] = [];
afterAll(async () => {
  await Promise.all(directories.map((directory) => rm(directory, { recursive: true, force: true })));
});

async function freshDirectory(): Promise<string> {
  const directory = await mkdtemp(join(tmpdir(), "turnlog-lost-race-"));
  directories.push(directory);
  return directory;
}

async function loseARace(logA: EventLog, logB: EventLog): Promise<void> {
  const root = await freshDirectory();
  let release!: () => void;
  const hold = new Promise<void>((resolve) => (release = resolve));
  const ran: string[] = [];
  const deploy = deployTool(ran, { hold });
  const policy = { approvalMode: "full-auto" as const, workspace: { root, trusted: true } };
  const a = await createRuntime({ log: logA, provider: scriptedProvider([{ content: "Hello from A." }], { id: "model" }), tools: [deploy], policy, sessionLease: "off" });
  const b = await createRuntime({
    log: logB,
    provider: scriptedProvider([{ toolCalls: [{ id: "call_d", name: "deploy", arguments: '{"version":"v2"}' }] }, { content: "Deployed." }], { id: "model" }),
    tools: [deploy],
    policy,
    sessionLease: "off",
  });
  try {
    const sessionA = await a.openSession("s1");
    const sessionB = await b.openSession("s1");
    // B's deploy is running: B has appended `turn.tool.started` and waits for the tool.
    let started!: () => void;
    const running = new Promise<void>((resolve) => (started = resolve));
    const unsubscribe = logB.subscribe((event) => event.type === "turn.tool.started" && started(), { stream: sessionStream("s1") });
    const sending = sessionB.send("deploy v2");
    await running;
    unsubscribe();

    // A's message loses the race to B's turn; A reloads to the log's head.
    const lost = await sessionA.send("hello").catch((error: unknown) => error);
    expect(ExpectedVersionConflictError.isInstance(lost), String(lost)).toBe(true);
    expect(sessionA.outcome()).toEqual({ status: "needs-resume", reason: "in-progress-elsewhere", pendingApprovals: [] });
    // Meanwhile a send (or a host-routed call) is refused for what it is: another writer's turn, nothing held.
    const busy = await sessionA.send("hello again").catch((error: unknown) => error);
    expect(SessionBusyError.isInstance(busy), String(busy)).toBe(true);
    expect(busy).toMatchObject({ sessionId: "s1", holder: "writer" });
    expect(SessionStateError.isInstance(busy)).toBe(false);
    await expect(sessionA.runTool("deploy", { version: "v3" }, { by: "ui" })).rejects.toSatisfy((error: unknown) => SessionBusyError.isInstance(error));
    // A resume joins the turn and leaves B's running call to B (it does not fail, nor run it again).
    expect(await sessionA.resume()).toEqual({ status: "needs-resume", reason: "in-progress-elsewhere", pendingApprovals: [] });

    release();
    expect(await sending).toMatchObject({ status: "completed", text: "Deployed." });
    // B's turn has ended: A's next host-routed call and send work, on the log as it is now.
    expect(await sessionA.runTool("deploy", { version: "v3" }, { by: "ui" })).toMatchObject({ callId: "native-1", status: "succeeded", content: "deployed v3" });
    expect(await sessionA.send("hello again")).toMatchObject({ status: "completed", text: "Hello from A." });
    expect(sessionA.outcome()).toMatchObject({ status: "completed", text: "Hello from A." });
    expect(ran).toEqual(["call_d", "native-1"]);
    const events = await logA.readStream(sessionStream("s1"));
    expect(events.filter((event) => event.type === "session.user_message.added").map((event) => (event.data as { content: string }).content)).toEqual(["deploy v2", "hello again"]);
    expect(await a.replay("s1")).toMatchObject({ identical: true });
  } finally {
    release();
    await a.close();
    await b.close();
  }
}

describe("a Session that lost a race is current after the conflict", () => {
  it("one LevelDB log handed to two runtimes: the loser reports the other writer's turn, and sends again once it ends", async () => {
    const log = await LevelEventLog.open(await freshDirectory());
    try {
      await loseARace(log, log);
    } finally {
      await log.close();
    }
  });
});

describeWithPostgres("a Session that lost a race on PostgreSQL is current after the conflict", () => {
  const fixtures = postgresFixtures();
  it("two hosts without the lease: the loser reports the other host's turn, and sends again once it ends", async () => {
    const schema = fixtures.schema("lost_race");
    await loseARace(await fixtures.open(schema), await fixtures.open(schema));
  });
});
