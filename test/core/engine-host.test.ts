import { mkdtemp, rm } from "node:fs/promises";
import { homedir, tmpdir } from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { z } from "zod";
// The engine: everything that steps the turn comes from turnlog/core.
import {
  activeTurn,
  decideObserving,
  defaultHistoryMaxTokens,
  latestDecisionsVersion,
  nextStep,
  resolveBudgets,
  resolvePolicy,
  responseEvent,
  SessionFold,
  sessionStream,
  startedCalls,
  type DecisionInputs,
} from "../../src/core.js";
// The host's own parts: a log, its tools, a redactor, a provider.
import {
  createRuntime,
  createSecretRedactor,
  defineTool,
  LevelEventLog,
  parseEvent,
  readEvent,
  ProviderError,
  ToolRegistry,
  type Clock,
  type EventLog,
  type PolicyInput,
  type Provider,
  type ProviderRequest,
  type RecordedEvent,
  type SecretRedactor,
  type TurnlogEvent,
} from "../../src/index.js";
import { scriptedProvider } from "../../src/testing/index.js";

/**
 * A host that steps a session's turns with turnlog/core and performs every effect itself: it calls
 * its provider, runs its tools, and writes each event to its EventLog. The same code is the example
 * of docs/embedding.md ("The engine: stepping a turn with your own effects").
 */
class EngineHost {
  readonly fold = new SessionFold();
  #version = 0;
  /** The real text of arguments the log holds redacted (in memory only), by turn and call index. */
  readonly #secrets = new Map<string, string>();

  constructor(
    private readonly log: EventLog,
    private readonly sessionId: string,
    private readonly registry: ToolRegistry,
    private readonly provider: Provider,
    private readonly redactor: SecretRedactor,
    private readonly clock: Clock,
  ) {}

  /** Validates, appends with the exact expected version, and folds what the log recorded. */
  async append(events: readonly TurnlogEvent[]): Promise<void> {
    const result = await this.log.appendToStream(sessionStream(this.sessionId), events.map(parseEvent), { expectedStreamVersion: this.#version });
    for (const recorded of result.events) {
      this.fold.apply(readEvent(recorded));
      this.#version = recorded.meta.streamPosition;
    }
  }

  async start(policy: PolicyInput, concurrency = 4, maxAttempts = 3): Promise<void> {
    await this.append([
      {
        type: "session.started",
        data: {
          sessionId: this.sessionId,
          policy: resolvePolicy(policy),
          tools: this.registry.snapshot(),
          budgets: resolveBudgets(),
          concurrency,
          provider: { id: this.provider.id, format: this.provider.format, maxAttempts },
          history: { maxTokens: defaultHistoryMaxTokens },
          decisionsVersion: latestDecisionsVersion,
          environment: { tempDir: tmpdir(), homeDir: homedir() },
        },
      },
    ]);
  }

  /** Adds a user message and steps until nothing is owed (or a person must answer). */
  async send(text: string, signal = new AbortController().signal): Promise<"done" | "awaiting-approval"> {
    await this.append([{ type: "session.user_message.added", data: { content: this.redactor.redactText(text).text } }]);
    let request: ProviderRequest | undefined;
    for (;;) {
      const step = nextStep(this.fold, this.registry);
      switch (step.kind) {
        case "none":
          return "done";
        case "wait":
          return "awaiting-approval";
        case "decision": {
          // Pure: computed from the state before it; replay recomputes it from the log.
          const decision = decideObserving(step.action, this.#inputs());
          await this.append(decision.events);
          request = decision.request ?? request;
          break;
        }
        case "effect":
          if (step.action === "callProvider") await this.#callProvider(request as ProviderRequest, signal);
          else await this.#runStartedCalls(signal);
          break;
      }
    }
  }

  #inputs(): DecisionInputs {
    const state = this.fold.state;
    const turn = this.fold.turn?.context;
    return {
      state,
      ...(turn !== undefined ? { turn } : {}),
      registry: this.registry,
      policy: state.policy!,
      budgets: state.budgets!,
      redactor: this.redactor,
      rawArguments: (turnId, index) => this.#secrets.get(`${turnId}:${index}`),
    };
  }

  async #callProvider(request: ProviderRequest, signal: AbortSignal): Promise<void> {
    const turn = this.fold.turn!.context;
    try {
      const response = await this.provider.complete(request, { signal });
      const { event, secretArguments } = responseEvent(turn, response, this.redactor);
      for (const [index, text] of secretArguments) this.#secrets.set(`${turn.turnId}:${index}`, text);
      await this.append([event]);
    } catch (error) {
      const known = ProviderError.isInstance(error);
      const message = this.redactor.redactText(error instanceof Error ? error.message : String(error)).text;
      await this.append([
        { type: "turn.provider.failed", data: { turnId: turn.turnId, attempt: turn.attempt, kind: known ? error.kind : "transport", retryable: known ? error.retryable : true, message } },
      ]);
    }
  }

  /** Runs the calls whose `turn.tool.started` is logged, one after another, and logs how each ended. */
  async #runStartedCalls(signal: AbortSignal): Promise<void> {
    const turn = activeTurn(this.fold.state)!;
    for (const call of startedCalls(this.fold.state, turn)) {
      const tool = this.registry.get(call.name)!;
      const started = this.clock.now();
      const durationMs = () => Math.max(0, this.clock.now() - started);
      try {
        const output = await tool.run(tool.input.parse(call.input), { signal, callId: call.callId, sessionId: this.sessionId, workspace: this.fold.state.policy!.workspace, protectedPaths: [] });
        const text = typeof output === "string" ? output : output.content;
        await this.append([{ type: "turn.tool.succeeded", data: { turnId: turn.turnId, callId: call.callId, output: this.redactor.redactText(text).text, durationMs: durationMs() } }]);
      } catch (error) {
        const message = this.redactor.redactText(error instanceof Error ? error.message : String(error)).text;
        await this.append([{ type: "turn.tool.failed", data: { turnId: turn.turnId, callId: call.callId, code: "tool-exception", message, durationMs: durationMs() } }]);
      }
    }
  }
}

