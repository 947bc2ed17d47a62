import { mkdir, mkdtemp, readFile, rename, rm, symlink, writeFile } from "node:fs/promises";
import { homedir, tmpdir } from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { ConfigError, createRuntime, latestDecisionsVersion, LevelEventLog, parseEvent, workspaceTools } from "../../src/index.js";
import type { Provider, RecordedEvent, Runtime, RuntimeOptions, Session, TurnlogEvent } from "../../src/index.js";
import { MemoryEventLog, scriptedProvider } from "../../src/testing/index.js";
import { formatDecisionChange } from "../../src/replay/what-if.js";
import { sessionHistory } from "../../src/providers/format-history.js";
import { workspace } from "../support/tools.js";

/*
 * Decision versions live (docs/replay.md#decision-versions): what a new session records, how a host
 * pins or upgrades, the first versioned rule (a crash during a provider call does not use up an
 * attempt), decisions that read the log rather than the machine, and tool sets that change.
 */

const typed = (events: readonly RecordedEvent[]): TurnlogEvent[] => events.map((event) => parseEvent(event));
const typesOf = (events: readonly RecordedEvent[]) => events.map((event) => event.type);
const readCall = (id: string, file: string) => ({ id, name: "read_file", arguments: JSON.stringify({ path: file }) });
const writeCall = (id: string, file: string) => ({ id, name: "write_file", arguments: JSON.stringify({ path: file, content: "x" }) });
const noRetryWait = { baseDelayMs: 0, maxDelayMs: 0 };

const runtimes: Runtime[] = [];
const scratch: string[] = [];
afterAll(async () => {
  await Promise.all(runtimes.map((runtime) => runtime.close()));
  await Promise.all(scratch.map((dir) => rm(dir, { recursive: true, force: true })));
});
async function runtimeOf(options: RuntimeOptions): Promise<Runtime> {
  const runtime = await createRuntime(options);
  runtimes.push(runtime);
  return runtime;
}
async function tempDir(prefix: string): Promise<string> {
  const dir = await mkdtemp(path.join(tmpdir(), prefix));
  scratch.push(dir);
  return dir;
}

describe("what a session records", () => {
  it("a new session records the latest decisions version and the temp and home directories its gate reads", async () => {
    const runtime = await runtimeOf({ log: new MemoryEventLog(), provider: scriptedProvider([]) });
    await runtime.openSession("fresh");
    const [started] = typed(await runtime.events("fresh"));
    if (started?.type !== "session.started") throw new Error("expected session.started first");
    expect(started.data.decisionsVersion).toBe(latestDecisionsVersion);
    expect(started.data.environment).toEqual({ tempDir: tmpdir(), homeDir: homedir() });
  });

  it("a host that pins version 1 records sessions as every log before decision versions: no version, no environment", async () => {
    const runtime = await runtimeOf({ log: new MemoryEventLog(), provider: scriptedProvider([{ toolCalls: [readCall("call_a", "a.txt")] }, { content: "ok" }]), tools: workspace().tools, decisionsVersion: 1 });
    const session = await runtime.openSession("pinned");
    expect((await session.send("read a")).status).toBe("completed");
    const events = await runtime.events("pinned");
    expect(events[0]!.data).not.toHaveProperty("decisionsVersion");
    expect(events[0]!.data).not.toHaveProperty("environment");
    expect(typesOf(events)).not.toContain("session.environment.observed");
    expect((await runtime.replay("pinned")).identical).toBe(true);
  });

  it("refuses a version it does not know", async () => {
    await expect(createRuntime({ log: new MemoryEventLog(), provider: scriptedProvider([]), decisionsVersion: latestDecisionsVersion + 1 })).rejects.toThrow(ConfigError);
    await expect(createRuntime({ log: new MemoryEventLog(), provider: scriptedProvider([]), upgradeSessions: "always" as "never" })).rejects.toThrow(/upgradeSessions/);
  });

  // Opening it is refused: test/core/session-decider.test.ts (reopenSession).
  it("replay of a log from a newer turnlog says which version it cannot reproduce", async () => {
    const log = new MemoryEventLog();
    const recorder = await runtimeOf({ log: new MemoryEventLog(), provider: scriptedProvider([]) });
    await recorder.openSession("future");
    const [started] = await recorder.events("future");
    await log.appendToStream("session-future", [{ type: "session.started", data: { ...(started!.data as object), decisionsVersion: latestDecisionsVersion + 1 } }]);
    const runtime = await runtimeOf({ log, provider: scriptedProvider([]) });
    const report = await runtime.replay("future");
    expect(report.identical).toBe(false);
    expect(report.divergences[0]).toMatchObject({ position: 1, path: "data.decisionsVersion", expected: latestDecisionsVersion + 1 });
  });
});

