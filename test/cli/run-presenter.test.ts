import { describe, expect, it } from "vitest";
import { RunPresenter } from "../../src/cli/run/run-presenter.js";
import { createRuntime, readEvent, sessionStream } from "../../src/index.js";
import { MemoryEventLog, scriptedProvider } from "../../src/testing/index.js";

describe("turnlog run's presenter", () => {
  it("tells the user when text it streamed was discarded because the attempt failed", async () => {
    let out = "";
    const presenter = new RunPresenter({ out: { write: (text: string) => (out += text) }, paint: (_tone, text) => text, live: false, modelLabel: "m" });
    const log = new MemoryEventLog();
    const runtime = await createRuntime({
      log,
      // The first stream breaks off after a line of text; the retry answers.
      provider: scriptedProvider([{ chunks: [{ choices: [{ index: 0, delta: { content: "I will delete every\n" } }] }], done: false }, { content: "Here is the plan.\n" }]),
      providerRetry: { baseDelayMs: 0, maxDelayMs: 0 },
      onDelta: presenter.onDelta,
      onAttemptDiscarded: presenter.onAttemptDiscarded,
    });
    const session = await runtime.openSession("s1");
    const unsubscribe = log.subscribe((event) => presenter.onEvent(readEvent(event)), { stream: sessionStream("s1") });
    await session.send("plan it");
    unsubscribe();
    presenter.stop();
    const lines = out.split("\n");
    const failed = lines.findIndex((line) => line.includes("provider incomplete-stream"));
    const discarded = lines.findIndex((line) => line.includes("the text streamed for attempt 1 (20 characters) was discarded: it is not in the log"));
    const answer = lines.findIndex((line) => line.includes("Here is the plan."));
    expect(lines.findIndex((line) => line.includes("I will delete every"))).toBeLessThan(failed);
    expect(failed).toBeGreaterThan(-1);
    expect(discarded).toBeGreaterThan(failed);
    expect(answer).toBeGreaterThan(discarded);
  });
});
