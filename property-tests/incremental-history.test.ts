import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { TurnlogEvent } from "../src/contracts/events.js";
import type { FinishReason, ProviderFormat } from "../src/contracts/provider.js";
import type { HistoryCompressor } from "../src/history/history-compressor.js";
import type { HistoryCompaction } from "../src/history/native-history.js";
import { buildNativeHistory, buildNativeHistoryFromScratch, type NativeHistoryOptions } from "../src/providers/format-history.js";
import type { TokenEstimator } from "../src/history/token-estimator.js";
import { applyEvent, applyEventInPlace, foldEvents } from "../src/projections/projection.js";
import { evolveCallOnly, sessionStateProjection, type SessionState } from "../src/projections/session-state.js";
import type { RecordedTurnlogEvent } from "../src/log/event-log.js";
import { recordForTest } from "../src/testing/given-when-then.js";
import { sessionStarted } from "../test/support/events.js";

/**
 * A request's history is extended from the last build of the session (history-slots.ts), not
 * rebuilt. Whatever happened in between — messages, tool turns whose results come late, twice or
 * never, turns answered again, runs ended, compactions (recorded by the builder or anywhere), a
 * new provider — the build must give the bytes a build from scratch gives: the recorded decisions
 * are a contract. Checked on a live (immutable) fold, on a fold in place, on earlier states built
 * after later ones, and on a proposed compaction applied.
 */

type CallSpec = { id: number; name: number; args: number; redacted: boolean };

type Operation =
  | { kind: "user"; content: string }
  | { kind: "answer"; content: string }
  | { kind: "calls"; content: string; calls: CallSpec[]; length: boolean; echo: boolean; echoDropped: number }
  | { kind: "packets"; turn: number; calls: number[] | undefined; ok: boolean; long: boolean; continued: boolean }
  | { kind: "end"; turn: number; how: number }
  | { kind: "respondAgain"; turn: number; length: boolean; echo: boolean }
  | { kind: "compact"; at: number; compressor: string }
  | { kind: "recordProposed" }
  | { kind: "provider"; id: string; format: ProviderFormat };

interface BuildSpec {
  format: ProviderFormat;
  sameProvider: boolean;
  maxTokens: number;
  /**
   * When set, the budget is instead the tokens the whole history takes, plus this: a budget on
   * the edge of what fits, where a selection that is off by one shows.
   */
  fit: number | undefined;
  system: boolean;
  summaryTokens: number | undefined;
  estimator: number;
  compressor: number;
  /** Build an earlier state (this many events back) before the current one. */
  earlier: number | undefined;
}

const text = fc.oneof(fc.constant(""), fc.constant("   "), fc.stringMatching(/^[a-z ]{1,12}$/), fc.constant("long ".repeat(90)));
// Mostly calls a provider would replay natively (a fresh ID, a valid name, an object), the rest anything.
const callSpec = fc.oneof(
  { weight: 3, arbitrary: fc.record({ id: fc.constant(99), name: fc.constant(0), args: fc.constantFrom(0, 4, 6), redacted: fc.constant(false) }) },
  { weight: 2, arbitrary: fc.record({ id: fc.nat(9), name: fc.nat(5), args: fc.nat(6), redacted: fc.boolean() }) },
);

const operation: fc.Arbitrary<Operation> = fc.oneof(
  { weight: 3, arbitrary: fc.record({ kind: fc.constant("user" as const), content: text }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant("answer" as const), content: text }) },
  {
    weight: 6,
    arbitrary: fc.record({
      kind: fc.constant("calls" as const),
      content: text,
      calls: fc.array(callSpec, { minLength: 0, maxLength: 4 }),
      length: fc.boolean(),
      echo: fc.boolean(),
      echoDropped: fc.oneof({ weight: 4, arbitrary: fc.constant(3) }, { weight: 1, arbitrary: fc.nat(2) }),
    }),
  },
  {
    weight: 6,
    arbitrary: fc.record({
      kind: fc.constant("packets" as const),
      turn: fc.nat(3),
      // Undefined: one result for every call, in call order.
      calls: fc.option(fc.array(fc.nat(5), { maxLength: 5 }), { nil: undefined }),
      ok: fc.boolean(),
      long: fc.boolean(),
      continued: fc.boolean(),
    }),
  },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant("end" as const), turn: fc.nat(3), how: fc.nat(3) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("respondAgain" as const), turn: fc.nat(3), length: fc.boolean(), echo: fc.boolean() }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("compact" as const), at: fc.nat(60), compressor: fc.constantFrom("deterministic", "short") }) },
  { weight: 3, arbitrary: fc.constant({ kind: "recordProposed" as const }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant("provider" as const), id: fc.constantFrom("scripted", "other"), format: fc.constantFrom<ProviderFormat>("openai-chat", "anthropic-messages", "ai-sdk") }) },
);

