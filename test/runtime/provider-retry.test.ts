import { describe, expect, it } from "vitest";
import { createRuntime, defaultProviderRetry, MemoryEventLog, ProviderError } from "../../src/index.js";
import type { Clock, FinalizedResponse, Provider, RuntimeOptions } from "../../src/index.js";
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

/**
 * A clock whose `sleep` records each wait the runtime asks for: it ends at once, or only when the
 * wait's signal is aborted. `waitStarted` gives the signal of the first wait once it has begun.
 */
function waitingClock(ends: "at-once" | "until-aborted"): Clock & { waits: number[]; waitStarted: Promise<AbortSignal> } {
  const waits: number[] = [];
  let started: (signal: AbortSignal) => void = () => {};
  const waitStarted = new Promise<AbortSignal>((resolve) => (started = resolve));
  return {
    waits,
    waitStarted,
    now: () => Date.now(),
    monotonic: () => performance.now(),
    sleep(ms, signal) {
      waits.push(ms);
      started(signal);
      if (ends === "at-once") return Promise.resolve();
      return new Promise((_resolve, reject) => {
        if (signal.aborted) reject(signal.reason);
        else signal.addEventListener("abort", () => reject(signal.reason), { once: true });
      });
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
    const clock = waitingClock("until-aborted");
    const controller = new AbortController();
    const sending = send(provider, { clock, providerRetry: { baseDelayMs: 60_000, maxDelayMs: 60_000 } }, controller.signal);
    // The runtime is waiting out the 60-second backoff; the abort comes during that wait.
    const waitSignal = await clock.waitStarted;
    controller.abort();
    expect(waitSignal.aborted).toBe(true);
    const { outcome } = await sending;
    expect(outcome).toMatchObject({ status: "stopped", reason: "cancelled" });
    expect(clock.waits).toEqual([60_000]);
    expect(provider.calledAt).toHaveLength(1);
  });

  it("does not wait before retrying a response truncated inside tool calls", async () => {
    const cut = { toolCalls: [{ name: "lookup", arguments: '{"wo' }], finishReason: "length" as const };
    const provider = scriptedProvider([cut, { content: "fine" }]);
    const clock = waitingClock("at-once");
    const { outcome } = await send(provider, { clock, providerRetry: { baseDelayMs: 60_000, maxDelayMs: 60_000 } });
    expect(outcome).toMatchObject({ status: "completed", text: "fine" });
    expect(clock.waits).toEqual([]);
  });

  it("is never part of replay: replaying a session with retries does not wait", async () => {
    const provider = failingThen([transport(), transport()]);
    const clock = waitingClock("at-once");
    const { runtime } = await send(provider, { clock, providerRetry: { baseDelayMs: 400, maxDelayMs: 400 } });
    expect(clock.waits).toEqual([400, 400]);
    expect(await runtime.replay("r1")).toMatchObject({ identical: true });
    // The live run waited twice; the replay asked for no wait at all.
    expect(clock.waits).toEqual([400, 400]);
  });
});
