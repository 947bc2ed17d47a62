import fc from "fast-check";
import { expect } from "vitest";
import { z } from "zod";
import { createRuntime, defineTool } from "../../src/index.js";
import type { ProviderFormat, RecordedTurnlogEvent, Runtime, SendOutcome, Session } from "../../src/index.js";
import type { NativeHistory } from "../../src/history/native-history.js";
import { buildNativeHistory } from "../../src/providers/format-history.js";
import { foldEvents } from "../../src/projections/projection.js";
import { sessionStateProjection, type SessionState } from "../../src/projections/session-state.js";
import { MemoryEventLog, scriptedProvider } from "../../src/testing/index.js";
import type { ScriptStep } from "../../src/testing/index.js";
import { exampleSecretMarker, exampleSecrets, exampleSecretTexts } from "./secret-examples.js";
import { aiSdkViolations, anthropicMessagesViolations, openAiChatViolations } from "./history-validators.js";
import { sequentialIds, steppingClock, workspace } from "./tools.js";

/**
 * Random sessions for the history properties, run through the real runtime: tool calls of every
 * kind (unknown tools, malformed JSON, duplicate and invalid IDs, writes approved, denied or left
 * pending, tools that throw, secrets in arguments), `length` responses, reasoning echo, provider
 * errors, several user messages, a crash in the middle of a tool, and small token budgets that
 * force compaction. Every string a session carries holds a distinctive token (`Zq7…`), so a
 * property can check that none of it leaks where it must not.
 */

/** The prefix of every distinctive token. */
export const tokenPrefix = "Zq7";

const token = fc.stringMatching(/^[a-z0-9]{6}$/).map((suffix) => `${tokenPrefix}${suffix}`);

type ScriptedCall = { id?: string; name?: string; arguments?: string };

const secretKinds = Object.keys(exampleSecretTexts) as (keyof typeof exampleSecretTexts)[];

const toolCall: fc.Arbitrary<ScriptedCall> = fc.oneof(
  { weight: 4, arbitrary: fc.constantFrom("a.txt", "b.txt").map((path) => ({ name: "read_file", arguments: JSON.stringify({ path }) })) },
  { weight: 1, arbitrary: token.map((tag) => ({ name: "read_file", arguments: JSON.stringify({ path: `${tag}.txt` }) })) },
  { weight: 3, arbitrary: fc.tuple(token, token).map(([path, content]) => ({ name: "write_file", arguments: JSON.stringify({ path: `${path}.txt`, content }) })) },
  {
    weight: 2,
    arbitrary: fc.tuple(token, fc.constantFrom(...secretKinds)).map(([path, kind]) => ({ name: "write_file", arguments: JSON.stringify({ path: `${path}.txt`, content: exampleSecretTexts[kind] }) })),
  },
  { weight: 1, arbitrary: token.map((tag) => ({ name: "read_file", arguments: JSON.stringify({ path: "a.txt", note: tag, password: exampleSecrets["secret-field"] }) })) },
  { weight: 1, arbitrary: fc.tuple(fc.oneof(token, fc.constantFrom("__proto__", "constructor", "", "bad name")), token).map(([name, tag]) => ({ name, arguments: JSON.stringify({ tag }) })) },
  { weight: 1, arbitrary: token.map((tag) => ({ name: "read_file", arguments: `{"path": "${tag}` })) },
  { weight: 1, arbitrary: fc.constantFrom("[1]", "", "  ", "null").map((text) => ({ name: "read_file", arguments: text })) },
  { weight: 2, arbitrary: token.map((tag) => ({ name: "boom", arguments: JSON.stringify({ note: tag }) })) },
  { weight: 1, arbitrary: fc.constant({ name: "slow_op", arguments: "{}" }) },
  {
    weight: 2,
    arbitrary: fc
      .tuple(fc.oneof(token, fc.constantFrom("call_dup", "bad id!", "x".repeat(50), "toolu_01A")), fc.constantFrom("a.txt", "b.txt"))
      .map(([id, path]) => ({ id, name: "read_file", arguments: JSON.stringify({ path }) })),
  },
);

/** An echo in the provider's shape: now and then too large to keep, or holding a secret (neither is kept). */
function echoFor(format: ProviderFormat, tag: string, kind: "plain" | "oversized" | "secret"): Record<string, unknown> {
  const text = kind === "oversized" ? `${tag} ${"x".repeat(33_000)}` : kind === "secret" ? `reasoning ${tag} with ${exampleSecrets["openai-key"]}` : `reasoning ${tag}`;
  if (format === "ai-sdk") return { parts: [{ type: "reasoning", text, providerMetadata: { anthropic: { signature: `sig${tag}` } } }] };
  return format === "openai-chat" ? { reasoning_content: text } : { thinking: [{ type: "thinking", thinking: text, signature: `sig${tag}` }] };
}

