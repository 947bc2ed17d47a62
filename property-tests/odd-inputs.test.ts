/**
 * Nothing a tool, a person or a provider hands in wedges a session (docs/log.md, "Event data"):
 * strings with lone surrogates anywhere, values that are not JSON (BigInt, functions, symbols,
 * non-finite numbers, cycles, objects without a prototype) as tool output, thrown errors, tool
 * metadata, user text, approval answers, host-routed calls, provider errors and thrown provider
 * values — and, on top, a storage failure at an arbitrary append. Every `send`, `resume`,
 * `runTool`, `approve` and `deny` either completes or rejects with a `TurnlogError`; the log
 * verifies; after a last `resume()` in the same process no call is left started without an
 * outcome; the session replays identical; and a new runtime opening the log finds nothing to
 * recover.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { createRuntime, defineTool, LogWriteError, ProviderError, TurnlogError } from "../src/index.js";
import type { EventLog, Provider, SendOutcome, Session, ToolResult } from "../src/index.js";
import { MemoryEventLog, scriptedProvider } from "../src/testing/index.js";
import type { ScriptStep } from "../src/testing/index.js";
import { sequentialIds, steppingClock } from "../test/support/tools.js";
import { withAppend } from "../test/support/with-append.js";

/** Text with lone surrogates, pairs, and the characters of a JSON escape of one. */
const oddText = fc.oneof(
  fc.string({ unit: "binary", maxLength: 20 }),
  fc.string({ unit: fc.constantFrom("a", " ", "\ud800", "\udc00", "\ud83d", "😀", "\\", "u", "d", "8"), maxLength: 12 }),
  fc.constant("hello 😀".slice(0, 7)),
);

/** A value that is not JSON, alone or inside JSON. */
const notJson = fc.oneof(
  fc.bigInt(),
  fc.constant(() => "a function"),
  fc.constant(Symbol("odd")),
  fc.constantFrom(Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY),
  fc.constant(null).map(() => {
    const cycle: Record<string, unknown> = { name: "cycle" };
    cycle.self = { back: cycle };
    return cycle;
  }),
  fc.constant(null).map(() => Object.assign(Object.create(null) as object, { bare: "\ud800" })),
);

/** Any value: JSON with odd strings (keys included), or JSON with something that is not JSON inside. */
const oddValue: fc.Arbitrary<unknown> = fc.oneof(
  fc.jsonValue({ stringUnit: "binary", maxDepth: 2 }),
  notJson,
  fc.dictionary(oddText, fc.oneof(fc.jsonValue({ stringUnit: "binary", maxDepth: 1 }), notJson), { maxKeys: 3 }),
  fc.array(fc.oneof(oddText, notJson), { maxLength: 3 }),
);

/** What the tool hands back for one call. */
const toolBehaviour = fc.oneof(
  oddText.map((text) => ({ kind: "text" as const, text })),
  fc.record({ kind: fc.constant("result" as const), ok: fc.boolean(), content: oddText, metadata: fc.option(oddValue, { nil: undefined }) }),
  oddText.map((text) => ({ kind: "throw-error" as const, text })),
  oddValue.map((value) => ({ kind: "throw-value" as const, value })),
  oddValue.map((value) => ({ kind: "garbage" as const, value })),
);
type ToolBehaviour = typeof toolBehaviour extends fc.Arbitrary<infer T> ? T : never;

function act(behaviour: ToolBehaviour): ToolResult {
  switch (behaviour.kind) {
    case "text":
      return behaviour.text;
    case "result":
      return { ok: behaviour.ok, content: behaviour.content, ...(behaviour.metadata !== undefined ? { metadata: behaviour.metadata as Record<string, unknown> } : {}) };
    case "throw-error":
      throw new Error(behaviour.text);
    case "throw-value":
      throw behaviour.value;
    case "garbage":
      return behaviour.value as ToolResult;
  }
}

/** One provider answer: a scripted response (odd text, odd arguments, odd IDs), a scripted failure, or a thrown value. */
const providerStep = fc.oneof(
  fc.record({
    content: oddText,
    toolCalls: fc.array(
      fc.record({
        id: fc.option(oddText, { nil: undefined }),
        name: fc.constantFrom("odd", "ask", "missing"),
        key: fc.nat({ max: 7 }),
        padding: oddText,
      }),
      { maxLength: 3 },
    ),
  }).map(({ content, toolCalls }): ScriptStep | { thrown: unknown } => ({
    content,
    toolCalls: toolCalls.map((call) => ({ ...(call.id !== undefined ? { id: call.id } : {}), name: call.name, arguments: JSON.stringify({ key: call.key, padding: call.padding }) })),
  })),
  fc.record({ kind: fc.constantFrom("http-status" as const, "transport" as const), retryable: fc.boolean(), message: oddText }).map((error): ScriptStep => ({ error })),
  oddValue.map((thrown) => ({ thrown })),
  oddText.map((message) => ({ thrown: new ProviderError({ kind: "weird" as never, retryable: "yes" as never, status: Number.NaN, retryAfterMs: -1.5, message }) })),
);

