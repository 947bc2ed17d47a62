import { describe, expect, it } from "vitest";
import { z } from "zod";
import { AgentLoopBuilder, ConfigError, defineTool, generateSealKey, MemoryEventLog, ProviderError } from "../../src/index.js";
import type { Clock, FinalizedResponse, OtelTracer, Provider, RuntimeOptions } from "../../src/index.js";
import { scriptedProvider } from "../../src/testing/index.js";
import { workspace } from "../support/tools.js";

/** A provider that fails once with a retryable transport error, then answers `answer`. */
function failingOnce(answer: string): Provider & { calls: number } {
  return {
    id: "failing-once",
    format: "openai-chat",
    calls: 0,
    async complete(): Promise<FinalizedResponse> {
      this.calls += 1;
      if (this.calls === 1) throw new ProviderError({ kind: "transport", retryable: true, message: "reset" });
      return { content: answer, toolCalls: [] };
    },
  };
}

/** A clock whose `sleep` ends at once and records each wait the runtime asked for. */
function recordingClock(): Clock & { waits: number[] } {
  const waits: number[] = [];
  return { waits, now: () => Date.now(), sleep: async (ms) => void waits.push(ms) };
}

const tracer: OtelTracer = {
  startSpan: () => ({ setAttribute() {}, setAttributes() {}, addEvent() {}, setStatus() {}, recordException() {}, end() {} }) as never,
};

/**
 * A value for every option of `createRuntime`. Typed by `RuntimeOptions`' keys, so an option added
 * there without a sample here does not compile, and the test below then asks the builder for its
 * setter.
 */
const samples: { [Key in keyof RuntimeOptions]-?: NonNullable<RuntimeOptions[Key]> } = {
  log: new MemoryEventLog(),
  provider: scriptedProvider([]),
  tools: [workspace().readFile],
  toolProviders: [{ name: "extra", phase: "post-tool-executor", register: () => {} }],
  mcpServers: [{ name: "files", command: "mcp-files" }],
  policy: { approvalMode: "auto-edit", workspace: { root: "/w", trusted: true } },
  budgets: { maxIterations: 3 },
  concurrency: 2,
  providerAttempts: 5,
  providerRetry: { baseDelayMs: 10, maxDelayMs: 20 },
  clock: recordingClock(),
  ids: { next: () => "from-ids" },
  history: { maxTokens: 5000, system: "be brief" },
  onDelta: () => {},
  onAttemptDiscarded: () => {},
  maxStoredOutputChars: 50_000,
  decisionsVersion: 1,
  upgradeSessions: "never",
  seals: { key: generateSealKey() },
  secrets: ["hunter2-secret-value"],
  sessionLease: "off",
  autoResume: true,
  tracer,
  traceContent: true,
  maxOpenSessions: 10,
  snapshots: { every: 500 },
};

/** The setter the builder has for an option: `withX` for `x`, the listeners under their own name. */
function setterOf(key: keyof RuntimeOptions): string {
  return key.startsWith("on") ? key : `with${key[0]?.toUpperCase()}${key.slice(1)}`;
}

describe("AgentLoopBuilder", () => {
  it("has a setter for every option of createRuntime, and what each sets is what build() passes on", () => {
    for (const [key, value] of Object.entries(samples) as [keyof RuntimeOptions, unknown][]) {
      const builder = new AgentLoopBuilder().withProvider(samples.provider) as unknown as Record<string, (value: unknown) => AgentLoopBuilder>;
      expect(typeof builder[setterOf(key)], `${setterOf(key)} for ${key}`).toBe("function");
      const options = builder[setterOf(key)]?.(value).options() as unknown as Record<string, unknown>;
      expect(options[key], key).toEqual(value);
      // Nothing else is set: an option left out keeps createRuntime's default.
      expect(Object.keys(options).sort()).toEqual([...new Set(["provider", key])].sort());
    }
  });

  it("needs a provider, and merges policy, budgets and history given in steps; lists add up", async () => {
    expect(() => new AgentLoopBuilder().build()).toThrow(/withProvider/);
    const ws = workspace();
    const listFiles = defineTool({ name: "list_files", description: "List the files", risk: "read-only-local", input: z.object({}), run: () => [...ws.files.keys()].join("\n") });
    const runtime = await new AgentLoopBuilder()
      .withLog(new MemoryEventLog())
      .withProvider(scriptedProvider([]))
      .withPolicy({ approvalMode: "auto-edit" })
      .withPolicy({ workspace: { root: "/w", trusted: true } })
      .withBudgets({ maxIterations: 3 })
      .withBudgets({ maxToolCalls: 9 })
      .withHistory({ maxTokens: 5000 })
      .withHistory({ system: "be brief" })
      .withTool(ws.readFile)
      .withTools([ws.writeFile])
      .withToolProvider({ name: "extra", phase: "post-tool-executor", register: ({ add }) => add(listFiles) })
      .withToolProviders([])
      .build();
    const started = (await runtime.openSession("s1")).state();
    expect(started.policy).toMatchObject({ approvalMode: "auto-edit", workspace: { root: "/w", trusted: true } });
    expect(started.budgets).toMatchObject({ maxIterations: 3, maxToolCalls: 9, maxRepeatedFailures: 5 });
    expect(started.tools.map((tool) => [tool.name, tool.source])).toEqual([
      ["read_file", "host"],
      ["write_file", "host"],
      ["list_files", "extra"],
    ]);
    const [event] = await runtime.events("s1");
    expect(event).toMatchObject({ type: "session.started", data: { history: { maxTokens: 5000, system: "be brief" } } });
    await runtime.close();
  });

  it("builds a runtime that honours what was set: the log, ids, policy, budgets, concurrency, history, decisions version, retries, clock and secrets", async () => {
    const log = new MemoryEventLog();
    const provider = failingOnce("the token is hunter2-secret-value");
    const clock = recordingClock();
    const runtime = await new AgentLoopBuilder()
      .withLog(log)
      .withProvider(provider)
      .withPolicy({ approvalMode: "auto-edit" })
      .withBudgets({ maxIterations: 4 })
      .withConcurrency(2)
      .withHistory({ maxTokens: 5000, system: "be brief" })
      .withDecisionsVersion(1)
      .withIds({ next: () => "from-ids" })
      .withProviderAttempts(2)
      .withProviderRetry({ baseDelayMs: 7, maxDelayMs: 7 })
      .withClock(clock)
      .withSecrets(["hunter2-secret-value"])
      .build();
    const session = await runtime.openSession();
    expect(session.id).toBe("from-ids");
    expect(await session.send("go")).toMatchObject({ status: "completed" });
    // The second attempt answered, after one wait on the given clock.
    expect(provider.calls).toBe(2);
    expect(clock.waits).toEqual([7]);
    const events = await log.readStream("session-from-ids");
    expect(events[0]).toMatchObject({
      type: "session.started",
      data: { policy: { approvalMode: "auto-edit" }, budgets: { maxIterations: 4 }, concurrency: 2, history: { maxTokens: 5000, system: "be brief" } },
    });
    expect((events[0]?.data as { decisionsVersion?: number }).decisionsVersion ?? 1).toBe(1);
    expect(JSON.stringify(events)).not.toContain("hunter2-secret-value");
    await runtime.close();
  });

  it("passes a session lease a log cannot grant on to createRuntime, which refuses it", async () => {
    await expect(new AgentLoopBuilder().withLog(new MemoryEventLog()).withProvider(scriptedProvider([])).withSessionLease("fail").build()).rejects.toThrow(ConfigError);
  });
});
