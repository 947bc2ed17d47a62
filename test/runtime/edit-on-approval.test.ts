import { mkdtemp, readFile, rm, symlink } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { createRuntime, LevelEventLog, SessionStateError, workspaceTools } from "../../src/index.js";
import type { EventLog } from "../../src/index.js";
import { scriptedProvider } from "../../src/testing/index.js";
import type { ScriptStep } from "../../src/testing/index.js";
import { sequentialIds, steppingClock } from "../support/tools.js";

/*
 * Edit on approval (docs/policy.md#edit-on-approval): a person approves a held call with changed
 * arguments; the tool runs with them, both histories and the audit show them, replay is identical,
 * and an edit the gate would deny or block — or one the tool's schema refuses — records nothing.
 */

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

const writeCall = (path: string, content: string) => ({ id: "call_write", name: "write_file", arguments: JSON.stringify({ path, content }) });

async function setup(script: ScriptStep[], options: { decisionsVersion?: number; secrets?: string[] } = {}) {
  const root = await mkdtemp(join(tmpdir(), "turnlog-edit-ws-"));
  const logDirectory = await mkdtemp(join(tmpdir(), "turnlog-edit-log-"));
  const log: EventLog = await LevelEventLog.open(logDirectory);
  const provider = scriptedProvider(script);
  const runtime = await createRuntime({
    log,
    provider,
    tools: workspaceTools({ root }),
    policy: { approvalMode: "ask", workspace: { root, trusted: true } },
    ...(options.secrets !== undefined ? { secrets: options.secrets } : {}),
    clock: steppingClock(),
    ids: sequentialIds("session"),
    ...(options.decisionsVersion !== undefined ? { decisionsVersion: options.decisionsVersion } : {}),
  });
  cleanups.push(async () => {
    await runtime.close();
    await rm(root, { recursive: true, force: true });
    await rm(logDirectory, { recursive: true, force: true });
  });
  const session = await runtime.openSession("s1");
  return { root, log, provider, runtime, session };
}