const buildSpec: fc.Arbitrary<BuildSpec> = fc.record({
  format: fc.constantFrom<ProviderFormat>("openai-chat", "anthropic-messages", "ai-sdk"),
  sameProvider: fc.boolean(),
  maxTokens: fc.oneof(fc.constant(Infinity), fc.constant(100_000), fc.integer({ min: 1, max: 1500 }), fc.double({ min: 1, max: 1500, noNaN: true })),
  fit: fc.option(fc.integer({ min: -3, max: 3 }), { nil: undefined, freq: 3 }),
  system: fc.boolean(),
  summaryTokens: fc.option(fc.integer({ min: 0, max: 200 }), { nil: undefined }),
  // Mostly the default estimator, which the live runtime uses.
  estimator: fc.oneof({ weight: 6, arbitrary: fc.constant(0) }, { weight: 1, arbitrary: fc.nat(4) }),
  compressor: fc.nat(1),
  earlier: fc.option(fc.nat(30), { nil: undefined, freq: 6 }),
});

const session = fc.record({
  format: fc.constantFrom<ProviderFormat>("openai-chat", "anthropic-messages", "ai-sdk"),
  steps: fc.array(fc.record({ operation, builds: fc.array(buildSpec, { maxLength: 2 }) }), { minLength: 1, maxLength: 40 }),
});

const callIds = ["call_a", "call_b", "call_c", "bad id!", "x".repeat(50), "toolu_01"];
const toolNames = ["read_file", "write_file", "bad name", "", "list_dir", "read_file"];
const argumentTexts = ['{"path":"a.txt"}', "", "[1]", '{"path": "b', '{"n":1,"deep":{"k":[1,2]}}', "null", '{"path":"c.txt"}'];
const echoDropped = ["echo_oversized", "unsafe_arguments", "echo_secret"] as const;

/** Index 0 is the default (o200k_base, as the live runtime counts). */
const estimators: (TokenEstimator | undefined)[] = [
  undefined,
  { count: (value) => value.split(/\s+/).filter(Boolean).length },
  // Not whole numbers, and negative: the selection cannot be a search over sums.
  { count: (value) => value.length / 4 },
  { count: (value) => (value.length % 7) - 2 },
  // Whole numbers for every unit, but not for the system text: the budget is NaN.
  { count: (value) => (value === "Be brief." ? NaN : value.length) },
];
/** Index 0 is the default (deterministic). */
const compressors: (HistoryCompressor | undefined)[] = [
  undefined,
  { name: "counting", summarize: (units) => `${units.length} earlier units: ${units.map((unit) => unit.kind).join(", ")}` },
];

/** Writes the events of the operations, resolving each against what the session holds so far. */
class SessionWriter {
  readonly events: TurnlogEvent[];
  readonly turns: { turnId: string; calls: string[]; attempt: number }[] = [];
  #turnSeq = 0;
  #fresh = 0;

  constructor(format: ProviderFormat) {
    this.events = [sessionStarted({ provider: { id: "scripted", format, maxAttempts: 2 } })];
  }