describe("a crash during a provider call does not use up an attempt (version 2)", () => {
  /** Runs a session until its first provider call is in flight, then abandons it there, as a crash would. */
  async function crashDuringProviderCall(log: MemoryEventLog, decisionsVersion: number) {
    const hanging: Provider = { id: "scripted", format: "openai-chat", complete: () => new Promise(() => undefined) };
    const crashed = await createRuntime({ log, provider: hanging, tools: workspace().tools, providerAttempts: 2, decisionsVersion });
    const session = await crashed.openSession("crashed");
    void session.send("read a").catch(() => undefined);
    await expect.poll(async () => typesOf(await log.readStream("session-crashed")).at(-1), { timeout: 60_000 }).toBe("turn.provider.requested");
  }

  for (const version of [1, latestDecisionsVersion]) {
    it(`under version ${version}, the attempt after the crash that fails on its own ${version === 1 ? "ends the turn" : "is followed by one more"}`, async () => {
      const log = new MemoryEventLog();
      await crashDuringProviderCall(log, version);
      const provider = scriptedProvider([{ error: { kind: "transport", retryable: true, message: "connection reset" } }, { content: "recovered" }]);
      const runtime = await runtimeOf({ log, provider, tools: workspace().tools, providerAttempts: 2, providerRetry: noRetryWait, decisionsVersion: version });
      const session = await runtime.openSession("crashed");
      const outcome = await session.resume();
      const failures = typed(await runtime.events("crashed")).flatMap((event) => (event.type === "turn.provider.failed" ? [[event.data.attempt, event.data.kind]] : []));
      expect(failures).toEqual([
        [1, "interrupted"],
        [2, "transport"],
      ]);
      if (version === 1) expect(outcome).toMatchObject({ status: "failed", reason: "provider:transport:retries-exhausted" });
      else expect(outcome).toMatchObject({ status: "completed", text: "recovered" });
      expect((await runtime.replay("crashed")).identical).toBe(true);
    });
  }

  it("still gives up when crashes alone keep interrupting a turn", async () => {
    const log = new MemoryEventLog();
    for (let crash = 0; crash < 3; crash += 1) {
      const hanging: Provider = { id: "scripted", format: "openai-chat", complete: () => new Promise(() => undefined) };
      const runtime = await createRuntime({ log, provider: hanging, tools: workspace().tools, providerAttempts: 2 });
      const session = await runtime.openSession("crash-loop");
      const before = (await log.readStream("session-crash-loop")).length;
      void (crash === 0 ? session.send("read a") : session.resume()).catch(() => undefined);
      await expect.poll(async () => {
        const events = await log.readStream("session-crash-loop");
        return events.length > before && events.at(-1)?.type === "turn.provider.requested";
      }, { timeout: 60_000 }).toBe(true);
    }
    const runtime = await runtimeOf({ log, provider: scriptedProvider([]), tools: workspace().tools, providerAttempts: 2 });
    const outcome = await (await runtime.openSession("crash-loop")).resume();
    expect(outcome.status).toBe("failed");
    expect((await runtime.replay("crash-loop")).identical).toBe(true);
  });
});

