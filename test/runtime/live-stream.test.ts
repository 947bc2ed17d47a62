import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, describe, expect, expectTypeOf, it } from "vitest";
import { createRuntime, LevelEventLog } from "../../src/index.js";
import type { DeltaContext, DiscardedAttempt, EventLog, RecordedTurnlogEvent } from "../../src/index.js";
import type { ScriptStep } from "../../src/testing/index.js";
import { MemoryEventLog, scriptedProvider } from "../../src/testing/index.js";
import { exampleSecrets } from "../support/secret-examples.js";
import { sequentialIds, steppingClock, workspace } from "../support/tools.js";

const directories: string[] = [];
const logs: EventLog[] = [];

afterEach(async () => {
  for (const log of logs.splice(0)) await log.close();
  for (const directory of directories.splice(0)) await rm(directory, { recursive: true, force: true });
});

async function levelLog(): Promise<LevelEventLog> {
  const directory = await mkdtemp(path.join(tmpdir(), "turnlog-live-"));
  directories.push(directory);
  const log = await LevelEventLog.open(directory, { durability: "relaxed" });
  logs.push(log);
  return log;
}

const read = (file: string) => ({ name: "read_file", arguments: JSON.stringify({ path: file }) });

async function setup(script: ScriptStep[], extra: { onDelta?: (text: string, context: DeltaContext) => void; onAttemptDiscarded?: (attempt: DiscardedAttempt) => void } = {}) {
  const log = await levelLog();
  const runtime = await createRuntime({
    log,
    provider: scriptedProvider(script),
    tools: workspace().tools,
    clock: steppingClock(),
    ids: sequentialIds("session"),
    providerRetry: { baseDelayMs: 0, maxDelayMs: 0 },
    ...extra,
  });
  return { log, runtime, session: await runtime.openSession("s1") };
}

describe("session.events (the live stream)", () => {
  it("yields what was recorded, then what is appended, every position once and in order, typed", async () => {
    const { runtime, session } = await setup([{ content: "first" }, { toolCalls: [read("a.txt")] }, { content: "second" }]);
    await session.send("one");
    const controller = new AbortController();
    const seen: RecordedTurnlogEvent[] = [];
    const texts: string[] = [];
    const following = (async () => {
      for await (const event of session.events({ signal: controller.signal })) {
        seen.push(event);
        // No cast: the type narrows the data.
        if (event.type === "turn.completed") {
          expectTypeOf(event.data.text).toEqualTypeOf<string>();
          texts.push(event.data.text);
          if (texts.length === 2) controller.abort();
        }
      }
    })();
    await session.send("two");
    await following;
    const recorded = await runtime.events("s1");
    expect(seen.map((event) => event.meta.streamPosition)).toEqual(recorded.map((event) => event.meta.streamPosition));
    expect(seen.map((event) => event.type)).toEqual(recorded.map((event) => event.type));
    expect(texts).toEqual(["first", "second"]);
  });

  it("starts after the position a late-joining UI already shows", async () => {
    const { runtime, session } = await setup([{ content: "first" }, { content: "second" }]);
    await session.send("one");
    const shown = (await runtime.events("s1")).length;
    const controller = new AbortController();
    const events = session.events({ after: shown, signal: controller.signal });
    await session.send("two");
    const next = await events.next();
    expect(next.done).toBe(false);
    expect(next.value?.meta.streamPosition).toBe(shown + 1);
    expect(next.value?.type).toBe("session.user_message.added");
    controller.abort();
    expect((await events.next()).done).toBe(true);
  });

  it("ends a loop waiting for the next event when the host returns the iterator", async () => {
    const { session } = await setup([{ content: "first" }]);
    await session.send("one");
    const events = session.events();
    let count = 0;
    for await (const event of events) {
      count += 1;
      if (event.type === "turn.completed") break;
    }
    expect(count).toBeGreaterThan(3);
    const waiting = events.next();
    await events.return?.();
    expect(await waiting).toEqual({ done: true, value: undefined });
  });
});

describe("deltas tagged with their attempt, and discarded attempts said", () => {
  // An OpenAI stream that broke off after some text: the attempt fails as incomplete-stream.
  const brokenStream: ScriptStep = { chunks: [{ choices: [{ index: 0, delta: { content: "partial answ" } }] }], done: false };

  it("tags each delta with its session, turn and attempt, and says when an attempt's text was thrown away", async () => {
    const heard: string[] = [];
    const deltas: [string, DeltaContext][] = [];
    const discarded: DiscardedAttempt[] = [];
    const { session } = await setup([brokenStream, { content: "full answer" }], {
      onDelta: (text, context) => {
        heard.push(`delta ${context.attempt}`);
        deltas.push([text, context]);
      },
      onAttemptDiscarded: (attempt) => {
        heard.push(`discarded ${attempt.attempt}`);
        discarded.push(attempt);
      },
    });
    expect(await session.send("hi")).toMatchObject({ status: "completed", text: "full answer" });
    const turnId = session.state().turns[0]?.turnId ?? "";
    expect(deltas).toEqual([
      ["partial answ", { sessionId: "s1", turnId, attempt: 1 }],
      ["full answer", { sessionId: "s1", turnId, attempt: 2 }],
    ]);
    expect(discarded).toEqual([{ sessionId: "s1", turnId, attempt: 1, reason: "incomplete-stream", retryable: true, streamedChars: 12 }]);
    expect(heard).toEqual(["delta 1", "discarded 1", "delta 2"]);
  });

  it("says an attempt was discarded when its tool calls were cut off by the length limit", async () => {
    const discarded: DiscardedAttempt[] = [];
    const { session } = await setup([{ content: "let me read", toolCalls: [read("a.txt")], finishReason: "length" }, { content: "done" }], {
      onDelta: () => {},
      onAttemptDiscarded: (attempt) => discarded.push(attempt),
    });
    await session.send("hi");
    expect(discarded).toMatchObject([{ attempt: 1, reason: "truncated-tool-calls", streamedChars: "let me read".length }]);
  });

  it("says nothing for a failed attempt that streamed no text", async () => {
    const discarded: DiscardedAttempt[] = [];
    const { session } = await setup([{ error: { kind: "timeout" } }, { content: "done" }], { onDelta: () => {}, onAttemptDiscarded: (attempt) => discarded.push(attempt) });
    await session.send("hi");
    expect(discarded).toEqual([]);
  });
});

describe("the failure message of a failed SendOutcome", () => {
  it("carries the turn.failed message, redacted as the log holds it", async () => {
    const secret = exampleSecrets["openai-key"];
    const runtime = await createRuntime({
      log: new MemoryEventLog(),
      provider: scriptedProvider([{ error: { kind: "http-status", retryable: false, status: 401, message: `401 Unauthorized: bad key ${secret}` } }]),
      providerRetry: { baseDelayMs: 0, maxDelayMs: 0 },
    });
    const session = await runtime.openSession("s1");
    const outcome = await session.send("hi");
    expect(outcome.status).toBe("failed");
    expect(outcome.message).toMatch(/^401 Unauthorized: bad key /);
    expect(outcome.message).not.toContain(secret);
    const failed = (await runtime.events("s1")).find((event) => event.type === "turn.failed");
    expect(outcome.message).toBe((failed?.data as { message?: string }).message);
    expect(session.outcome()).toEqual(outcome);
  });
});