const echo = fc.option(token, { nil: undefined });

function step(format: ProviderFormat): fc.Arbitrary<ScriptStep> {
  const withEcho = (base: Exclude<ScriptStep, { error: unknown } | { chunks: unknown }>, tag: string | undefined, kind: "plain" | "oversized" | "secret" = "plain") =>
    tag === undefined ? base : { ...base, echo: echoFor(format, tag, kind) };
  return fc.oneof(
    {
      weight: 6,
      arbitrary: fc
        .tuple(fc.oneof(fc.constant(""), token), fc.array(toolCall, { minLength: 1, maxLength: 4 }), echo, fc.integer({ min: 0, max: 30 }))
        .map(([content, toolCalls, tag, roll]) => withEcho({ content, toolCalls }, tag, roll === 0 ? "oversized" : roll === 1 ? "secret" : "plain")),
    },
    { weight: 1, arbitrary: fc.tuple(token, fc.array(toolCall, { minLength: 1, maxLength: 2 })).map(([content, toolCalls]) => ({ content, toolCalls, finishReason: "length" as const })) },
    { weight: 1, arbitrary: token.map((content) => ({ content: `cut ${content}`, finishReason: "length" as const })) },
    { weight: 1, arbitrary: fc.constant({ error: { kind: "transport" as const, retryable: true } }) },
    { weight: 1, arbitrary: fc.tuple(token, echo).map(([content, tag]) => withEcho({ content: `answer ${content}` }, tag)) },
  );
}

export interface Scenario {
  format: ProviderFormat;
  sends: { text: string; steps: ScriptStep[]; crash: boolean }[];
  answers: ("approve" | "deny" | "leave")[];
  /** The runtime's own history budget (small ones force compaction in real requests). */
  maxTokens: number;
  system?: string;
  /** Budgets for extra builds of the history. */
  budgets: number[];
  files: { a: string; b: string };
}

export const scenario: fc.Arbitrary<Scenario> = fc.constantFrom<ProviderFormat>("openai-chat", "anthropic-messages", "ai-sdk").chain((format) =>
  fc.record({
    format: fc.constant(format),
    sends: fc.array(
      fc.record({
        text: fc.oneof({ weight: 5, arbitrary: token.map((tag) => `please ${tag}`) }, { weight: 1, arbitrary: fc.constant("") }),
        steps: fc.array(step(format), { maxLength: 4 }),
        crash: fc.boolean(),
      }),
      { minLength: 1, maxLength: 3 },
    ),
    answers: fc.array(fc.constantFrom("approve" as const, "deny" as const, "leave" as const), { minLength: 8, maxLength: 8 }),
    maxTokens: fc.oneof(fc.constant(100_000), fc.integer({ min: 60, max: 1500 })),
    system: fc.option(token.map((tag) => `system ${tag}`), { nil: undefined }),
    budgets: fc.array(fc.integer({ min: 20, max: 3000 }), { minLength: 1, maxLength: 3 }),
    files: fc.record({ a: token.map((tag) => `alpha ${tag}`), b: token.map((tag) => `beta ${tag}`) }),
  }),
);

export interface ScenarioRun {
  runtime: Runtime;
  session: Session;
  /** Every provider request the runtime made. */
  requests: { messages: unknown[]; system?: string }[];
  events(): Promise<RecordedTurnlogEvent[]>;
}

/**
 * Runs a scenario; `checkpoint` is called after every send, resume and crash recovery with the
 * session's state.
 */