describe("upgrading a live session", () => {
  /** A version-1 session holding a write for approval: a turn in flight. */
  async function heldUnderVersion1(log: MemoryEventLog) {
    const provider = scriptedProvider([{ toolCalls: [readCall("call_a", "a.txt"), writeCall("call_w", "c.txt")] }]);
    const runtime = await createRuntime({ log, provider, tools: workspace().tools, decisionsVersion: 1 });
    expect((await (await runtime.openSession("old")).send("read a, write c")).status).toBe("awaiting-approval");
    await runtime.close();
  }

  it("on-resume (the default) upgrades at the session's next turn boundary, never inside a turn", async () => {
    const log = new MemoryEventLog();
    await heldUnderVersion1(log);
    const provider = scriptedProvider([{ content: "wrote c" }, { toolCalls: [readCall("call_b", "b.txt")] }, { content: "b is beta" }]);
    const runtime = await runtimeOf({ log, provider, tools: workspace().tools });
    const session = await runtime.openSession("old");
    // Opening and answering the held call change nothing: the turn in flight is version 1's.
    await session.approve("call_w", { by: "alice" });
    expect(typesOf(await runtime.events("old"))).not.toContain("session.decisions.upgraded");
    expect((await session.resume()).status).toBe("completed");
    expect((await session.send("read b")).status).toBe("completed");

    const events = typed(await runtime.events("old"));
    const upgrades = events.flatMap((event, index) => (event.type === "session.decisions.upgraded" ? [{ index, data: event.data }] : []));
    expect(upgrades.map((upgrade) => upgrade.data)).toEqual([{ from: 1, to: latestDecisionsVersion, environment: { tempDir: tmpdir(), homeDir: homedir() } }]);
    const at = upgrades[0]!.index;
    // Right after turn 1 went on to its next iteration, right before turn 2 started.
    expect(events[at - 1]?.type).toBe("turn.continued");
    expect(events[at + 1]).toMatchObject({ type: "turn.started", data: { turnId: "turn-2" } });
    // Later decisions are version 2's: the gate's real paths are recorded before it judges.
    const observed = events.findIndex((event, index) => index > at && event.type === "session.environment.observed");
    expect(observed).toBeGreaterThan(at);
    expect(events[observed + 1]?.type).toBe("turn.tool_calls.gated");
    expect(events.slice(0, at).some((event) => event.type === "session.environment.observed")).toBe(false);

    expect((await runtime.replay("old")).identical).toBe(true);
    // Nothing in this session is decided differently by version 1 (no crash, no symbolic link).
    expect((await runtime.replay("old", { decisionsVersion: 1 })).changes).toEqual([]);
  });

  it('"never" keeps the session on the version it was recorded under', async () => {
    const log = new MemoryEventLog();
    await heldUnderVersion1(log);
    const provider = scriptedProvider([{ content: "wrote c" }, { toolCalls: [readCall("call_b", "b.txt")] }, { content: "b is beta" }]);
    const runtime = await runtimeOf({ log, provider, tools: workspace().tools, upgradeSessions: "never" });
    const session = await runtime.openSession("old");
    await session.approve("call_w", { by: "alice" });
    await session.resume();
    expect((await session.send("read b")).status).toBe("completed");
    const types = typesOf(await runtime.events("old"));
    expect(types).not.toContain("session.decisions.upgraded");
    expect(types).not.toContain("session.environment.observed");
    expect((await runtime.replay("old")).identical).toBe(true);
  });
});

