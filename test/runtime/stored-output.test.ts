import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { ConfigError, createRuntime, defineTool, LevelEventLog } from "../../src/index.js";
import type { EventLog, RecordedEvent } from "../../src/index.js";
import { scriptedProvider } from "../../src/testing/index.js";
import { sequentialIds, steppingClock } from "../support/tools.js";

/** About 5.9 MB of numbered lines: the head and the tail of it differ from everything between. */
const hugeOutput = Array.from({ length: 500_000 }, (_, line) => `line ${line} of the build log\n`).join("").slice(0, 5_000_000);

const directories: string[] = [];
const logs: EventLog[] = [];

afterEach(async () => {
  for (const log of logs.splice(0)) await log.close();
  for (const directory of directories.splice(0)) await rm(directory, { recursive: true, force: true });
});

async function freshLog(): Promise<LevelEventLog> {
  const directory = await mkdtemp(path.join(tmpdir(), "turnlog-stored-output-"));
  directories.push(directory);
  const log = await LevelEventLog.open(directory, { durability: "relaxed", clock: steppingClock(), ids: sequentialIds("event") });
  logs.push(log);
  return log;
}

const buildLog = defineTool({
  name: "build_log",
  description: "Print the build log",
  risk: "read-only-local",
  input: z.object({}),
  run: () => hugeOutput,
});

/** A tool that fails with the whole build log as its error. */
const failingBuild = defineTool({
  name: "failing_build",
  description: "Run the build",
  risk: "read-only-local",
  input: z.object({}),
  run: () => ({ ok: false, content: hugeOutput }),
});

async function runSession(maxStoredOutputChars: number | undefined, tool: "build_log" | "failing_build" = "build_log") {
  const log = await freshLog();
  const provider = scriptedProvider([{ toolCalls: [{ id: "call_1", name: tool, arguments: "{}" }] }, { content: "the build failed at the end" }]);
  const runtime = await createRuntime({
    log,
    provider,
    tools: [buildLog, failingBuild],
    clock: steppingClock(),
    ids: sequentialIds("session"),
    ...(maxStoredOutputChars !== undefined ? { maxStoredOutputChars } : {}),
  });
  const session = await runtime.openSession("s1");
  const outcome = await session.send("why did the build fail?");
  const events = await runtime.events("s1");
  const of = (type: string) => events.find((event) => event.type === type) as RecordedEvent<string, Record<string, unknown>>;
  return { runtime, session, outcome, events, provider, succeeded: of("turn.tool.succeeded"), failed: of("turn.tool.failed"), packetized: of("turn.results.packetized") };
}

describe("the cap on stored tool output (maxStoredOutputChars)", () => {
  it("stores at most the cap of a 5 MB result, records the cut, and shows the model exactly what an uncapped runtime shows", async () => {
    const capped = await runSession(100_000);
    const whole = await runSession(10_000_000);
    expect(capped.outcome).toMatchObject({ status: "completed", text: "the build failed at the end" });

    // The log holds the cap, not the 5 MB, and says how long the output was.
    const output = capped.succeeded.data.output as string;
    expect(output.length).toBe(100_000);
    expect(capped.succeeded.data.stored).toEqual({ originalChars: 5_000_000, headChars: expect.any(Number) });
    expect(hugeOutput.startsWith(output.slice(0, 1_000))).toBe(true);
    expect(hugeOutput.endsWith(output.slice(-1_000))).toBe(true);
    expect((whole.succeeded.data.output as string).length).toBe(5_000_000);
    expect(whole.succeeded.data.stored).toBeUndefined();

    // The packet, and so the request the model got, is the uncapped one, its original size included.
    expect(capped.packetized.data).toEqual(whole.packetized.data);
    expect(capped.packetized.data.packets).toEqual([expect.objectContaining({ truncated: true, originalChars: 5_000_000 })]);
    expect(capped.provider.requests[1]).toEqual(whole.provider.requests[1]);

    // Replay recomputes the packets from the stored form: identical.
    expect(await capped.runtime.replay("s1")).toMatchObject({ identical: true });
  });

  it("stores a failed call's 5 MB message cut the same way, and the model's packet is the uncapped one", async () => {
    const capped = await runSession(100_000, "failing_build");
    const whole = await runSession(10_000_000, "failing_build");
    const message = capped.failed.data.message as string;
    expect(message.length).toBeLessThan(100_000);
    expect(capped.failed.data.stored).toEqual({ originalChars: 5_000_000, headChars: expect.any(Number) });
    expect(hugeOutput.startsWith(message.slice(0, 1_000))).toBe(true);
    expect(hugeOutput.endsWith(message.slice(-1_000))).toBe(true);
    expect((whole.failed.data.message as string).length).toBe(5_000_000);

    expect(capped.packetized.data).toEqual(whole.packetized.data);
    expect(capped.packetized.data.packets).toEqual([expect.objectContaining({ ok: false, errorCode: "tool-error", truncated: true })]);
    expect(capped.provider.requests[1]).toEqual(whole.provider.requests[1]);
    expect(await capped.runtime.replay("s1")).toMatchObject({ identical: true });
  });

  it("keeps the default far above what the model sees: a 5 MB output is stored as 1 000 000 characters", async () => {
    const { succeeded, runtime } = await runSession(undefined);
    expect((succeeded.data.output as string).length).toBe(1_000_000);
    expect(succeeded.data.stored).toMatchObject({ originalChars: 5_000_000 });
    expect(await runtime.replay("s1")).toMatchObject({ identical: true });
  });

  it("never stores less than the tool's maxResultChars", async () => {
    const { succeeded, packetized } = await runSession(10);
    expect((succeeded.data.output as string).length).toBe(12_000);
    expect((packetized.data.packets as { content: string }[])[0]?.content.length).toBe(12_000);
  });

  it("caps a host-routed call's logged output too, while the host gets it whole", async () => {
    const log = await freshLog();
    const runtime = await createRuntime({ log, provider: scriptedProvider([]), tools: [buildLog], maxStoredOutputChars: 50_000, policy: { workspace: { root: "/workspace", trusted: true } } });
    const session = await runtime.openSession("s1");
    const result = await session.runTool("build_log", {}, { by: "ui:build-button" });
    expect(result.content).toBe(hugeOutput);
    const completed = (await runtime.events("s1")).find((event) => event.type === "session.native_tool.completed") as RecordedEvent<string, Record<string, unknown>>;
    expect((completed.data.output as string).length).toBe(50_000);
    expect(completed.data.stored).toEqual({ originalChars: 5_000_000, headChars: expect.any(Number) });
    expect(await runtime.replay("s1")).toMatchObject({ identical: true });
  });

  it("refuses a cap that is not a positive integer, naming it", async () => {
    const refused = createRuntime({ log: await freshLog(), provider: scriptedProvider([]), maxStoredOutputChars: 0 });
    await expect(refused).rejects.toSatisfy(ConfigError.isInstance);
    await expect(refused).rejects.toThrow(/^maxStoredOutputChars: /);
  });
});
