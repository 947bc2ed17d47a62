import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeEach, describe, expect, it } from "vitest";
import { createRuntime, ExpectedVersionConflictError, LevelEventLog, SessionStateError, UnknownSessionError } from "../../src/index.js";
import type { Provider, RecordedEvent, Runtime } from "../../src/index.js";
import { scriptedProvider } from "../../src/testing/index.js";
import type { ScriptStep } from "../../src/testing/index.js";
import { sequentialIds, steppingClock, workspace } from "../support/tools.js";

/**
 * What a host sees of a session across processes: the provider that really answers is the one
 * recorded, `outcome()` tells "needs resume" from "idle", a session another writer appended to is
 * reloaded, and `openSession(id, { create: false })` never makes a session of a typo. Two runtimes
 * on one LevelDB log object stand in for two processes (one process owns a LevelDB directory).
 */

const write = (path: string, content: string) => ({ id: "call_w", name: "write_file", arguments: JSON.stringify({ path, content }) });

const directories: string[] = [];
let log: LevelEventLog;

beforeEach(async () => {
  const directory = await mkdtemp(join(tmpdir(), "turnlog-honest-"));
  directories.push(directory);
  log = await LevelEventLog.open(directory, { durability: "relaxed" });
  return () => log.close();
});

afterAll(async () => {
  await Promise.all(directories.map((directory) => rm(directory, { recursive: true, force: true })));
});

function runtimeWith(provider: Provider, options: { tools?: ReturnType<typeof workspace>["tools"]; providerAttempts?: number } = {}): Promise<Runtime> {
  return createRuntime({
    log,
    provider,
    tools: options.tools ?? workspace().tools,
    clock: steppingClock(),
    ids: sequentialIds("session"),
    ...(options.providerAttempts !== undefined ? { providerAttempts: options.providerAttempts } : {}),
  });
}

const types = (events: readonly RecordedEvent[]) => events.map((event) => event.type);

/** A session whose first turn holds a write for approval (the default policy asks). */
async function heldWrite(provider: Provider = scriptedProvider([{ toolCalls: [write("notes.md", "hi")] }], { id: "model-a" })) {
  const runtime = await runtimeWith(provider);
  const session = await runtime.openSession("s1");
  const outcome = await session.send("write the notes");
  expect(outcome.status).toBe("awaiting-approval");
  return { runtime, session };
}

describe("reopening a session with another provider", () => {
  it("records session.config.changed first, and the next request names the provider that answers it", async () => {
    const first = await heldWrite();
    await first.runtime.close();
    const before = (await log.readStream("session-s1")).length;

    const modelB = scriptedProvider([{ content: "Wrote the notes." }], { id: "model-b", format: "anthropic-messages" });
    const runtime = await runtimeWith(modelB);
    const session = await runtime.openSession("s1");
    const appended = (await log.readStream("session-s1")).slice(before);
    expect(appended.map((event) => ({ type: event.type, data: event.data }))).toEqual([
      { type: "session.config.changed", data: { provider: { id: "model-b", format: "anthropic-messages", maxAttempts: 3 } } },
    ]);
    expect(session.state().provider).toEqual({ id: "model-b", format: "anthropic-messages", maxAttempts: 3 });

    // The rest of the held turn goes to model-b, and the log says so.
    await session.approve("call_w", { by: "alice" });
    const outcome = await session.resume();
    expect(outcome).toMatchObject({ status: "completed", text: "Wrote the notes." });
    modelB.assertConsumed();
    const requests = (await log.readStream("session-s1")).filter((event) => event.type === "turn.provider.requested").map((event) => event.data);
    expect(requests.map((data) => [(data as { providerId: string }).providerId, (data as { format: string }).format])).toEqual([
      ["model-a", "openai-chat"],
      ["model-b", "anthropic-messages"],
    ]);
    expect(await runtime.replay("s1")).toMatchObject({ identical: true, divergences: [] });
  });

  it("two runtimes with different providers on one session: each request names the provider that sent it", async () => {
    const a = await runtimeWith(scriptedProvider([{ content: "from a" }, { content: "from a again" }], { id: "model-a" }));
    const b = await runtimeWith(scriptedProvider([{ content: "from b" }], { id: "model-b" }));
    await (await a.openSession("s1")).send("one");
    await (await b.openSession("s1")).send("two");
    // a's session was opened before b switched the provider; a names its own again before asking.
    expect(await (await a.openSession("s1")).send("three")).toMatchObject({ status: "completed", text: "from a again" });
    const events = await log.readStream("session-s1");
    const story = events.flatMap((event) =>
      event.type === "session.config.changed"
        ? [`changed to ${(event.data as { provider: { id: string } }).provider.id}`]
        : event.type === "turn.provider.requested"
          ? [`requested ${(event.data as { providerId: string }).providerId}`]
          : [],
    );
    expect(story).toEqual(["requested model-a", "changed to model-b", "requested model-b", "changed to model-a", "requested model-a"]);
    expect(await a.replay("s1")).toMatchObject({ identical: true });
  });

  it("refuses a session whose held calls need a tool this runtime lacks, and appends nothing", async () => {
    const first = await heldWrite();
    await first.session.approve("call_w", { by: "alice" });
    await first.runtime.close();
    const before = await log.readStream("session-s1");

    const ws = workspace();
    const readOnly = await runtimeWith(scriptedProvider([{ content: "never asked" }], { id: "model-b" }), { tools: [ws.readFile] });
    const refused = readOnly.openSession("s1");
    await expect(refused).rejects.toThrow(SessionStateError);
    await expect(refused).rejects.toThrow(/tools this runtime does not have: write_file/);
    expect(await log.readStream("session-s1")).toEqual(before);
    await readOnly.close();

    // With the tool, the approved call runs: it never becomes `unavailable-tool`.
    const full = await runtimeWith(scriptedProvider([{ content: "done" }], { id: "model-a" }), { tools: ws.tools });
    expect(await (await full.openSession("s1")).resume()).toMatchObject({ status: "completed" });
    expect(ws.ran).toEqual(["write_file notes.md"]);
  });
});