describe("decisions are pure functions of the log", () => {
  /** A workspace with a symbolic link that leads out of it, and a session that reads through it. */
  async function recordThroughSymlink(decisionsVersion: number) {
    const base = await tempDir("turnlog-pure-");
    const root = path.join(base, "workspace");
    const outside = path.join(base, "outside");
    await mkdir(root);
    await mkdir(outside);
    await writeFile(path.join(root, "notes.md"), "notes");
    await writeFile(path.join(outside, "secret.txt"), "secret");
    await symlink(outside, path.join(root, "linked"));
    const logDir = path.join(base, "log");
    const policy = { approvalMode: "ask" as const, workspace: { root, trusted: true } };
    const provider = scriptedProvider([{ toolCalls: [readCall("call_notes", "notes.md"), readCall("call_link", "linked/secret.txt")] }]);
    const runtime = await createRuntime({ log: await LevelEventLog.open(logDir, { durability: "sync" }), provider, tools: workspaceTools({ root }), policy, decisionsVersion });
    const held = await (await runtime.openSession("pure")).send("read the notes and the linked secret");
    await runtime.log.close();
    await runtime.close();
    return { base, root, logDir, policy, held };
  }

  /** Records the session, moves its log to another directory and deletes everything it ran in. */
  async function recordMoveAndDelete(decisionsVersion: number) {
    const recorded = await recordThroughSymlink(decisionsVersion);
    // The link leads out of the workspace: the gate asked, by the real path it resolved.
    expect(recorded.held.pendingApprovals.map((pending) => [pending.callId, pending.rule])).toEqual([["call_link", "workspace:path-outside-root"]]);
    const elsewhere = await tempDir("turnlog-elsewhere-");
    await rename(recorded.logDir, path.join(elsewhere, "moved"));
    await rm(recorded.base, { recursive: true, force: true });
    const log = await LevelEventLog.open(path.join(elsewhere, "moved"), { durability: "sync" });
    const runtime = await runtimeOf({ log, provider: scriptedProvider([]), tools: workspaceTools({ root: recorded.root }), policy: recorded.policy });
    return { log, runtime };
  }

  it("a session replays identical from a log moved elsewhere after its workspace and temp directories are gone", async () => {
    const { log, runtime } = await recordMoveAndDelete(latestDecisionsVersion);
    expect((await runtime.verify()).ok).toBe(true);
    const report = await runtime.replay("pure");
    expect(report.divergences).toEqual([]);
    expect(report.identical).toBe(true);
    await log.close();
  });

  it("while a version-1 log of the same session read the machine at replay, and no longer replays once the link is gone", async () => {
    const { log, runtime } = await recordMoveAndDelete(1);
    const report = await runtime.replay("pure");
    expect(report.identical).toBe(false);
    expect(report.divergences[0]).toMatchObject({ type: "turn.tool_calls.gated" });
    await log.close();
  });
});

describe('an "always" approval of one shell command (version 3)', () => {
  /** `ls` approved "always", then the model appends to the user's authorized_keys with the same tool. */
  async function alwaysThenAttack(decisionsVersion: number) {
    const base = await tempDir("turnlog-always-");
    const root = path.join(base, "workspace");
    const home = path.join(base, "home");
    await mkdir(root);
    await mkdir(path.join(home, ".ssh"), { recursive: true });
    const keys = path.join(home, ".ssh", "authorized_keys");
    await writeFile(keys, "ssh-ed25519 AAAA alice\n");
    const shell = (id: string, command: string) => ({ id, name: "run_command", arguments: JSON.stringify({ command }) });
    const provider = scriptedProvider([
      { toolCalls: [shell("call_ls", "ls")] },
      { toolCalls: [shell("call_keys", "echo ssh-ed25519 EVIL mallory >> ~/.ssh/authorized_keys")] },
      { content: "done" },
    ]);
    const runtime = await runtimeOf({
      log: new MemoryEventLog(),
      provider,
      tools: workspaceTools({ root, env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: home } }),
      policy: { approvalMode: "ask", workspace: { root, trusted: true } },
      decisionsVersion,
    });
    const session = await runtime.openSession("always");
    expect((await session.send("list the files")).pendingApprovals.map((pending) => pending.callId)).toEqual(["call_ls"]);
    await session.approve("call_ls", { by: "alice", scope: "tool" });
    const outcome = await session.resume();
    return { runtime, outcome, keys: await readFile(keys, "utf8") };
  }

  it("does not let a later command write the user's authorized_keys: it is asked about, and nothing ran", async () => {
    const { runtime, outcome, keys } = await alwaysThenAttack(3);
    expect(outcome.status).toBe("awaiting-approval");
    expect(outcome.pendingApprovals.map((pending) => [pending.callId, pending.rule])).toEqual([["call_keys", "mode:ask"]]);
    expect(keys).toBe("ssh-ed25519 AAAA alice\n");
    const granted = typed(await runtime.events("always")).find((event) => event.type === "turn.approval.granted");
    expect(granted?.data).toMatchObject({ scope: "tool", commandPrefix: "ls" });
    expect((await runtime.replay("always")).identical).toBe(true);
  });

  it("while under version 2 it ran on the approval of `ls`, and the upgrade preview names exactly that call", async () => {
    const { runtime, outcome, keys } = await alwaysThenAttack(2);
    expect(outcome.status).toBe("completed");
    expect(keys).toContain("EVIL mallory");
    expect((await runtime.replay("always")).identical).toBe(true);
    const preview = await runtime.replay("always", { decisionsVersion: 3 });
    expect(preview.changes.filter((change) => change.kind === "call")).toMatchObject([
      { callId: "call_keys", tool: "run_command", before: { decision: "allow", rule: "approval:tool=run_command" }, after: { decision: "ask", rule: "mode:ask" } },
    ]);
  });
});

