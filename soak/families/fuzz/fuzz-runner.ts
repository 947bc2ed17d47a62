import { isDeepStrictEqual } from "node:util";
import { z } from "zod";
import type { ProviderFormat } from "../../../src/contracts/provider.js";
import type { PolicyInput } from "../../../src/contracts/policy.js";
import type { RiskClass } from "../../../src/contracts/risk.js";
import { sessionStream } from "../../../src/core/session-stream.js";
import { TurnlogError } from "../../../src/errors/turnlog-error.js";
import type { RecordedEvent } from "../../../src/log/event-log.js";
import { MemoryEventLog } from "../../../src/log/memory-event-log.js";
import { createAnthropicMessagesFinalizer } from "../../../src/providers/anthropic-messages/anthropic-messages-finalizer.js";
import { createOpenAiChatFinalizer } from "../../../src/providers/openai-chat/openai-chat-finalizer.js";
import type { FinalizedResponse, Provider, ProviderRequest } from "../../../src/providers/provider.js";
import type { FinalizationResult } from "../../../src/providers/stream-finalization.js";
import { unwrapFinalization } from "../../../src/providers/stream-finalization.js";
import { createRuntime, type Runtime } from "../../../src/runtime/create-runtime.js";
import type { SendOutcome } from "../../../src/runtime/provider-turn-loop.js";
import type { Session } from "../../../src/runtime/session.js";
import { defineTool, type ToolDefinition } from "../../../src/tools/define-tool.js";
import { anthropicMessagesViolations, openAiChatViolations } from "../../../test/support/history-validators.js";
import type { FuzzCase } from "./fuzz-case.js";
import { renderStream, type WireStream } from "./wire-streams.js";

/** A case still running after this long has hung: it is abandoned and reported. */
export const caseTimeoutMs = 30_000;
/** Sessions a runtime (and its in-memory log) holds before the runner starts a fresh one. */
const sessionsPerRuntime = 200;
/** Every this many sessions, the session is also replayed (every decision recomputed and compared). */
const replayEvery = 25;
/** A turn loop that still waits for answers after this many rounds of answering is reported. */
const maxAnswerRounds = 20;

/**
 * The tools of a fuzz runtime, one per risk class the policy treats differently. Under the policy
 * below (`ask`, trusted workspace): `read_note` and `lookup` are allowed, `write_note` is allowed
 * by an allow rule, `archive_note` and `charge_card` ask, `drop_table` is denied by a deny rule.
 */
const toolRisks: readonly [string, RiskClass][] = [
  ["read_note", "read-only-local"],
  ["lookup", "read-only-network"],
  ["write_note", "workspace-write"],
  ["archive_note", "external-side-effect"],
  ["charge_card", "spend-money"],
  ["drop_table", "destructive-local"],
];

const policy: PolicyInput = {
  approvalMode: "ask",
  workspace: { root: "/fuzz-workspace", trusted: true },
  deny: [{ tool: "drop_table", reason: "fuzz: never drop a table" }],
  allow: [{ tool: "write_note" }],
};

/** One handler invocation, and how many events the session's stream held when it ran. */
interface Invocation {
  sessionId: string;
  callId: string;
  tool: string;
  logVersion: number;
}

/** The stream a fuzz provider answers with once its script is used up: a plain final answer. */
function finalAnswer(format: ProviderFormat): WireStream {
  return renderStream(
    { text: "done", textCuts: [], textKeys: [], calls: [], reasoning: "", finish: "consistent", ending: { kind: "done" }, usage: false, noise: false },
    format,
  );
}

/**
 * Runs a wire stream through its format's finalizer as a streaming adapter does: chunk by chunk,
 * stopping at the first failure, each visible text piece to `onText`.
 */
export function finalizeWireStream(stream: WireStream, format: ProviderFormat, onText?: (text: string) => void): FinalizationResult {
  const options = onText !== undefined ? { onText } : {};
  if (format === "openai-chat") {
    const finalizer = createOpenAiChatFinalizer(options);
    for (const chunk of stream.chunks) {
      finalizer.push(chunk);
      if (finalizer.failure !== undefined) break;
    }
    return finalizer.finish({ sawDone: stream.done });
  }
  const finalizer = createAnthropicMessagesFinalizer(options);
  for (const event of stream.chunks) {
    finalizer.push(event);
    if (finalizer.failure !== undefined) break;
  }
  return finalizer.finish();
}

/**
 * The finalizer's own invariants for one stream: it never throws, a failure is a typed
 * `incomplete-stream` / `transport` failure, finishing twice gives the same result, the text
 * handed to `onText` is the content, and a stream without faults finalizes to exactly what was sent.
 */