describe("session.outcome()", () => {
  it("is idle before anything was asked", async () => {
    const runtime = await runtimeWith(scriptedProvider([]));
    const session = await runtime.openSession("fresh");
    expect(session.outcome()).toEqual({ status: "idle", pendingApprovals: [] });
  });

  it("needs a resume once the held calls were answered in another process", async () => {
    const here = await heldWrite(scriptedProvider([{ toolCalls: [write("notes.md", "hi")] }, { content: "Wrote them." }], { id: "model-a" }));
    const elsewhere = await runtimeWith(scriptedProvider([], { id: "model-a" }));
    await (await elsewhere.openSession("s1")).approve("call_w", { by: "bob" });

    // The session this process holds learns of the answer when it is opened again.
    const session = await here.runtime.openSession("s1");
    expect(session).toBe(here.session);
    expect(session.outcome()).toEqual({ status: "needs-resume", reason: "approvals-answered", pendingApprovals: [] });
    expect(await session.resume()).toMatchObject({ status: "completed", text: "Wrote them." });
    expect(session.outcome()).toMatchObject({ status: "completed" });
  });

  it("needs a resume after a crash recovered the turn, and resume() finishes it", async () => {
    // The first process dies while the provider is thinking: its request is in the log, no answer.
    let called!: () => void;
    const calling = new Promise<void>((resolve) => (called = resolve));
    const hanging: Provider = {
      id: "model-a",
      format: "openai-chat",
      complete: (_request, { signal }) => {
        called();
        return new Promise((_resolve, reject) => signal.addEventListener("abort", () => reject(signal.reason)));
      },
    };
    const dying = await runtimeWith(hanging);
    const abort = new AbortController();
    const lost = (await dying.openSession("s1")).send("hello", { signal: abort.signal }).catch((error: unknown) => error);
    await calling;

    const recovering = await runtimeWith(scriptedProvider([{ content: "Hello!" }], { id: "model-a" }));
    const session = await recovering.openSession("s1");
    expect(types(await log.readStream("session-s1")).at(-1)).toBe("turn.provider.failed");
    expect(session.outcome()).toEqual({ status: "needs-resume", reason: "unfinished-turn", pendingApprovals: [] });
    expect(await session.resume()).toMatchObject({ status: "completed", text: "Hello!" });

    // The dead process's last word (its cancel) finds the log moved on: it is refused, not interleaved.
    abort.abort();
    expect(ExpectedVersionConflictError.isInstance(await lost)).toBe(true);
    expect(await recovering.replay("s1")).toMatchObject({ identical: true });
  });
});

describe("a session after another writer appended", () => {
  it("fails the operation that hit the conflict, then works on the log's state", async () => {
    const script = (steps: ScriptStep[]) => scriptedProvider(steps, { id: "model-a" });
    const a = await runtimeWith(script([{ content: "one" }, { content: "three" }]));
    const b = await runtimeWith(script([{ content: "two" }]));
    const stale = await a.openSession("s1");
    expect(await stale.send("first")).toMatchObject({ status: "completed", text: "one" });
    expect(await (await b.openSession("s1")).send("second")).toMatchObject({ status: "completed", text: "two" });

    await expect(stale.send("third")).rejects.toThrow(ExpectedVersionConflictError);
    // Reloaded: it holds what the other writer appended, and the next call goes through.
    expect(stale.state().messages.map((message) => message.content)).toEqual(["first", "one", "second", "two"]);
    expect(await stale.send("third")).toMatchObject({ status: "completed", text: "three" });
    expect(await a.replay("s1")).toMatchObject({ identical: true });
  });

  it("openSession returns the session this runtime holds, current with the log", async () => {
    const a = await runtimeWith(scriptedProvider([{ content: "one" }], { id: "model-a" }));
    const b = await runtimeWith(scriptedProvider([{ content: "two" }], { id: "model-a" }));
    const held = await a.openSession("s1");
    await held.send("first");
    await (await b.openSession("s1")).send("second");
    const reopened = await a.openSession("s1");
    expect(reopened).toBe(held);
    expect(reopened.outcome()).toMatchObject({ status: "completed", text: "two" });
  });
});

describe("openSession(id, { create: false })", () => {
  it("throws UnknownSessionError for an ID the log does not hold, and creates nothing", async () => {
    const runtime = await runtimeWith(scriptedProvider([]));
    await expect(runtime.openSession("typo", { create: false })).rejects.toThrow(UnknownSessionError);
    expect(await runtime.listSessions()).toEqual([]);
    expect(await log.streamExists("session-typo")).toBe(false);
  });

  it("opens a session that exists; the default still creates one", async () => {
    const runtime = await runtimeWith(scriptedProvider([]));
    const created = await runtime.openSession("s1");
    await runtime.close();
    const again = await runtimeWith(scriptedProvider([]));
    expect((await again.openSession("s1", { create: false })).id).toBe(created.id);
    await expect(again.openSession(undefined, { create: false })).rejects.toThrow(TypeError);
  });
});