  write(operation: Operation, format: () => ProviderFormat, proposed: HistoryCompaction | undefined, positions: () => number[]): void {
    switch (operation.kind) {
      case "user":
        this.events.push({ type: "session.user_message.added", data: { content: operation.content } });
        return;
      case "answer": {
        const turnId = this.#start();
        this.events.push({ type: "turn.provider.responded", data: { turnId, attempt: 1, content: operation.content, toolCalls: [], finishReason: "stop" } });
        this.events.push({ type: "turn.completed", data: { turnId, text: operation.content } });
        return;
      }
      case "calls": {
        const turnId = this.#start();
        const calls = operation.calls.map((call, index) => ({
          index,
          id: call.id < callIds.length ? (callIds[call.id] as string) : `call_${(this.#fresh += 1)}`,
          name: toolNames[call.name] as string,
          argumentsText: call.redacted ? '{"password":"[REDACTED]"}' : (argumentTexts[call.args] as string),
          ...(call.redacted ? { argumentsRedacted: true } : {}),
        }));
        const finishReason: FinishReason = operation.length ? "length" : "tool_calls";
        const dropped = echoDropped[operation.echoDropped];
        this.events.push({
          type: "turn.provider.responded",
          data: {
            turnId,
            attempt: 1,
            content: operation.content,
            toolCalls: calls.map(({ index, id, name, argumentsText }) => ({ index, id, name, argumentsText })),
            finishReason,
            ...(operation.echo ? { echo: echoOf(format(), turnId) } : {}),
            ...(dropped !== undefined ? { echoDropped: dropped } : {}),
          },
        });
        const unsafeReasons = [...(operation.length ? ["length_truncated"] : []), ...(calls.some((call) => call.argumentsRedacted) ? ["unsafe_arguments"] : [])];
        this.events.push({
          type: "turn.tool_calls.normalized",
          data: {
            turnId,
            content: operation.content,
            calls: calls.map((call) => ({ ...call, idSource: "provider" as const, providerId: call.id })),
            nativeReplaySafe: unsafeReasons.length === 0,
            unsafeReasons,
          },
        });
        this.turns.push({ turnId, calls: calls.map((call) => call.id), attempt: 1 });
        return;
      }
      case "packets": {
        const turn = this.#turn(operation.turn);
        if (turn === undefined || turn.calls.length === 0) return;
        const picks = operation.calls ?? turn.calls.map((_, index) => index);
        const packets = picks.map((pick, order) => {
          const callId = turn.calls[pick % turn.calls.length] as string;
          const content = operation.long ? `result ${order} `.repeat(40) : order === 0 && !operation.ok ? "" : `result ${order}`;
          return { callId, tool: "read_file", ok: operation.ok, content, truncated: false, originalChars: content.length, ...(operation.ok ? {} : { errorCode: "tool-exception" }) };
        });
        if (packets.length > 0) this.events.push({ type: "turn.results.packetized", data: { turnId: turn.turnId, packets } });
        if (operation.continued) this.events.push({ type: "turn.continued", data: { turnId: turn.turnId, reason: "tool-results" } });
        return;
      }
      case "end": {
        const turn = this.#turn(operation.turn);
        if (turn === undefined) return;
        const turnId = turn.turnId;
        const ending: TurnlogEvent[] = [
          { type: "turn.completed", data: { turnId, text: "done" } },
          { type: "turn.stopped", data: { turnId, reason: "budget" } },
          { type: "turn.failed", data: { turnId, reason: "provider", message: "gone" } },
          { type: "turn.provider.failed", data: { turnId, attempt: turn.attempt, kind: "transport", retryable: true } },
        ];
        this.events.push(ending[operation.how] as TurnlogEvent);
        return;
      }
      case "respondAgain": {
        const turn = this.#turn(operation.turn);
        if (turn === undefined) return;
        turn.attempt += 1;
        this.events.push({
          type: "turn.provider.responded",
          data: {
            turnId: turn.turnId,
            attempt: turn.attempt,
            content: "again",
            toolCalls: [],
            finishReason: operation.length ? "length" : "tool_calls",
            ...(operation.echo ? { echo: echoOf(format(), turn.turnId) } : {}),
          },
        });
        return;
      }
      case "compact": {
        const known = positions();
        const beforePosition = known.length === 0 ? 1 : (known[operation.at % known.length] as number) + (operation.at % 3 === 0 ? 1 : 0);
        this.events.push({ type: "session.history.compacted", data: { beforePosition, summary: `summary before ${beforePosition}`, unitsSummarized: 2, compressor: operation.compressor } });
        return;
      }
      case "recordProposed":
        if (proposed !== undefined) this.events.push({ type: "session.history.compacted", data: proposed });
        return;
      case "provider":
        this.events.push({ type: "session.config.changed", data: { provider: { id: operation.id, format: operation.format, maxAttempts: 2 } } });
        return;
    }
  }