export function finalizerViolations(stream: WireStream, format: ProviderFormat): string[] {
  const seen: string[] = [];
  let result: FinalizationResult;
  try {
    result = finalizeWireStream(stream, format, (text) => seen.push(text));
  } catch (error) {
    return [`finalizer threw: ${describe(error)}`];
  }
  const violations: string[] = [];
  if (!result.ok) {
    if (result.kind !== "incomplete-stream" && result.kind !== "transport") violations.push(`finalizer failed with kind ${String(result.kind)}`);
    if (typeof result.message !== "string" || result.message === "") violations.push("finalizer failure without a message");
    if (stream.expected !== undefined) violations.push(`a stream without faults did not finalize: ${result.kind}: ${result.message}`);
    return violations;
  }
  const { response } = result;
  if (seen.join("") !== response.content) violations.push("the text streamed to onText is not the content");
  for (const call of response.toolCalls) if (typeof call.arguments !== "string") violations.push("a tool call's arguments are not a string");
  if (stream.expected !== undefined) {
    if (response.content !== stream.expected.content) violations.push(`content ${JSON.stringify(response.content)} is not what was sent, ${JSON.stringify(stream.expected.content)}`);
    if (!isDeepStrictEqual(response.toolCalls, stream.expected.toolCalls)) {
      violations.push(`tool calls ${JSON.stringify(response.toolCalls).slice(0, 400)} are not what was sent, ${JSON.stringify(stream.expected.toolCalls).slice(0, 400)}`);
    }
  }
  return violations;
}

/**
 * A `Provider` fed by generated streams instead of HTTP: each `complete` checks the request it was
 * given against its format's validator, then runs the next scripted stream through the real
 * finalizer (as the real adapters do) and resolves with the finalized response, or throws the
 * finalizer's `ProviderError`. Once the script is used up it answers with plain text.
 */
class FuzzProvider implements Provider {
  readonly id: string;
  script: WireStream[] = [];
  next = 0;
  requests = 0;
  violations: string[] = [];

  constructor(readonly format: ProviderFormat) {
    this.id = `fuzz:${format}`;
  }

  load(script: WireStream[]): void {
    this.script = script;
    this.next = 0;
  }

  async complete(request: ProviderRequest, options: { signal: AbortSignal; onDelta?: (text: string) => void }): Promise<FinalizedResponse> {
    options.signal.throwIfAborted();
    this.requests += 1;
    for (const violation of requestViolations(this.format, request)) this.violations.push(`request ${this.requests}: ${violation}`);
    const stream = this.script[this.next] ?? finalAnswer(this.format);
    this.next += 1;
    return unwrapFinalization(finalizeWireStream(stream, this.format, options.onDelta));
  }
}

function requestViolations(format: ProviderFormat, request: { messages: unknown[]; system?: string }): string[] {
  if (format === "openai-chat") {
    return openAiChatViolations(request.system !== undefined ? [{ role: "system", content: request.system }, ...request.messages] : request.messages);
  }
  return anthropicMessagesViolations({ ...(request.system !== undefined ? { system: request.system } : {}), messages: request.messages });
}

function describe(error: unknown): string {
  if (error instanceof Error) return `${error.name}${TurnlogError.isTurnlogError(error) ? ` (${error.code})` : ""}: ${error.message.slice(0, 300)}`;
  return String(error);
}

/**
 * What the log held when a handler ran (its first `logVersion` events) must include the call's
 * plan (`planned`, for this tool), one gate decision for it that is `allow` — or `ask` with a
 * person's approval of the same fingerprint — and its `turn.tool.started`.
 */
function invocationViolations(invocation: Invocation, events: readonly RecordedEvent[]): string[] {
  const { callId, tool } = invocation;
  const before = events.slice(0, invocation.logVersion);
  const violations: string[] = [];
  const fail = (what: string): void => {
    violations.push(`tool ${tool} ran for call ${callId} ${what}`);
  };
  if (invocation.logVersion < 0) fail("outside a case");
  const planned = before.some(
    (event) => event.type === "turn.tool_calls.planned" && (dataOf(event).plans as EventData[]).some((plan) => plan.callId === callId && plan.status === "planned" && plan.tool === tool),
  );
  if (!planned) fail("without a plan for it earlier in the log");
  const decisions = before
    .filter((event) => event.type === "turn.tool_calls.gated")
    .flatMap((event) => (dataOf(event).decisions as EventData[]).filter((decision) => decision.callId === callId));
  const decision = decisions[0];
  if (decision === undefined) {
    fail("without a gate decision for it earlier in the log");
  } else {
    if (decisions.length > 1) fail("with two gate decisions for it");
    if (decision.decision === "ask") {
      const granted = before.some((event) => event.type === "turn.approval.granted" && dataOf(event).callId === callId && dataOf(event).fingerprint === decision.fingerprint);
      if (!granted) fail("on an ask that no one approved");
    } else if (decision.decision !== "allow") {
      fail(`after the gate decided ${String(decision.decision)}`);
    }
  }
  if (!before.some((event) => event.type === "turn.tool.started" && dataOf(event).callId === callId)) fail("before its turn.tool.started was in the log");
  return violations;
}