describe("containment (version 4)", () => {
  it("a known-safe read runs unasked in ask mode, and a write outside the workspace by an uncontained shell is asked about and does not happen", async () => {
    const base = await tempDir("turnlog-contain-");
    const root = path.join(base, "workspace");
    const home = path.join(base, "home");
    await mkdir(root);
    await writeFile(path.join(root, "README.md"), "hello\n");
    await mkdir(path.join(home, ".ssh"), { recursive: true });
    const keys = path.join(home, ".ssh", "authorized_keys");
    await writeFile(keys, "ssh-ed25519 AAAA alice\n");
    const shell = (id: string, command: string) => ({ id, name: "run_command", arguments: JSON.stringify({ command }) });
    const provider = scriptedProvider([
      { toolCalls: [shell("call_ls", "ls"), shell("call_keys", "echo ssh-ed25519 EVIL mallory >> ~/.ssh/authorized_keys")] },
      { content: "done" },
    ]);
    const runtime = await runtimeOf({
      log: new MemoryEventLog(),
      provider,
      tools: workspaceTools({ root, env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: home } }),
      policy: { approvalMode: "full-auto", workspace: { root, trusted: true } },
    });
    const session = await runtime.openSession("contain");
    const outcome = await session.send("list the files");
    expect(outcome.status).toBe("awaiting-approval");
    expect(outcome.pendingApprovals.map((pending) => pending.callId)).toEqual(["call_keys"]);
    const gated = typed(await runtime.events("contain")).find((event) => event.type === "turn.tool_calls.gated");
    expect(gated?.data.decisions).toMatchObject([
      { callId: "call_ls", decision: "allow", rule: "command=safe:read-only", contained: false },
      { callId: "call_keys", decision: "ask", contained: false },
    ]);
    await session.deny("call_keys", { by: "alice" });
    expect((await session.resume()).status).toBe("completed");
    const ended = typed(await runtime.events("contain")).filter((event) => event.type === "turn.tool.started").map((event) => event.data.callId);
    expect(ended).toEqual(["call_ls"]);
    expect(await readFile(keys, "utf8")).toBe("ssh-ed25519 AAAA alice\n");
    expect((await runtime.replay("contain")).identical).toBe(true);
  });
});

describe("the tools a session offered are in its log", () => {
  it("reopening a session with another tool set records session.tools.changed before its next decision, and replays identical", async () => {
    const log = new MemoryEventLog();
    const { readFile, writeFile: writeTool } = workspace();
    const first = await createRuntime({ log, provider: scriptedProvider([{ content: "hi" }]), tools: [readFile] });
    await (await first.openSession("tools")).send("hello");
    await first.close();

    const provider = scriptedProvider([{ toolCalls: [writeCall("call_w", "c.txt")] }]);
    const second = await runtimeOf({ log, provider, tools: [readFile, writeTool] });
    const session = await second.openSession("tools");
    expect((await session.send("write c")).status).toBe("awaiting-approval");
    const events = typed(await second.events("tools"));
    const changes = events.flatMap((event, index) => (event.type === "session.tools.changed" ? [{ index, names: event.data.tools.map((tool) => tool.name) }] : []));
    expect(changes.map((change) => change.names)).toEqual([["read_file", "write_file"]]);
    const requested = events.findLastIndex((event) => event.type === "turn.provider.requested");
    expect(changes[0]!.index).toBeLessThan(requested);
    expect(provider.requests[0]!.tools.map((tool) => tool.name)).toEqual(["read_file", "write_file"]);
    expect((await second.replay("tools")).identical).toBe(true);

    // The same tools again: nothing to record.
    await (await runtimeOf({ log, provider: scriptedProvider([]), tools: [readFile, writeTool] })).openSession("tools");
    expect(typesOf(await log.readStream("session-tools")).filter((type) => type === "session.tools.changed")).toHaveLength(1);
  });
});

