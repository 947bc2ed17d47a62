import { describe, expect, it } from "vitest";
import { existsSync, readFileSync } from "node:fs";
import net from "node:net";
import { join } from "node:path";
import {
  answerHeldCall,
  createLogReader,
  createRuntime,
  generateSealKey,
  LevelEventLog,
  MemoryEventLog,
  openLog,
  OwnerChannelError,
  SealWitness,
  SessionStateError,
  UnknownSessionError,
  type EventLog,
  type ToolDefinition,
} from "../../src/index.js";
import { scriptedProvider } from "../../src/testing/index.js";
import { deployTool, fakeShell, sequentialIds, steppingClock } from "../support/tools.js";
import { temporary } from "../support/temporary-directories.js";
import { startLogChild } from "../support/log-child-process.js";

/**
 * Issue 33, "answer by ID from anywhere": `openLog(…).approve` / `.deny` record a person's answer
 * as a checked append — no provider, no tools, nothing else written — and the host that owns the
 * session continues the turn from it.
 */

const policy = { approvalMode: "ask" as const, workspace: { root: "/workspace", trusted: true } };
const deploy = { name: "deploy", arguments: '{"version":"v2"}' };

/** Parks session "s1" on a held deploy (or the given call) in a runtime over `log`, and closes the runtime. */
async function park(log: EventLog, tools: ToolDefinition[], call = deploy): Promise<string> {
  const runtime = await createRuntime({ log, provider: scriptedProvider([{ toolCalls: [call] }]), tools, policy, clock: steppingClock(), ids: sequentialIds("p") });
  try {
    const session = await runtime.openSession("s1");
    const outcome = await session.send("ship it");
    expect(outcome.status).toBe("awaiting-approval");
    return outcome.pendingApprovals[0]!.callId;
  } finally {
    await runtime.close();
  }
}

/** Continues "s1" in a new runtime (the host), as autoResume or a worker would. */
async function finish(log: EventLog, tools: ToolDefinition[], reply = "Deployed.") {
  const runtime = await createRuntime({ log, provider: scriptedProvider([{ content: reply }]), tools, policy, clock: steppingClock(Date.UTC(2026, 0, 2)), ids: sequentialIds("f") });
  try {
    const session = await runtime.openSession("s1", { create: false });
    return await session.resume();
  } finally {
    await runtime.close();
  }
}