describe("session.approve with edited arguments", () => {
  it("runs the tool with the edited arguments; both histories, the audit and replay show the call as it ran", async () => {
    const { root, provider, runtime, session } = await setup([{ toolCalls: [writeCall("notes.md", "draft with a typo")] }, { content: "saved" }]);
    const held = await session.send("save my notes");
    expect(held.status).toBe("awaiting-approval");
    const call = held.pendingApprovals[0]!;

    await session.approve(call.callId, { by: "ann", note: "fixed the typo", fingerprint: call.fingerprint, arguments: { path: "notes.md", content: "final text" } });
    const outcome = await session.resume();
    expect(outcome).toMatchObject({ status: "completed", text: "saved" });

    // The file holds what the person approved, not what the model proposed.
    expect(await readFile(join(root, "notes.md"), "utf8")).toBe("final text");

    // The model's next request shows its call as it ran, beside its result.
    const sent = provider.requests.at(-1)?.messages as { role: string; tool_calls?: { function: { arguments: string } }[] }[];
    const assistant = sent.find((message) => message.role === "assistant" && message.tool_calls !== undefined);
    expect(JSON.parse(assistant!.tool_calls![0]!.function.arguments)).toEqual({ path: "notes.md", content: "final text" });

    for (const format of ["openai-chat", "anthropic-messages"] as const) {
      const text = JSON.stringify(session.history({ format }).messages);
      expect(text, format).toContain("final text");
      expect(text, format).not.toContain("draft with a typo");
    }

    // The audit shows what was proposed, what ran, and who edited it.
    const [row] = await runtime.audit("s1");
    expect(row).toMatchObject({
      tool: "write_file",
      decision: "ask",
      outcome: "succeeded",
      approvedBy: "ann",
      edited: { by: "ann", proposed: { path: "notes.md", content: "draft with a typo" }, ran: { path: "notes.md", content: "final text" } },
    });

    // The approval binds to the edited call; the reviewed (proposed) fingerprint stays beside it.
    const events = await runtime.events("s1");
    const grantedEvent = events.find((event) => event.type === "turn.approval.granted");
    expect(grantedEvent?.data).toMatchObject({ arguments: { path: "notes.md", content: "final text" }, proposedFingerprint: call.fingerprint });
    expect((grantedEvent?.data as { fingerprint: string }).fingerprint).not.toBe(call.fingerprint);

    expect(await runtime.replay("s1")).toMatchObject({ identical: true });
    provider.assertConsumed();
  });

  it("refuses an edit the gate would block — a path outside the workspace — and records nothing", async () => {
    const { root, runtime, session } = await setup([{ toolCalls: [writeCall("notes.md", "text")] }]);
    const held = await session.send("save");
    const call = held.pendingApprovals[0]!;
    const before = (await runtime.events("s1")).length;
    const outside = join(root, "..", "outside.txt");

    const refusal = session.approve(call.callId, { by: "ann", arguments: { path: outside, content: "text" } });
    await expect(refusal).rejects.toThrow(SessionStateError);
    await expect(refusal).rejects.toThrow(/hard-block:path-outside-workspace/);
    expect((await runtime.events("s1")).length).toBe(before);
    expect(session.state().calls.get(call.callId)?.status).toBe("awaiting-approval");
  });

  it("refuses an edit through a symlink that leaves the workspace: the gate resolves it on this machine", async () => {
    const { root, runtime, session } = await setup([{ toolCalls: [writeCall("notes.md", "text")] }]);
    const elsewhere = await mkdtemp(join(tmpdir(), "turnlog-edit-elsewhere-"));
    cleanups.push(() => rm(elsewhere, { recursive: true, force: true }));
    await symlink(elsewhere, join(root, "shared"));
    const held = await session.send("save");
    const before = (await runtime.events("s1")).length;

    await expect(session.approve(held.pendingApprovals[0]!.callId, { by: "ann", arguments: { path: "shared/x.txt", content: "text" } })).rejects.toThrow(
      /hard-block:path-outside-workspace/,
    );
    expect((await runtime.events("s1")).length).toBe(before);
  });

  it("an edited call the gate would ask about is covered by this approval: the person approved exactly it", async () => {
    const { root, session } = await setup([{ toolCalls: [writeCall("notes.md", "text")] }, { content: "done" }]);
    const held = await session.send("save");
    await session.approve(held.pendingApprovals[0]!.callId, { by: "ann", arguments: { path: "docs/notes.md", content: "moved" } });
    expect(await session.resume()).toMatchObject({ status: "completed" });
    expect(await readFile(join(root, "docs/notes.md"), "utf8")).toBe("moved");
  });

  it("refuses an edit that does not match the tool's recorded schema, naming the field", async () => {
    const { runtime, session } = await setup([{ toolCalls: [writeCall("notes.md", "text")] }]);
    const held = await session.send("save");
    const before = (await runtime.events("s1")).length;
    await expect(session.approve(held.pendingApprovals[0]!.callId, { by: "ann", arguments: { path: "notes.md", content: 42 } })).rejects.toThrow(/input schema of write_file.*content/);
    expect((await runtime.events("s1")).length).toBe(before);
  });

  it("refuses an edit of a command into a forbidden one, naming the rule, and records nothing", async () => {
    const { runtime, session } = await setup([{ toolCalls: [{ id: "call_cmd", name: "run_command", arguments: JSON.stringify({ command: "npm install" }) }] }]);
    const held = await session.send("install");
    expect(held.status).toBe("awaiting-approval");
    const before = (await runtime.events("s1")).length;
    await expect(session.approve(held.pendingApprovals[0]!.callId, { by: "ann", arguments: { command: "rm -rf /" } })).rejects.toThrow(/hard-block:command=/);
    expect((await runtime.events("s1")).length).toBe(before);
  });

  it("refuses edited arguments holding a secret the host registered: the log never stores it", async () => {
    const { runtime, session } = await setup([{ toolCalls: [writeCall("notes.md", "text")] }], { secrets: ["correct-horse-battery-staple"] });
    const held = await session.send("save");
    const before = (await runtime.events("s1")).length;
    await expect(session.approve(held.pendingApprovals[0]!.callId, { by: "ann", arguments: { path: "notes.md", content: "password correct-horse-battery-staple" } })).rejects.toThrow(/hold a secret/);
    expect((await runtime.events("s1")).length).toBe(before);
  });

  it("a session under decisions version 6 refuses an edit in one line, and takes the plain approval", async () => {
    const { root, session } = await setup([{ toolCalls: [writeCall("notes.md", "as proposed")] }, { content: "done" }], { decisionsVersion: 6 });
    const held = await session.send("save");
    const call = held.pendingApprovals[0]!;
    const refusal = session.approve(call.callId, { by: "ann", arguments: { path: "notes.md", content: "edited" } });
    await expect(refusal).rejects.toThrow(SessionStateError);
    await expect(refusal).rejects.toThrow(/decisions version 6: approving with edited arguments needs version 7/);
    await session.approve(call.callId, { by: "ann" });
    await session.resume();
    expect(await readFile(join(root, "notes.md"), "utf8")).toBe("as proposed");
  });
});
