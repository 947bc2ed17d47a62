import { describe, expect, it } from "vitest";
import { createRuntime, defaultProviderRetry, MemoryEventLog, ProviderError } from "../../src/index.js";
import type { FinalizedResponse, Provider, RuntimeOptions } from "../../src/index.js";
import { providerRetryDelayMs, resolveProviderRetry } from "../../src/runtime/provider-retry.js";
import { scriptedProvider } from "../../src/testing/index.js";

/** A provider that fails with the given errors, then answers; it records when each call came. */
function failingThen(errors: ProviderError[], answer = "done"): Provider & { calledAt: number[] } {
  const calledAt: number[] = [];
  return {
    id: "failing",
    format: "openai-chat",
    calledAt,
    async complete(_request, { signal }): Promise<FinalizedResponse> {
      signal.throwIfAborted();
      calledAt.push(performance.now());
      const error = errors[calledAt.length - 1];
      if (error !== undefined) throw error;
      return { content: answer, toolCalls: [] };
    },
  };
}

const transport = () => new ProviderError({ kind: "transport", retryable: true, message: "reset" });

async function send(provider: Provider, options: Partial<RuntimeOptions> = {}, signal?: AbortSignal) {
  const runtime = await createRuntime({ log: new MemoryEventLog(), provider, ...options });
  const session = await runtime.openSession("r1");
  const outcome = await session.send("go", signal ? { signal } : {});
  return { runtime, outcome };
}

describe("the wait before a retried provider attempt", () => {
  it("doubles from baseDelayMs up to maxDelayMs, deterministically", () => {
    const policy = resolveProviderRetry();
    expect(policy).toEqual({ baseDelayMs: 500, maxDelayMs: 8000 });
    expect([1, 2, 3, 4, 5, 6, 7].map((attempt) => providerRetryDelayMs(policy, { attempt, kind: "transport" }))).toEqual([500, 1000, 2000, 4000, 8000, 8000, 8000]);
    expect(providerRetryDelayMs(policy, { attempt: 1, kind: "http-status", retryAfterMs: 1500 })).toBe(1500);
    expect(providerRetryDelayMs(policy, { attempt: 1, kind: "http-status", retryAfterMs: 60_000 })).toBe(8000);
    // Nothing to wait for: the server answered (truncation), or the process was down (interrupted).
    expect(providerRetryDelayMs(policy, { attempt: 2, kind: "truncated-tool-calls" })).toBe(0);
    expect(providerRetryDelayMs(policy, { attempt: 2, kind: "interrupted" })).toBe(0);
    expect(defaultProviderRetry).toEqual(policy);
  });

  it("refuses negative or non-finite delays", () => {
    expect(() => resolveProviderRetry({ baseDelayMs: -1 })).toThrow(TypeError);
    expect(() => resolveProviderRetry({ maxDelayMs: Number.NaN })).toThrow(TypeError);
  });

  it("waits between attempts, and the waits grow", async () => {
    const provider = failingThen([transport(), transport()]);
    const { outcome } = await send(provider, { providerRetry: { baseDelayMs: 60, maxDelayMs: 1000 } });
    expect(outcome).toMatchObject({ status: "completed", text: "done" });
    const [first = 0, second = 0, third = 0] = provider.calledAt;
    expect(second - first).toBeGreaterThanOrEqual(55);
    expect(third - second).toBeGreaterThanOrEqual(115);
  });

  it("waits what the server asked (Retry-After), capped by maxDelayMs, and records it", async () => {
    const provider = failingThen([new ProviderError({ kind: "http-status", status: 429, retryable: true, retryAfterMs: 150, message: "slow down" })]);
    const { outcome, runtime } = await send(provider, { providerRetry: { baseDelayMs: 1, maxDelayMs: 5_000 } });
    expect(outcome).toMatchObject({ status: "completed" });
    const [first = 0, second = 0] = provider.calledAt;
    expect(second - first).toBeGreaterThanOrEqual(145);
    const failed = (await runtime.events("r1")).find((event) => event.type === "turn.provider.failed");
    expect(failed?.data).toMatchObject({ status: 429, retryAfterMs: 150 });
  });

  it("is cut short by the session's signal: the turn stops as cancelled", async () => {
    const provider = failingThen([transport()]);
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 50);
    const started = performance.now();
    const { outcome } = await send(provider, { providerRetry: { baseDelayMs: 60_000, maxDelayMs: 60_000 } }, controller.signal);
    expect(outcome).toMatchObject({ status: "stopped", reason: "cancelled" });
    expect(performance.now() - started).toBeLessThan(5_000);
    expect(provider.calledAt).toHaveLength(1);
  });

  it("does not wait before retrying a response truncated inside tool calls", async () => {
    const cut = { toolCalls: [{ name: "lookup", arguments: '{"wo' }], finishReason: "length" as const };
    const provider = scriptedProvider([cut, { content: "fine" }]);
    const started = performance.now();
    const { outcome } = await send(provider, { providerRetry: { baseDelayMs: 60_000, maxDelayMs: 60_000 } });
    expect(outcome).toMatchObject({ status: "completed", text: "fine" });
    expect(performance.now() - started).toBeLessThan(5_000);
  });

  it("is never part of replay: replaying a session with retries does not wait", async () => {
    const provider = failingThen([transport(), transport()]);
    const { runtime } = await send(provider, { providerRetry: { baseDelayMs: 400, maxDelayMs: 400 } });
    const started = performance.now();
    expect(await runtime.replay("r1")).toMatchObject({ identical: true });
    // The live run waited 2 × 400 ms; a replay that waited would take at least that.
    expect(performance.now() - started).toBeLessThan(400);
  });
});