/** A provider that plays the steps in order, throwing what a step says to throw. */
function oddProvider(steps: readonly (ScriptStep | { thrown: unknown })[]): Provider {
  let next = 0;
  return {
    id: "odd",
    format: "openai-chat",
    async complete(request, options) {
      const step = steps[next] ?? { content: "the end" };
      next += 1;
      if ("thrown" in step) throw step.thrown;
      return scriptedProvider([step]).complete(request, options);
    },
  };
}

/** An operation settles: it resolves, or it rejects with a typed turnlog error — never anything else. */
async function settles<T>(operation: () => Promise<T>): Promise<T | undefined> {
  try {
    return await operation();
  } catch (error) {
    expect(TurnlogError.isTurnlogError(error), `rejected with an untyped error: ${String(error)}`).toBe(true);
    return undefined;
  }
}

/** Answers held calls (with odd answers) and resumes, until the session is not parked or owed work. */
async function driveOn(session: Session, outcome: SendOutcome | undefined, answers: { grant: boolean; by: string; note: string | undefined }[]): Promise<void> {
  let current = outcome ?? session.outcome();
  for (let round = 0; round < 8 && (current.status === "awaiting-approval" || current.status === "needs-resume"); round += 1) {
    for (const [index, held] of current.pendingApprovals.entries()) {
      const answer = answers[(round + index) % Math.max(1, answers.length)] ?? { grant: true, by: "p", note: undefined };
      const given = { by: answer.by === "" ? "p" : answer.by, ...(answer.note !== undefined ? { note: answer.note } : {}) };
      await settles(() => (answer.grant ? session.approve(held.callId, given) : session.deny(held.callId, given)));
    }
    current = (await settles(() => session.resume())) ?? session.outcome();
  }
}

describe("odd inputs from tools, people and providers", () => {
  it("never wedge a session: every operation settles typed, every call ends, the log verifies and replays identical", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(toolBehaviour, { minLength: 1, maxLength: 8 }),
        fc.array(providerStep, { maxLength: 5 }),
        fc.tuple(oddText, oddText),
        fc.array(fc.record({ grant: fc.boolean(), by: oddText, note: fc.option(oddText, { nil: undefined }) }), { maxLength: 3 }),
        fc.record({ by: oddText, key: fc.nat({ max: 7 }) }),
        fc.option(fc.nat({ max: 40 }), { nil: undefined }),
        async (behaviours, steps, [firstText, secondText], answers, hostCall, failAt) => {
          const memory = new MemoryEventLog({ clock: steppingClock(), ids: sequentialIds("event") });
          // A storage failure at one append after the session opened, as a disk would give it.
          let appends = 0;
          const log: EventLog = withAppend(memory, async (stream, events, options) => {
            appends += 1;
            if (failAt !== undefined && appends === failAt + 2) throw new LogWriteError("memory", "EIO");
            return memory.appendToStream(stream, events, options);
          });
          const run = ({ key }: { key: number }) => act(behaviours[key % behaviours.length] as ToolBehaviour);
          const tools = [
            defineTool({ name: "odd", description: "odd \ud800 things", risk: "read-only-local", input: z.object({ key: z.number() }).passthrough(), run }),
            defineTool({ name: "ask", description: "asks first", risk: "external-side-effect", input: z.object({ key: z.number() }).passthrough(), run }),
          ];
          const runtime = await createRuntime({ log, provider: oddProvider(steps), tools, clock: steppingClock(), budgets: { maxIterations: 3 }, providerRetry: { baseDelayMs: 0 } });
          const session = await runtime.openSession("p1");

          await driveOn(session, await settles(() => session.send(firstText)), answers);
          await settles(() => session.runTool("odd", { key: hostCall.key }, { by: hostCall.by === "" ? "host" : hostCall.by }));
          await driveOn(session, await settles(() => session.send(secondText)), answers);
          // One more resume in the same process takes up whatever an operation left.
          await driveOn(session, await settles(() => session.resume()), answers);

          const state = session.state();
          for (const call of state.calls.values()) expect(call.status, `call ${call.callId}`).not.toBe("running");
          for (const call of state.hostCalls) expect(call.runs !== true || call.result !== undefined, `host call ${call.callId}`).toBe(true);
          expect((await runtime.verify()).ok).toBe(true);
          expect((await runtime.replay("p1")).divergences).toEqual([]);

          // A new runtime finds nothing left to recover: every outcome that happened was written.
          const before = (await memory.readStream("session-p1")).length;
          const again = await createRuntime({ log: memory, provider: oddProvider([]), tools, clock: steppingClock() });
          await again.openSession("p1", { create: false });
          const after = await memory.readStream("session-p1");
          expect(after.slice(before).map((event) => event.type)).toEqual([]);
        },
      ),
      { numRuns: 60 },
    );
  });
});