  #start(): string {
    this.#turnSeq += 1;
    const turnId = `turn-${this.#turnSeq}`;
    this.events.push({ type: "turn.started", data: { turnId, turnSeq: this.#turnSeq, iteration: 1 } });
    return turnId;
  }

  /** One of the last few tool-call turns (0: the newest). */
  #turn(back: number) {
    return this.turns[this.turns.length - 1 - (back % Math.max(1, this.turns.length))];
  }
}

function echoOf(format: ProviderFormat, tag: string): Record<string, unknown> {
  if (format === "ai-sdk") return { parts: [{ type: "reasoning", text: `thinking ${tag}`, providerMetadata: { anthropic: { signature: `sig-${tag}` } } }, { type: "tool-call", call: 0 }] };
  return format === "openai-chat" ? { reasoning_content: `thinking ${tag}` } : { thinking: [{ type: "thinking", thinking: `thinking ${tag}`, signature: `sig-${tag}` }] };
}

function optionsOf(spec: BuildSpec, state: SessionState): NativeHistoryOptions {
  if (spec.fit !== undefined) {
    const whole = buildNativeHistoryFromScratch(state, optionsOf({ ...spec, fit: undefined, maxTokens: Infinity }, state));
    const tokens = whole.diagnostics[0]?.counts.estimated_tokens ?? 0;
    return optionsOf({ ...spec, fit: undefined, maxTokens: Number.isFinite(tokens) && tokens + spec.fit > 0 ? tokens + spec.fit : 1 }, state);
  }
  const recorded = state.provider;
  const estimator = estimators[spec.estimator];
  const compressor = compressors[spec.compressor];
  const provider = spec.sameProvider && recorded !== null ? { id: recorded.id, format: recorded.format } : { id: `other:${spec.format}`, format: spec.format };
  return {
    format: spec.format,
    provider,
    maxTokens: spec.maxTokens,
    ...(spec.system ? { system: "Be brief." } : {}),
    ...(spec.summaryTokens !== undefined ? { summaryTokens: spec.summaryTokens } : {}),
    ...(estimator !== undefined ? { estimator } : {}),
    ...(compressor !== undefined ? { compressor } : {}),
  };
}

/** The state of the first `count` events, folded afresh: new objects, so no build before is reused. */
function scratch(events: readonly RecordedTurnlogEvent[], count: number): SessionState {
  return foldEvents(sessionStateProjection, events.slice(0, count));
}

describe("the request history extended from the last build", () => {
  it("is byte for byte the build from scratch, after any sequence of messages, tool turns, compactions and budgets", () => {
    fc.assert(
      fc.property(session, ({ format, steps }) => {
        const writer = new SessionWriter(format);
        const recorded: RecordedTurnlogEvent[] = [];
        // As the live session folds (SessionFold, immutable), and as replay folds (in place).
        let live = sessionStateProjection.initialState();
        const inPlace = sessionStateProjection.initialState();
        const states: SessionState[] = [];
        let proposed: HistoryCompaction | undefined;
        const fold = () => {
          const fresh = recordForTest(writer.events.slice(recorded.length), { startPosition: recorded.length + 1 });
          for (const event of fresh) {
            recorded.push(event);
            live = evolveCallOnly(live, event) ?? applyEvent(sessionStateProjection, live, event);
            applyEventInPlace(sessionStateProjection, inPlace, event);
            states.push(live);
          }
        };
        fold();
        for (const { operation, builds } of steps) {
          writer.write(operation, () => live.provider?.format ?? format, proposed, () => live.messages.map((message) => message.position));
          if (operation.kind === "recordProposed") proposed = undefined;
          fold();
          for (const spec of builds) {
            if (spec.earlier !== undefined) {
              const count = Math.max(1, recorded.length - spec.earlier);
              const earlier = states[count - 1] as SessionState;
              const options = optionsOf(spec, earlier);
              expect(JSON.stringify(buildNativeHistory(earlier, options))).toBe(JSON.stringify(buildNativeHistoryFromScratch(scratch(recorded, count), options)));
            }
            const options = optionsOf(spec, live);
            const expected = buildNativeHistoryFromScratch(scratch(recorded, recorded.length), options);
            const built = buildNativeHistory(live, options);
            expect(JSON.stringify(built)).toBe(JSON.stringify(expected));
            expect(JSON.stringify(buildNativeHistory(inPlace, options))).toBe(JSON.stringify(expected));
            if (built.compaction !== undefined) {
              // What the next build sees once the runtime records the compaction with the request.
              const compacted = buildNativeHistory({ ...live, historySummary: built.compaction }, options);
              expect(JSON.stringify(compacted)).toBe(JSON.stringify(buildNativeHistoryFromScratch({ ...scratch(recorded, recorded.length), historySummary: built.compaction }, options)));
              if (spec.format === live.provider?.format) proposed = built.compaction;
            }
          }
        }
      }),
      { numRuns: 300 },
    );
  });
});