describe("token counts of a long piece (version 6)", () => {
  /**
   * The session of the version-6 golden log, with a 369-token budget: a read of 4 000 `~`, a write
   * of 4 000 `+` (its arguments one pre-tokenizer piece of over 4 000 code units), then a question. Version 6 counts the piece in chunks of 256, 5
   * tokens above the encoder's whole count, which version 5 keeps.
   */
  async function banner(decisionsVersion?: number) {
    const provider = scriptedProvider([
      { toolCalls: [{ id: "call_rule", name: "read_file", arguments: JSON.stringify({ path: "rule.txt" }) }] },
      { content: "rule.txt is one long line of tildes." },
      { toolCalls: [{ id: "call_banner", name: "write_file", arguments: JSON.stringify({ path: "banner.txt", content: "+".repeat(4_000) }) }] },
      { content: "wrote the banner." },
      { content: "done." },
    ]);
    const root = await tempDir("turnlog-v6-");
    const runtime = await runtimeOf({
      log: new MemoryEventLog(),
      provider,
      tools: workspace({ "a.txt": "alpha", "rule.txt": "~".repeat(4_000) }).tools,
      policy: { approvalMode: "auto-edit", workspace: { root, trusted: true } },
      history: { maxTokens: 369 },
      ...(decisionsVersion !== undefined ? { decisionsVersion } : {}),
    });
    const session = await runtime.openSession("banner");
    for (const text of ["read rule.txt", "write a banner of plus signs to banner.txt", "what did you write?"]) expect((await session.send(text)).status).toBe("completed");
    const events = typed(await runtime.events("banner"));
    const selected = events.flatMap((event) => (event.type === "session.diagnostic.recorded" && event.data.name === "structured-tool-history-selected" ? [event.data.counts] : []));
    return { runtime, session, events, selected };
  }

  it("a version-5 session counts each text whole, as before version 6; a new session counts the long piece in chunks, and its last request compacts", async () => {
    const five = await banner(5);
    const six = await banner();
    expect(five.events[0]).toMatchObject({ data: { decisionsVersion: 5 } });
    expect(six.events[0]).toMatchObject({ data: { decisionsVersion: latestDecisionsVersion } });
    // The request after the write: the same messages, counted 5 tokens apart.
    expect(six.selected[3]!.estimated_tokens! - five.selected[3]!.estimated_tokens!).toBe(5);
    expect(five.events.map((event) => event.type)).not.toContain("session.history.compacted");
    expect(six.events.filter((event) => event.type === "session.history.compacted")).toHaveLength(1);
    // What session.history() shows counts as the session's own version does.
    const shown = (session: Session) => session.history({ format: "openai-chat" }).diagnostics[0]?.counts.estimated_tokens;
    const counted = (session: Session, version: number) => sessionHistory(session.state(), { format: "openai-chat" }, undefined, version).diagnostics[0]?.counts.estimated_tokens;
    expect(shown(five.session)).toBe(counted(five.session, 5));
    expect(shown(five.session)).not.toBe(counted(five.session, 6));
    expect((await five.runtime.replay("banner")).identical).toBe(true);
    expect((await six.runtime.replay("banner")).identical).toBe(true);
  });

  it("the upgrade preview of the version-5 session lists the request whose history version 6 cuts", async () => {
    const { runtime } = await banner(5);
    const preview = await runtime.replay("banner", { decisionsVersion: "latest" });
    expect(preview.changes.map(formatDecisionChange)).toEqual([expect.stringMatching(/^#\d+ turn-5 history: keep \(every unit\) → compact \(2 units before #\d+\)$/)]);
    expect((await runtime.replay("banner", { decisionsVersion: 5 })).changes).toEqual([]);
  });
});