interface FormatRuntime {
  runtime: Runtime;
  provider: FuzzProvider;
  sessions: number;
}

type EventData = Record<string, unknown>;
const dataOf = (event: RecordedEvent): EventData => event.data as EventData;

/**
 * Runs fuzz cases through the whole loop: per format one runtime on a `MemoryEventLog`, serving
 * many sessions (one per case) before it is replaced, so that a case costs a session, not a
 * runtime. Tools record every invocation with how far the log was written when they ran; the
 * case then checks that this much of the log already held the call's plan and an `allow` (or an
 * `ask` a person approved) for it.
 */
export class FuzzRunner {
  readonly #runtimes = new Map<ProviderFormat, FormatRuntime>();
  readonly #tools: ToolDefinition[];
  #invocations: Invocation[] = [];
  #sessionCount = 0;
  /** The log the case running now writes to (handlers read it). */
  #currentLog: MemoryEventLog | undefined;
  /** Counts for the summary. */
  readonly counts = {
    sessions: 0,
    /** Streams finalized, and how many of them were fault-free and compared with what was sent. */
    streams: 0,
    exactStreams: 0,
    providerRequests: 0,
    /** Handler runs, and how many of them after a person approved an `ask`. */
    toolRuns: 0,
    approvedRuns: 0,
    replays: 0,
    hugeArguments: 0,
    outcomes: new Map<string, number>(),
  };