export async function runScenario(scenario: Scenario, checkpoint: (state: SessionState, label: string) => Promise<void> | void): Promise<ScenarioRun> {
  const ws = workspace({ "a.txt": scenario.files.a, "b.txt": scenario.files.b });
  let crashArmed = false;
  let onCrash: (() => void) | undefined;
  const boom = defineTool({
    name: "boom",
    description: "Always fails",
    risk: "read-only-local",
    input: z.object({ note: z.string() }),
    run: ({ note }) => {
      throw new Error(`boom ${note}`);
    },
  });
  const slow = defineTool({
    name: "slow_op",
    description: "Hangs when the test crashes the process",
    risk: "read-only-local",
    serial: true,
    input: z.object({}),
    run: () => (crashArmed ? new Promise<string>(() => onCrash?.()) : "slow done"),
  });
  const script = scenario.sends.flatMap((send, index) => [...send.steps, { content: `done ${index} ${scenario.files.a.slice(-9)}` }]);
  const provider = scriptedProvider(script, { format: scenario.format });
  const log = new MemoryEventLog({ clock: steppingClock(), ids: sequentialIds("event") });
  const open = async () => {
    const runtime = await createRuntime({
      log,
      provider,
      tools: [...ws.tools, boom, slow],
      clock: steppingClock(),
      // Scenarios script many retryable failures; the backoff between attempts is not under test.
      providerRetry: { baseDelayMs: 0 },
      history: { maxTokens: scenario.maxTokens, ...(scenario.system !== undefined ? { system: scenario.system } : {}) },
    });
    return { runtime, session: await runtime.openSession("h1") };
  };
  let { runtime, session } = await open();
  let answerIndex = 0;

  for (const [index, send] of scenario.sends.entries()) {
    const last = index === scenario.sends.length - 1;
    crashArmed = send.crash;
    const crashed = new Promise<"crash">((resolve) => {
      onCrash = () => resolve("crash");
    });
    const sending = session.send(send.text);
    sending.catch(() => undefined);
    let outcome: SendOutcome | "crash" = await Promise.race([sending, crashed]);
    crashArmed = false;
    if (outcome === "crash") {
      // The process "dies" with the slow tool running: a new runtime recovers the session from the log.
      ({ runtime, session } = await open());
      await checkpoint(session.state(), `send ${index}: recovered after a crash`);
      outcome = await session.resume();
    }
    await checkpoint(session.state(), `send ${index}`);
    for (let round = 0; outcome.status === "awaiting-approval" && round < 10; round += 1) {
      let leftPending = false;
      for (const call of outcome.pendingApprovals) {
        const answer = scenario.answers[answerIndex++ % scenario.answers.length];
        if (answer === "leave" && last) leftPending = true;
        else if (answer === "approve") await session.approve(call.callId, { by: "tester" });
        else await session.deny(call.callId, { by: "tester" });
      }
      if (leftPending) break;
      outcome = await session.resume();
      await checkpoint(session.state(), `send ${index}: resumed`);
    }
    if (outcome.status === "awaiting-approval") break;
  }
  return {
    runtime,
    session,
    requests: provider.requests as { messages: unknown[]; system?: string }[],
    events: () => runtime.events("h1"),
  };
}

const formats: ProviderFormat[] = ["openai-chat", "anthropic-messages", "ai-sdk"];

/** The violations of a built history against its format's validator. */
export function violations(format: ProviderFormat, built: { messages: unknown[]; system?: string }): string[] {
  if (format === "ai-sdk") return aiSdkViolations(built.messages);
  return format === "openai-chat" ? openAiChatViolations(built.messages) : anthropicMessagesViolations({ ...(built.system !== undefined ? { system: built.system } : {}), messages: built.messages });
}

/**
 * Builds the history of a state in both formats at each budget and checks: both validators pass;
 * building twice is byte-identical; applying a proposed compaction gives byte-identical messages
 * and proposes nothing; no example secret appears. Returns every build (for further checks).
 */
export function checkHistories(state: SessionState, budgets: readonly number[], system: string | undefined): NativeHistory[] {
  const builds: NativeHistory[] = [];
  const recorded = state.provider;
  for (const format of formats) {
    for (const maxTokens of budgets) {
      const provider = recorded !== null && recorded.format === format ? { id: recorded.id, format } : { id: `other-${format}`, format };
      const options = { format, provider, maxTokens, ...(system !== undefined ? { system } : {}) };
      const built = buildNativeHistory(state, options);
      builds.push(built);
      if (state.messages.some((message) => message.role === "user")) expect(violations(format, built)).toEqual([]);
      const text = JSON.stringify(built);
      expect(text).not.toContain(exampleSecretMarker);
      expect(JSON.stringify(buildNativeHistory(state, options))).toBe(text);
      if (built.compaction !== undefined) {
        const compacted = buildNativeHistory({ ...state, historySummary: built.compaction }, options);
        expect(JSON.stringify(compacted.messages)).toBe(JSON.stringify(built.messages));
        expect(compacted.compaction).toBeUndefined();
      }
    }
  }
  return builds;
}

/** The state rebuilt from the log alone, as after a process restart. */
export function refold(events: readonly RecordedTurnlogEvent[]): SessionState {
  return foldEvents(sessionStateProjection, events);
}
