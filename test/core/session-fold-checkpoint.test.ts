import { describe, expect, it } from "vitest";
import { createRuntime } from "../../src/index.js";
import type { RecordedTurnlogEvent } from "../../src/log/event-log.js";
import { SessionFold } from "../../src/core/session-fold.js";
import { UnexpectedEventError } from "../../src/errors/unexpected-event-error.js";
import { recordForTest } from "../../src/testing/given-when-then.js";
import { MemoryEventLog, scriptedProvider } from "../../src/testing/index.js";
import { providerRequested, providerResponded, sessionStarted, toolStarted, turnStarted, userMessage } from "../support/events.js";
import { sequentialIds, steppingClock, workspace } from "../support/tools.js";

/** A real recorded session: a turn of reads, a turn whose write waits for a person, then an answer. */
async function recordedSession(): Promise<RecordedTurnlogEvent[]> {
  const ws = workspace();
  const provider = scriptedProvider([
    { toolCalls: [{ name: "read_file", arguments: '{"path":"a.txt"}' }, { name: "read_file", arguments: '{"path":"b.txt"}' }] },
    { toolCalls: [{ name: "write_file", arguments: '{"path":"c.txt","content":"x"}' }] },
    { content: "done" },
  ]);
  const log = new MemoryEventLog({ clock: steppingClock(), ids: sequentialIds("event") });
  const runtime = await createRuntime({ log, provider, tools: ws.tools, clock: steppingClock() });
  const session = await runtime.openSession("p1");
  const outcome = await session.send("go");
  expect(outcome.status).toBe("awaiting-approval");
  if (outcome.status !== "awaiting-approval") return [];
  for (const call of outcome.pendingApprovals) await session.approve(call.callId, { by: "p" });
  expect((await session.resume()).status).toBe("completed");
  return [...(await runtime.events("p1"))];
}

/** What a reader of the fold sees. */
function view(fold: SessionFold) {
  return { state: fold.state, turnState: fold.turnState, pending: fold.pending, context: fold.turn?.context };
}

/** A fold that saw exactly these events, read after each one as the live loop reads it. */
function foldOf(events: readonly RecordedTurnlogEvent[]): SessionFold {
  const fold = new SessionFold();
  for (const event of events) {
    fold.apply(event);
    void fold.pending;
  }
  return fold;
}

describe("SessionFold checkpoint and restore", () => {
  it("puts the fold back exactly where it was, at every point of a session, and it folds on from there", async () => {
    const events = await recordedSession();
    expect(events.some((event) => event.type === "turn.approval.granted")).toBe(true);
    for (let at = 0; at < events.length; at += 1) {
      const fold = foldOf(events.slice(0, at));
      const checkpoint = fold.checkpoint();
      // Fold a few events ahead (as decisions folded before their append), then undo them.
      for (const event of events.slice(at, at + 4)) {
        fold.apply(event);
        void fold.pending;
      }
      fold.restore(checkpoint);
      expect(view(fold)).toEqual(view(foldOf(events.slice(0, at))));
      // Folding on from the restored point ends where a fold that never saw the undone events ends.
      for (const event of events.slice(at)) {
        fold.apply(event);
        void fold.pending;
      }
      expect(view(fold)).toEqual(view(foldOf(events)));
    }
  });

  it("undoes events the machine had not checked yet (a bulk fold), and can be restored to twice", async () => {
    const events = await recordedSession();
    const runsTools = events.findIndex((event) => event.type === "turn.tool.started");
    const fold = new SessionFold();
    // Not read in between: the open turn's events wait unchecked in the fold's backlog.
    for (const event of events.slice(0, runsTools)) fold.apply(event);
    const checkpoint = fold.checkpoint();
    for (const event of events.slice(runsTools, runsTools + 3)) fold.apply(event);
    fold.restore(checkpoint);
    expect(view(fold)).toEqual(view(foldOf(events.slice(0, runsTools))));

    for (const event of events.slice(runsTools, runsTools + 2)) fold.apply(event);
    fold.restore(checkpoint);
    expect(view(fold)).toEqual(view(foldOf(events.slice(0, runsTools))));
  });

  it("after a restore, other events than the undone ones fold as if they had come first", () => {
    const start = [sessionStarted(), userMessage(), turnStarted(), providerRequested()];
    const fold = foldOf(recordForTest(start));
    const checkpoint = fold.checkpoint();
    fold.apply(recordForTest([...start, providerResponded([{ id: "a", name: "read_file", argumentsText: "{}" }])]).at(-1)!);
    expect(fold.turnState).toBe("normalizing");
    fold.restore(checkpoint);
    const answered = recordForTest([...start, providerResponded([], "hello")]);
    fold.apply(answered.at(-1)!);
    expect(view(fold)).toEqual(view(foldOf(answered)));
    expect(fold.pending).toEqual(["completeTurn"]);
  });

  it("is refused on a mutable fold, whose state changes in place", () => {
    const fold = new SessionFold({ mutable: true });
    expect(() => fold.checkpoint()).toThrow(TypeError);
    expect(() => new SessionFold().restore(fold as never)).toThrow(TypeError);
    expect(() => new SessionFold().restore(new SessionFold().checkpoint())).toThrow(/another fold/);
  });
});

describe("SessionFold turn machine", () => {
  it("hands out the active turn as an XState snapshot that answers `can` as the machine does", () => {
    const fold = foldOf(recordForTest([sessionStarted(), userMessage(), turnStarted(), providerRequested()]));
    const turn = fold.turn;
    expect(turn?.value).toBe("finalizing");
    expect(turn?.context.attempt).toBe(1);
    expect(turn?.can({ type: "turn.provider.responded", data: { turnId: "turn-1", attempt: 1, content: "", toolCalls: [], finishReason: "stop" } })).toBe(true);
    expect(turn?.can({ type: "turn.tool.started", data: { turnId: "turn-1", callId: "a", tool: "read_file", group: 0 } })).toBe(false);
    // Read twice without an event between: the same snapshot.
    expect(fold.turn).toBe(turn);
  });

  it("refuses an event the state does not take, naming its position, type and the machine state", () => {
    const events = recordForTest([sessionStarted(), userMessage(), turnStarted(), providerRequested(), toolStarted("a")]);
    const fold = foldOf(events.slice(0, -1));
    const refused = events.at(-1)!;
    let error: unknown;
    try {
      fold.apply(refused);
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(UnexpectedEventError);
    expect(error).toMatchObject({ position: refused.meta.streamPosition, type: "turn.tool.started", machineState: '"finalizing"' });
    // Between turns, it says so.
    const idle = foldOf(events.slice(0, 2));
    expect(() => idle.apply(events[3]!)).toThrow(/no active turn/);
  });
});
