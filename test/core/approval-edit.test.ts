import { beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import type { TurnlogEvent } from "../../src/contracts/events.js";
import { SessionFold } from "../../src/core/session-fold.js";
import { decideCommand, type SessionCommand } from "../../src/core/session-decider.js";
import { SessionStateError } from "../../src/errors/session-state-error.js";
import { createRuntime, defineTool } from "../../src/index.js";
import { callFingerprint } from "../../src/policy/fingerprint.js";
import { given, MemoryEventLog, recordForTest, scriptedProvider } from "../../src/testing/index.js";
import { fakeShell, sequentialIds, steppingClock, workspace } from "../support/tools.js";

/*
 * The decider's side of edit on approval (docs/policy.md#edit-on-approval): everything is judged from
 * the session as the log holds it — the recorded schema, policy and environment — so a process
 * without the host's code decides the same as the host.
 */

const saveNote = defineTool({
  name: "save_note",
  description: "Save a note",
  risk: "workspace-write",
  input: z.object({ title: z.string(), body: z.string() }),
  run: () => "saved",
});

/** A session (recorded by a real runtime) holding one call of `tool` for a person, under `decisionsVersion`. */
async function heldSession(call: { name: string; arguments: Record<string, unknown> }, decisionsVersion = 7): Promise<TurnlogEvent[]> {
  const log = new MemoryEventLog({ clock: steppingClock(), ids: sequentialIds("event") });
  const runtime = await createRuntime({
    log,
    provider: scriptedProvider([{ toolCalls: [{ id: "c1", name: call.name, arguments: JSON.stringify(call.arguments) }] }]),
    tools: [saveNote, fakeShell().runCommand, ...workspace().tools],
    policy: { approvalMode: "ask", workspace: { root: "/workspace", trusted: true } },
    clock: steppingClock(),
    decisionsVersion,
  });
  const session = await runtime.openSession("s1");
  const outcome = await session.send("go");
  expect(outcome.status).toBe("awaiting-approval");
  const events = (await runtime.events("s1")).map(({ type, data }) => ({ type, data }) as TurnlogEvent);
  await runtime.close();
  return events;
}

/** The refusal a command meets on the given events (its message names the reason or the rule). */
function refusalOf(events: readonly TurnlogEvent[], command: SessionCommand): string {
  const fold = new SessionFold();
  for (const event of recordForTest(events)) fold.apply(event);
  fold.settle();
  try {
    decideCommand(command, fold);
  } catch (error) {
    if (error instanceof SessionStateError) return error.message;
    throw error;
  }
  throw new Error("the command was not refused");
}

const proposed = { title: "groceries", body: "milk" };
let held: TurnlogEvent[];
let heldV6: TurnlogEvent[];
let heldWrite: TurnlogEvent[];
beforeAll(async () => {
  held = await heldSession({ name: "save_note", arguments: proposed });
  heldV6 = await heldSession({ name: "save_note", arguments: proposed }, 6);
  heldWrite = await heldSession({ name: "write_file", arguments: { path: "a.txt", content: "x" } });
});

describe("decideCommand: approveCall with edited arguments", () => {
  it("records the edited arguments, the edited call's fingerprint and the proposed one the person reviewed", () => {
    const edited = { title: "groceries", body: "milk and eggs" };
    given(held)
      .when({ type: "approveCall", callId: "c1", by: "ann", note: "added eggs", fingerprint: callFingerprint("save_note", proposed), arguments: edited })
      .then([
        {
          type: "turn.approval.granted",
          data: {
            turnId: "turn-1",
            callId: "c1",
            fingerprint: callFingerprint("save_note", edited),
            by: "ann",
            scope: "call",
            note: "added eggs",
            arguments: edited,
            proposedFingerprint: callFingerprint("save_note", proposed),
          },
        },
      ]);
  });

  it("the arguments as proposed are an ordinary approval", () => {
    given(held)
      .when({ type: "approveCall", callId: "c1", by: "ann", arguments: { body: "milk", title: "groceries" } })
      .then([{ type: "turn.approval.granted", data: { turnId: "turn-1", callId: "c1", fingerprint: callFingerprint("save_note", proposed), by: "ann", scope: "call" } }]);
  });

  it("the reviewed fingerprint must still be the proposed call's", () => {
    given(held).when({ type: "approveCall", callId: "c1", by: "ann", fingerprint: callFingerprint("save_note", { title: "x", body: "y" }), arguments: { title: "x", body: "y" } }).thenThrows(SessionStateError);
  });

  it("arguments the recorded schema refuses are refused, naming the field", () => {
    const command: SessionCommand = { type: "approveCall", callId: "c1", by: "ann", arguments: { title: "groceries", body: 7 } };
    given(held).when(command).thenThrows(SessionStateError);
    expect(refusalOf(held, command)).toMatch(/do not match the input schema of save_note \(body: /);
    expect(refusalOf(held, { type: "approveCall", callId: "c1", by: "ann", arguments: { title: "groceries" } })).toMatch(/input schema of save_note/);
  });

  it("arguments that are not a JSON object, hold half a character or hold a secret are refused", () => {
    expect(refusalOf(held, { type: "approveCall", callId: "c1", by: "ann", arguments: ["a"] as unknown as Record<string, unknown> })).toMatch(/are a JSON object/);
    expect(refusalOf(held, { type: "approveCall", callId: "c1", by: "ann", arguments: { title: "half \ud83d", body: "b" } })).toMatch(/lone surrogate/);
    expect(refusalOf(held, { type: "approveCall", callId: "c1", by: "ann", arguments: { title: "key", body: "sk-ant-api03-abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGH" } })).toMatch(/hold a secret/);
  });

  it("an edited approval covers this call only: scope \"tool\" is refused", () => {
    given(held).when({ type: "approveCall", callId: "c1", by: "ann", scope: "tool", arguments: { title: "t", body: "b" } }).thenThrows(SessionStateError);
  });

  it("a session under decisions version 6 refuses an edit in one line, and an answer as proposed is taken", () => {
    const command: SessionCommand = { type: "approveCall", callId: "c1", by: "ann", arguments: { title: "t", body: "b" } };
    given(heldV6).when(command).thenThrows(SessionStateError);
    const message = refusalOf(heldV6, command);
    expect(message).toMatch(/decisions version 6: approving with edited arguments needs version 7/);
    expect(message).not.toContain("\n");
    given(heldV6)
      .when({ type: "approveCall", callId: "c1", by: "ann" })
      .then([{ type: "turn.approval.granted", data: { turnId: "turn-1", callId: "c1", fingerprint: callFingerprint("save_note", proposed), by: "ann", scope: "call" } }]);
  });

  it("without the host's code, an edit of a tool whose gate reads path arguments is left to the process that runs the session", () => {
    const command: SessionCommand = { type: "approveCall", callId: "c1", by: "ann", arguments: { path: "b.txt", content: "y" } };
    given(heldWrite).when(command).thenThrows(SessionStateError);
    expect(refusalOf(heldWrite, command)).toMatch(/path arguments with the host's code/);
  });

  it("with the owner's tool, the gate judges the edited path: outside the workspace is blocked, inside is recorded", () => {
    const { writeFile } = workspace();
    const lexical = (absolute: string) => absolute;
    const noLinks = () => [];
    const outside: SessionCommand = { type: "approveCall", callId: "c1", by: "ann", arguments: { path: "../etc/passwd", content: "y" }, owner: { tool: writeFile, observeRealPath: lexical, observeGitLinks: noLinks } };
    given(heldWrite).when(outside).thenThrows(SessionStateError);
    expect(refusalOf(heldWrite, outside)).toMatch(/gate would block the edited call \(rule hard-block:path-outside-workspace\)/);

    const inside: SessionCommand = { type: "approveCall", callId: "c1", by: "ann", arguments: { path: "b.txt", content: "y" }, owner: { tool: writeFile, observeRealPath: lexical, observeGitLinks: noLinks } };
    // What the gate observed of this machine (a path the log had not resolved) is recorded ahead
    // of the approval, in the same append, so replay reads the log where the answer read the disk.
    given(heldWrite)
      .when(inside)
      .then([
        { type: "session.environment.observed", data: { realPaths: [{ path: "/workspace/b.txt", realPath: "/workspace/b.txt" }] } },
        {
          type: "turn.approval.granted",
          data: {
            turnId: "turn-1",
            callId: "c1",
            fingerprint: callFingerprint("write_file", { path: "b.txt", content: "y" }),
            by: "ann",
            scope: "call",
            arguments: { path: "b.txt", content: "y" },
            proposedFingerprint: callFingerprint("write_file", { path: "a.txt", content: "x" }),
          },
        },
      ]);
  });
});

describe("an edit never widens the policy", () => {
  it("a held command edited into a forbidden one is blocked with the owner's tool, and left to the owner without it", async () => {
    const { runCommand } = fakeShell();
    const events = await heldSession({ name: "run_command", arguments: { command: "npm install" } });
    const forbidden: SessionCommand = { type: "approveCall", callId: "c1", by: "ann", arguments: { command: "rm -rf /" }, owner: { tool: runCommand } };
    given(events).when(forbidden).thenThrows(SessionStateError);
    expect(refusalOf(events, forbidden)).toMatch(/gate would block the edited call \(rule hard-block:command=/);
    expect(refusalOf(events, { ...forbidden, owner: {} })).toMatch(/shell text with the host's code/);
  });
});