  constructor() {
    this.#tools = toolRisks.map(([name, risk]) =>
      defineTool({
        name,
        description: `fuzz tool (${risk})`,
        risk,
        input: z.object({ value: z.string() }),
        run: async ({ value }, context) => {
          await this.#recordInvocation(context.sessionId, context.callId, name);
          // Some calls fail, so that failed results reach the histories too.
          if (value.startsWith("!")) throw new Error(`fuzz tool ${name} refuses ${JSON.stringify(value.slice(0, 10))}`);
          return `${name} ok (${value.length} characters)`;
        },
      }),
    );
  }

  /** Records an invocation with how far the session's stream was written when the handler ran. */
  async #recordInvocation(sessionId: string, callId: string, tool: string): Promise<void> {
    const log = this.#currentLog;
    const logVersion = log === undefined ? -1 : await log.streamVersion(sessionStream(sessionId));
    this.#invocations.push({ sessionId, callId, tool, logVersion });
  }

  async #runtimeFor(format: ProviderFormat): Promise<FormatRuntime> {
    const existing = this.#runtimes.get(format);
    if (existing !== undefined && existing.sessions < sessionsPerRuntime) return existing;
    if (existing !== undefined) await existing.runtime.close();
    const provider = new FuzzProvider(format);
    const runtime = await createRuntime({
      log: new MemoryEventLog(),
      provider,
      tools: this.#tools,
      policy,
      providerAttempts: 3,
      // A retried attempt is asked again at once: the wait is not what is fuzzed.
      providerRetry: { baseDelayMs: 0, maxDelayMs: 0 },
    });
    const fresh = { runtime, provider, sessions: 0 };
    this.#runtimes.set(format, fresh);
    return fresh;
  }

  /**
   * Runs one case: the finalizer's own checks on every stream, then the sessions' sends through
   * the loop (held calls answered as the case says), then the invariants on what the log holds.
   * Returns every violation; an empty list is a passed case.
   */
  async runCase(fuzz: FuzzCase): Promise<string[]> {
    const violations: string[] = [];
    const rendered = fuzz.sends.map((send) => send.streams.map((stream) => renderStream(stream, fuzz.format)));
    for (const [sendIndex, streams] of rendered.entries()) {
      for (const [streamIndex, stream] of streams.entries()) {
        this.counts.streams += 1;
        if (stream.expected !== undefined) this.counts.exactStreams += 1;
        for (const violation of finalizerViolations(stream, fuzz.format)) violations.push(`send ${sendIndex + 1} stream ${streamIndex + 1}: ${violation}`);
      }
    }
    if (fuzz.sends.some((send) => send.streams.some((stream) => stream.calls.some((call) => call.arguments.length >= 1_000_000)))) this.counts.hugeArguments += 1;

    const target = await this.#runtimeFor(fuzz.format);
    const { runtime, provider } = target;
    target.sessions += 1;
    this.#sessionCount += 1;
    this.counts.sessions += 1;
    const sessionId = `fuzz-${this.#sessionCount}`;
    this.#currentLog = runtime.log as MemoryEventLog;
    this.#invocations = [];
    provider.violations = [];
    const requestsBefore = provider.requests;

    const controller = new AbortController();
    let timer: ReturnType<typeof setTimeout> | undefined;
    const hung = new Promise<"hung">((resolve) => {
      timer = setTimeout(() => {
        controller.abort(new Error("fuzz case timed out"));
        resolve("hung");
      }, caseTimeoutMs);
    });
    let session: Session | undefined;
    try {
      const drive = async () => {
        session = await runtime.openSession(sessionId);
        for (const [sendIndex, send] of fuzz.sends.entries()) {
          provider.load(rendered[sendIndex] ?? []);
          const outcome = await this.#sendAndAnswer(session, send.message, fuzz.answers, controller.signal);
          this.counts.outcomes.set(outcome.status, (this.counts.outcomes.get(outcome.status) ?? 0) + 1);
          if (outcome.status !== "completed" && outcome.status !== "stopped" && outcome.status !== "failed") {
            violations.push(`send ${sendIndex + 1} ended ${outcome.status}${outcome.reason !== undefined ? ` (${outcome.reason})` : ""}`);
            return;
          }
        }
      };
      const ended = await Promise.race([drive().then(() => "ran" as const), hung]);
      if (ended === "hung") violations.push(`the case did not end within ${caseTimeoutMs} ms`);
    } catch (error) {
      violations.push(`the loop threw ${describe(error)}`);
    } finally {
      clearTimeout(timer);
    }
    this.counts.providerRequests += provider.requests - requestsBefore;
    this.counts.toolRuns += this.#invocations.length;
    violations.push(...provider.violations);
    if (session !== undefined) violations.push(...(await this.#logViolations(runtime, session)));
    this.#currentLog = undefined;
    return violations;
  }

  /** Sends a message, then answers every held call (approve or deny, as the case says) and resumes. */
  async #sendAndAnswer(session: Session, message: string, answers: readonly boolean[], signal: AbortSignal): Promise<SendOutcome> {
    let outcome = await session.send(message, { signal });
    let answered = 0;
    for (let round = 0; outcome.status === "awaiting-approval" && round < maxAnswerRounds; round += 1) {
      for (const pending of outcome.pendingApprovals) {
        const approve = answers[answered % answers.length] ?? true;
        answered += 1;
        if (approve) await session.approve(pending.callId, { by: "fuzz", fingerprint: pending.fingerprint });
        else await session.deny(pending.callId, { by: "fuzz", fingerprint: pending.fingerprint });
      }
      outcome = await session.resume({ signal });
    }
    return outcome;
  }

  /** What the log and the histories built from it must satisfy once a case has run. */
  async #logViolations(runtime: Runtime, session: Session): Promise<string[]> {
    const violations: string[] = [];
    const sessionId = session.id;
    const events = await runtime.events(sessionId);
    const invocations = this.#invocations.filter((invocation) => invocation.sessionId === sessionId);
    for (const invocation of invocations) violations.push(...invocationViolations(invocation, events));
    this.counts.approvedRuns += events.filter((event) => event.type === "turn.approval.granted" && invocations.some((invocation) => invocation.callId === dataOf(event).callId)).length;
    const started = events.filter((event) => event.type === "turn.tool.started").map((event) => String(dataOf(event).callId));
    const ran = invocations.map((invocation) => invocation.callId);
    if (new Set(ran).size !== ran.length) violations.push("a tool ran twice for one call ID");
    for (const callId of started) if (!ran.includes(callId)) violations.push(`call ${callId} started in the log but its tool never ran`);
    if (new Set(started).size !== started.length) violations.push("a call started twice in the log");
    const outcome = session.outcome();
    if (outcome.status === "needs-resume" || outcome.status === "awaiting-approval") violations.push(`the session was left ${outcome.status}`);
    for (const format of ["openai-chat", "anthropic-messages"] as const) {
      try {
        const history = session.history({ format });
        for (const violation of requestViolations(format, history)) violations.push(`${format} history: ${violation}`);
      } catch (error) {
        violations.push(`building the ${format} history threw ${describe(error)}`);
      }
    }
    if (this.#sessionCount % replayEvery === 0) {
      this.counts.replays += 1;
      const report = await runtime.replay(sessionId);
      if (!report.identical) violations.push(`replay is not identical: ${JSON.stringify(report).slice(0, 400)}`);
    }
    return violations;
  }

  async close(): Promise<void> {
    for (const { runtime } of this.#runtimes.values()) await runtime.close();
    this.#runtimes.clear();
  }
}