describe("answering a held call from the read API", () => {
  it("approve appends exactly the answer, and the host's resume runs the tool once; replay is identical", async () => {
    const dir = await temporary("turnlog-answer-");
    const ran: string[] = [];
    const log = await LevelEventLog.open(dir, { durability: "relaxed" });
    const callId = await park(log, [deployTool(ran)]);
    await log.close();

    // The reviewer's process: no provider, no tools.
    const reader = await openLog({ dir });
    const before = (await reader.events("s1")).length;
    const answered = await reader.approve("s1", callId, { by: "ana", note: "go ahead" });
    expect(answered.event).toMatchObject({ type: "turn.approval.granted", data: { callId, by: "ana", note: "go ahead", scope: "call" }, meta: { streamPosition: before + 1 } });
    const after = await reader.events("s1");
    expect(after.map((event) => event.type).slice(before)).toEqual(["turn.approval.granted"]);
    expect(answered.events).toEqual(after.slice(before));
    await reader.close();

    const reopened = await LevelEventLog.open(dir, { durability: "relaxed" });
    try {
      expect(await finish(reopened, [deployTool(ran)])).toMatchObject({ status: "completed", text: "Deployed." });
      expect(ran).toEqual([callId]);
      expect(await createLogReader(reopened, { tools: [deployTool([])] }).replay("s1")).toMatchObject({ identical: true });
      expect(await createLogReader(reopened).audit("s1")).toMatchObject([{ callId, outcome: "succeeded", approval: { granted: true, by: "ana" } }]);
    } finally {
      await reopened.close();
    }
  });

  it("deny records the refusal; the host's resume tells the model and the tool never runs", async () => {
    const log = new MemoryEventLog();
    const ran: string[] = [];
    const callId = await park(log, [deployTool(ran)]);
    const answered = await createLogReader(log).deny("s1", callId, { by: "ana", note: "not today" });
    expect(answered.event).toMatchObject({ type: "turn.approval.denied", data: { callId, by: "ana", note: "not today" } });
    expect(await finish(log, [deployTool(ran)], "Not deployed.")).toMatchObject({ status: "completed" });
    expect(ran).toEqual([]);
    expect(await createLogReader(log).audit("s1")).toMatchObject([{ callId, outcome: "denied" }]);
  });

  it("refuses a call that is not held, an answered one, another fingerprint and an unknown session, appending nothing", async () => {
    const log = new MemoryEventLog();
    const callId = await park(log, [deployTool([])]);
    const reader = createLogReader(log);
    const length = (await reader.events("s1")).length;
    await expect(reader.approve("s1", "no-such-call", { by: "ana" })).rejects.toThrow(SessionStateError);
    await expect(reader.approve("s1", callId, { by: "ana", fingerprint: "0".repeat(64) })).rejects.toThrow(/fingerprint differs/);
    await expect(reader.approve("nobody", callId, { by: "ana" })).rejects.toThrow(UnknownSessionError);
    await expect(reader.approve("s1", callId, { by: "" })).rejects.toThrow(TypeError);
    await expect(reader.approve("s1", callId, { by: "ana", arguments: [] as never })).rejects.toThrow(TypeError);
    expect(await reader.events("s1")).toHaveLength(length);

    const fingerprint = (await reader.view("s1")).pendingApprovals[0]!.decision!.fingerprint;
    await reader.deny("s1", callId, { by: "ana", fingerprint });
    await expect(reader.approve("s1", callId, { by: "bob" })).rejects.toThrow(/not awaiting approval/);
    expect(await reader.events("s1")).toHaveLength(length + 1);
  });

  it("two answers racing on one call: the first is recorded, the second folds again and is refused", async () => {
    const log = new MemoryEventLog();
    const callId = await park(log, [deployTool([])]);
    const results = await Promise.allSettled([createLogReader(log).approve("s1", callId, { by: "ana" }), createLogReader(log).deny("s1", callId, { by: "bob" })]);
    expect(results.filter((result) => result.status === "fulfilled")).toHaveLength(1);
    expect(results.find((result) => result.status === "rejected")).toMatchObject({ reason: expect.any(SessionStateError) });
    const answers = (await createLogReader(log).events("s1")).filter((event) => event.type === "turn.approval.granted" || event.type === "turn.approval.denied");
    expect(answers).toHaveLength(1);
  });

  it("redacts a secret in the note, as the runtime does", async () => {
    const log = new MemoryEventLog();
    const callId = await park(log, [deployTool([])]);
    const { event } = await createLogReader(log).approve("s1", callId, { by: "ana", note: "use OPENAI_API_KEY=sk-proj-abcdefghijklmnopqrstuvwxyz0123456789ABCD" });
    expect(JSON.stringify(event.data)).not.toContain("sk-proj-abcdefghijklmnopqrstuvwxyz0123456789ABCD");
  });

  it("a tool-scope approval of a command tool takes the command from the tool's definition, and is refused without it", async () => {
    const log = new MemoryEventLog();
    const callId = await park(log, [fakeShell().runCommand], { name: "run_command", arguments: '{"command":"git push origin main"}' });
    await expect(createLogReader(log).approve("s1", callId, { by: "ana", scope: "tool" })).rejects.toThrow(/needs the tool's definition/);
    const { event } = await createLogReader(log, { tools: [fakeShell().runCommand] }).approve("s1", callId, { by: "ana", scope: "tool" });
    expect(event.data).toMatchObject({ scope: "tool", commandPrefix: "git push" });
  });

  it("a reader with seals announces and seals the answer: verify finds no unsealed tail", async () => {
    const dir = await temporary("turnlog-answer-sealed-");
    const keys = await temporary("turnlog-answer-keys-");
    const key = generateSealKey();
    const witness = SealWitness.forLogDirectory(dir, { directory: keys });
    const log = await LevelEventLog.open(dir, { durability: "relaxed" });
    const runtime = await createRuntime({ log, provider: scriptedProvider([{ toolCalls: [deploy] }]), tools: [deployTool([])], policy, seals: { key, witness } });
    const parked = await (await runtime.openSession("s1")).send("ship it");
    await runtime.close();
    await log.close();

    const reader = await openLog({ dir, seals: { key, witness } });
    try {
      await reader.approve("s1", parked.pendingApprovals[0]!.callId, { by: "ana" });
      const report = await reader.verify();
      expect(report).toMatchObject({ ok: true, faults: [], unsealed: [] });
    } finally {
      await reader.close();
    }
  });

  for (const holder of ["bare", "no-answers"] as const) {
    it(`a LevelDB log held by a process that records no answers (${holder === "bare" ? "opened bare" : "answers: false"}): the answer fails in one typed error, nothing appended`, async () => {
      const dir = await temporary("turnlog-answer-held-");
      const log = await LevelEventLog.open(dir, { durability: "relaxed" });
      const callId = await park(log, [deployTool([])]);
      const length = (await createLogReader(log).events("s1")).length;
      await log.close();
      const child = startLogChild("log-lock-holder.ts", holder === "bare" ? [dir] : [dir, "no-answers"]);
      try {
        await child.waitForLine((line) => line === "ready");
        expect(existsSync(join(dir, "turnlog-owner.json"))).toBe(holder === "bare");
        const refused = answerHeldCall({ dir }, "s1", callId, { decision: "approve", by: "ana" });
        await expect(refused).rejects.toThrow(OwnerChannelError);
        await expect(refused).rejects.toThrow(holder === "bare" ? /in use by another process \(pid \d+\), which records no answers/ : /in use by another process, which takes no answers/);
      } finally {
        child.child.kill("SIGKILL");
        await child.exited;
      }
      const reader = await openLog({ dir });
      try {
        expect(await reader.events("s1")).toHaveLength(length);
      } finally {
        await reader.close();
      }
    });
  }

  it("a client connected to the owner channel when the log closes is told the log is closing (nothing recorded), not cut off", async () => {
    const dir = await temporary("turnlog-answer-cut-");
    const log = await LevelEventLog.open(dir, { durability: "relaxed" });
    const owner = JSON.parse(readFileSync(join(dir, "turnlog-owner.json"), "utf8")) as { socket: string };
    const socket = net.createConnection(owner.socket);
    await new Promise<void>((resolve, reject) => socket.once("connect", resolve).once("error", reject));
    const received = new Promise<string>((resolve) => {
      let text = "";
      socket.setEncoding("utf8");
      socket.on("data", (chunk: string) => (text += chunk));
      socket.on("close", () => resolve(text));
    });
    const closing = log.close();
    // A client that had not sent its request yet learns that nothing was taken: it answers in the
    // log once the lock is free (answerHeldCall), instead of "closed the connection without a reply".
    expect(await received).toBe('{"closing":true}\n');
    await closing;
  });

  it("an answer given while the process holding the log closes it is recorded once the lock is free, not refused", async () => {
    const dir = await temporary("turnlog-answer-closing-");
    const log = await LevelEventLog.open(dir, { durability: "relaxed" });
    const callId = await park(log, [deployTool([])]);
    await log.close();
    // The holder gives the lock back only once the answer has found the log locked.
    const child = startLogChild("log-lock-holder.ts", [dir, "no-answers", "close-when-tried"]);
    try {
      await child.waitForLine((line) => line === "ready");
      const answered = answerHeldCall({ dir }, "s1", callId, { decision: "deny", by: "ana", note: "not now" });
      await expect(answered).resolves.toMatchObject({ event: { type: "turn.approval.denied", data: { callId, by: "ana", note: "not now" } } });
      expect(await child.exited).toMatchObject({ code: 0 });
    } finally {
      child.child.kill("SIGKILL");
    }
    const reader = await openLog({ dir });
    try {
      expect((await reader.events("s1")).filter((event) => event.type === "turn.approval.denied")).toHaveLength(1);
    } finally {
      await reader.close();
    }
  });

  it("a sealing runtime holding the log records an answer handed through its owner channel with its own redaction and seals", async () => {
    const dir = await temporary("turnlog-answer-owner-");
    const keys = await temporary("turnlog-answer-owner-keys-");
    const key = generateSealKey();
    const witness = SealWitness.forLogDirectory(dir, { directory: keys });
    const secret = "zq-owner-7f3a9c";
    const log = await LevelEventLog.open(dir, { durability: "relaxed" });
    const runtime = await createRuntime({ log, provider: scriptedProvider([{ toolCalls: [deploy] }]), tools: [deployTool([])], policy, seals: { key, witness }, secrets: [secret] });
    try {
      const session = await runtime.openSession("s1");
      const parked = await session.send("ship it");
      const callId = parked.pendingApprovals[0]!.callId;
      // This process holds the log: the answer goes through its channel to its runtime, which records it.
      const recorded = await answerHeldCall({ dir }, "s1", callId, { decision: "approve", by: "ana", note: `tag ${secret} ok` });
      expect(recorded).toMatchObject({ tool: "deploy", stillHeld: [], event: { type: "turn.approval.granted", data: { callId, by: "ana" } } });
      expect(JSON.stringify(recorded.event.data)).not.toContain(secret);
      expect(await session.waitForAnswers()).toMatchObject({ status: "needs-resume" });
      expect(await runtime.verify()).toMatchObject({ ok: true, faults: [], unsealed: [] });
    } finally {
      await runtime.close();
      await log.close();
    }
  });
});