const notes = new Map<string, string>([["todo", "buy milk"]]);
const tools = [
  defineTool({ name: "read_note", description: "Reads a note.", risk: "read-only-local", input: z.object({ name: z.string() }), run: ({ name }) => notes.get(name) ?? "(no such note)" }),
  defineTool({
    name: "save_note",
    description: "Saves a note.",
    risk: "workspace-write",
    input: z.object({ name: z.string(), text: z.string() }),
    run: ({ name, text }) => {
      notes.set(name, text);
      return `saved ${name}`;
    },
  }),
];
const script = () =>
  scriptedProvider([
    {
      content: "Let me look.",
      toolCalls: [
        { id: "call_read", name: "read_note", arguments: '{"name":"todo"}' },
        { id: "call_save", name: "save_note", arguments: '{"name":"done","text":"bought milk"}' },
        { id: "call_read_2", name: "read_note", arguments: '{"name":"done"}' },
      ],
    },
    { content: "You needed milk; I noted that you bought it." },
  ]);
const clock: Clock = { now: () => Date.UTC(2026, 0, 1) };

describe("turnlog/core: a host stepping a turn with its own effects", () => {
  const directories: string[] = [];
  afterEach(async () => {
    for (const directory of directories.splice(0)) await rm(directory, { recursive: true, force: true });
  });
  const directory = async (name: string) => {
    const made = await mkdtemp(path.join(tmpdir(), `turnlog-engine-${name}-`));
    directories.push(made);
    return made;
  };

  it("writes the same log as createRuntime for the same inputs: the same events, with the same data, in the same order", async () => {
    const workspace = await directory("workspace");
    const policy: PolicyInput = { approvalMode: "auto-edit", workspace: { root: workspace, trusted: true } };
    const text = "What is on my todo note? Then note that I bought it.";

    const runtimeLog = await LevelEventLog.open(await directory("runtime"));
    const runtimeProvider = script();
    const runtime = await createRuntime({ log: runtimeLog, provider: runtimeProvider, tools, policy, clock });
    const outcome = await (await runtime.openSession("s1")).send(text);
    expect(outcome).toMatchObject({ status: "completed", text: "You needed milk; I noted that you bought it." });
    const byRuntime = await runtimeLog.readStream(sessionStream("s1"));
    await runtime.close();
    await runtimeLog.close();

    notes.delete("done");
    const hostLog = await LevelEventLog.open(await directory("host"));
    const hostProvider = script();
    const host = new EngineHost(hostLog, "s1", new ToolRegistry(tools), hostProvider, createSecretRedactor(), clock);
    await host.start(policy);
    expect(await host.send(text)).toBe("done");
    const byHost = await hostLog.readStream(sessionStream("s1"));
    // The runtime reads the host's log like its own: every decision recomputes identical.
    const reader = await createRuntime({ log: hostLog, provider: script(), tools, policy, clock });
    const replayed = await reader.replay("s1");
    expect(replayed).toMatchObject({ identical: true, divergences: [] });
    expect(replayed.compared).toBeGreaterThan(10);
    await reader.close();
    await hostLog.close();

    const story = (events: RecordedEvent[]) => events.map(({ type, data }) => ({ type, data }));
    expect(story(byHost)).toEqual(story(byRuntime));
    // The provider got the same requests: the host sent exactly what the decision built.
    expect(hostProvider.requests).toEqual(runtimeProvider.requests);
    // What the log shows: a read, then the write alone, then the read that sees the write.
    expect(byHost.filter((event) => event.type.startsWith("turn.tool.")).map((event) => `${event.type} ${(event.data as { callId: string }).callId}`)).toEqual([
      expect.stringMatching(/^turn\.tool\.started /),
      expect.stringMatching(/^turn\.tool\.succeeded /),
      expect.stringMatching(/^turn\.tool\.started /),
      expect.stringMatching(/^turn\.tool\.succeeded /),
      expect.stringMatching(/^turn\.tool\.started /),
      expect.stringMatching(/^turn\.tool\.succeeded /),
    ]);
    expect(byHost.find((event) => event.type === "turn.completed")?.data).toMatchObject({ text: "You needed milk; I noted that you bought it." });
  });
});
