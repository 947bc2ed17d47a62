import path from "node:path";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { createRuntime, defineTool, EventRefusedError, LevelEventLog, LogWriteError, TurnlogError } from "../../src/index.js";
import type { EventLog, ToolResult } from "../../src/index.js";
import { scriptedProvider } from "../../src/testing/index.js";
import type { ScriptStep } from "../../src/testing/index.js";
import { temporary } from "../support/temporary-directories.js";
import { withAppend } from "../support/with-append.js";
import { describeWithPostgres, postgresFixtures } from "../support/postgres.js";

/** Half of 😀: what `"hello 😀".slice(0, 7)` leaves, as the issue found it. */
const halfEmoji = "hello 😀".slice(0, 7);

/** A tool that hands back whatever the test gives it for the call's `key`. */
function oddTool(results: Record<string, () => ToolResult>, options: { name?: string; idempotent?: boolean } = {}) {
  return defineTool({
    name: options.name ?? "odd",
    description: "returns what the test scripted",
    risk: "read-only-local",
    ...(options.idempotent === true ? { idempotent: true } : {}),
    input: z.object({ key: z.string() }),
    run: ({ key }) => (results[key] ?? (() => "nothing scripted"))(),
  });
}

const callOdd = (key: string, name = "odd") => ({ toolCalls: [{ id: `call_${key}`, name, arguments: JSON.stringify({ key }) }] });

async function setup(script: ScriptStep[], tools: ReturnType<typeof oddTool>[], wrap?: (log: EventLog) => EventLog) {
  const directory = await temporary("turnlog-odd-inputs-");
  const level = await LevelEventLog.open(path.join(directory, "log"));
  const log = wrap !== undefined ? wrap(level) : level;
  const provider = scriptedProvider(script);
  const runtime = await createRuntime({
    log,
    provider,
    tools,
    providerRetry: { baseDelayMs: 0 },
    policy: { approvalMode: "full-auto", workspace: { root: directory, trusted: true } },
  });
  const session = await runtime.openSession("s1");
  return { level, log, provider, runtime, session, directory };
}

/** The tool messages of the provider's last request: what the model read of each call. */
function toolMessages(provider: { requests: { messages: unknown[] }[] }): string[] {
  return (provider.requests.at(-1)?.messages ?? []).filter((message) => (message as { role: string }).role === "tool").map((message) => (message as { content: string }).content);
}

/** The log verifies and the session replays identical: what was recorded is whole and reproducible. */
async function expectSound(runtime: Awaited<ReturnType<typeof createRuntime>>) {
  expect((await runtime.verify()).ok).toBe(true);
  expect(await runtime.replay("s1")).toMatchObject({ identical: true });
}

describe("a lone surrogate handed in never wedges a session", () => {
  it("a tool output holding half an emoji is recorded with U+FFFD in its place, and the turn completes", async () => {
    const { runtime, session, provider } = await setup([callOdd("a"), { content: "done" }], [oddTool({ a: () => halfEmoji })]);
    await expect(session.send("go")).resolves.toMatchObject({ status: "completed", text: "done" });
    const succeeded = (await runtime.events("s1")).find((event) => event.type === "turn.tool.succeeded");
    expect(succeeded?.data).toMatchObject({ output: "hello \ufffd" });
    expect(toolMessages(provider)).toEqual(["hello \ufffd"]);
    await expectSound(runtime);
  });

  it("a tool's explicit result and its error text are repaired the same way", async () => {
    const { runtime, session, provider } = await setup(
      [{ toolCalls: [{ id: "call_a", name: "odd", arguments: '{"key":"a"}' }, { id: "call_b", name: "odd", arguments: '{"key":"b"}' }] }, { content: "done" }],
      [oddTool({ a: () => ({ ok: true, content: `x\udc00`, metadata: { note: "\ud800" } }), b: () => ({ ok: false, content: `failed \ud83d` }) })],
    );
    await expect(session.send("go")).resolves.toMatchObject({ status: "completed" });
    const events = await runtime.events("s1");
    expect(events.find((event) => event.type === "turn.tool.succeeded")?.data).toMatchObject({ output: "x\ufffd", metadata: { note: "\ufffd" } });
    expect(events.find((event) => event.type === "turn.tool.failed")?.data).toMatchObject({ code: "tool-error", message: "failed \ufffd" });
    expect(toolMessages(provider)).toEqual(["x\ufffd", "Error (tool-error): failed \ufffd"]);
    await expectSound(runtime);
  });

  it("an error thrown with a lone surrogate in its message becomes the call's failure, repaired", async () => {
    const { runtime, session, provider } = await setup(
      [callOdd("a"), { content: "done" }],
      [
        oddTool({
          a: () => {
            throw new Error(`cannot read ${halfEmoji}`);
          },
        }),
      ],
    );
    await expect(session.send("go")).resolves.toMatchObject({ status: "completed" });
    const failed = (await runtime.events("s1")).find((event) => event.type === "turn.tool.failed");
    expect(failed?.data).toMatchObject({ code: "tool-exception", message: "cannot read hello \ufffd" });
    expect(toolMessages(provider)).toEqual(["Error (tool-exception): cannot read hello \ufffd"]);
    await expectSound(runtime);
  });

  it("a value thrown that cannot even be made a string is the call's failure too", async () => {
    const { runtime, session } = await setup(
      [callOdd("a"), { content: "done" }],
      [
        oddTool({
          a: () => {
            throw Object.create(null) as Error;
          },
        }),
      ],
    );
    await expect(session.send("go")).resolves.toMatchObject({ status: "completed" });
    const failed = (await runtime.events("s1")).find((event) => event.type === "turn.tool.failed");
    expect(failed?.data).toMatchObject({ code: "tool-exception", message: "a value that cannot be shown as text was thrown" });
    await expectSound(runtime);
  });

  it("a long output of emoji, cut for the model and for the log, is cut without leaving half a character", async () => {
    // 7 001 emoji are 14 002 UTF-16 units: over the 12 000 the model is shown, and (maxStoredOutputChars
    // below) over what the log keeps; both cuts fall inside a pair.
    const directory = await temporary("turnlog-odd-inputs-");
    const log = await LevelEventLog.open(path.join(directory, "log"));
    const provider = scriptedProvider([callOdd("a"), { content: "done" }]);
    const runtime = await createRuntime({
      log,
      provider,
      tools: [oddTool({ a: () => "😀".repeat(7_001) })],
      maxStoredOutputChars: 13_001,
      policy: { approvalMode: "full-auto", workspace: { root: directory, trusted: true } },
    });
    const session = await runtime.openSession("s1");
    await expect(session.send("go")).resolves.toMatchObject({ status: "completed" });
    const [shown] = toolMessages(provider);
    expect(shown).not.toMatch(/[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/);
    expect(shown).toMatch(/characters removed/);
    const succeeded = (await runtime.events("s1")).find((event) => event.type === "turn.tool.succeeded");
    expect(succeeded?.data).toMatchObject({ stored: { originalChars: 14_002 } });
    await expectSound(runtime);
  });

  it("user text with a lone surrogate is recorded repaired, and the turn runs", async () => {
    const { runtime, session, provider } = await setup([{ content: "hi" }], []);
    await expect(session.send(`hello \ud800 there`)).resolves.toMatchObject({ status: "completed", text: "hi" });
    expect(session.state().messages[0]).toMatchObject({ role: "user", content: "hello \ufffd there" });
    expect(provider.requests[0]?.messages).toContainEqual(expect.objectContaining({ role: "user", content: "hello \ufffd there" }));
    await expectSound(runtime);
  });

  it("an approval's note and `by` with lone surrogates are recorded repaired", async () => {
    const directory = await temporary("turnlog-odd-inputs-");
    const log = await LevelEventLog.open(path.join(directory, "log"));
    const tool = defineTool({ name: "deploy", description: "deploys", risk: "external-side-effect", input: z.object({}), run: () => "deployed" });
    const runtime = await createRuntime({ log, provider: scriptedProvider([{ toolCalls: [{ id: "call_1", name: "deploy", arguments: "{}" }] }, { content: "done" }]), tools: [tool] });
    const session = await runtime.openSession("s1");
    const parked = await session.send("deploy");
    expect(parked.status).toBe("awaiting-approval");
    await session.approve(parked.pendingApprovals[0]!.callId, { by: `ana \udc00`, note: `fine ${halfEmoji}` });
    await expect(session.resume()).resolves.toMatchObject({ status: "completed" });
    const granted = (await runtime.events("s1")).find((event) => event.type === "turn.approval.granted");
    expect(granted?.data).toMatchObject({ by: "ana \ufffd", note: "fine hello \ufffd" });
    await expectSound(runtime);
  });

  it("a provider's error message with a lone surrogate is recorded repaired, and the retry goes on", async () => {
    const { runtime, session } = await setup([{ error: { kind: "http-status", status: 500, retryable: true, message: `server said ${halfEmoji}` } }, { content: "recovered" }], []);
    await expect(session.send("hi")).resolves.toMatchObject({ status: "completed", text: "recovered" });
    const failed = (await runtime.events("s1")).find((event) => event.type === "turn.provider.failed");
    expect(failed?.data).toMatchObject({ message: "server said hello \ufffd" });
    await expectSound(runtime);
  });
});

describe("an MCP server's listing and results with lone surrogates", () => {
  it("are recorded with U+FFFD in their place: the session starts, the calls end, and the turn completes", async () => {
    const directory = await temporary("turnlog-odd-inputs-");
    const log = await LevelEventLog.open(path.join(directory, "log"));
    const repositoryRoot = path.resolve(import.meta.dirname, "../..");
    const provider = scriptedProvider([
      { toolCalls: [{ id: "call_1", name: "mcp__odd__half", arguments: "{}" }, { id: "call_2", name: "mcp__odd__broken", arguments: "{}" }] },
      { content: "done" },
    ]);
    const runtime = await createRuntime({
      log,
      provider,
      mcpServers: [{ name: "odd", command: process.execPath, args: ["--import", "tsx", path.join(repositoryRoot, "test/support/mcp-odd-server.ts")], cwd: repositoryRoot }],
      policy: { approvalMode: "full-auto", workspace: { root: directory, trusted: true } },
    });
    try {
      const session = await runtime.openSession("s1");
      await expect(session.send("go")).resolves.toMatchObject({ status: "completed", text: "done" });
      const events = await runtime.events("s1");
      const started = events.find((event) => event.type === "session.started")?.data as { tools: { name: string; description: string; parameters: unknown }[] };
      const half = started.tools.find((tool) => tool.name === "mcp__odd__half");
      expect(half).toMatchObject({ description: "Answers with hello \ufffd", parameters: { properties: { topic: { description: "the topic \ufffd" } } } });
      expect(toolMessages(provider)).toEqual(["result hello \ufffd", "Error (tool-error): it broke hello \ufffd"]);
      await expectSound(runtime);
    } finally {
      await runtime.close();
    }
  });
});

describe("tool metadata that is not JSON is the tool's failure", () => {
  const cycle: Record<string, unknown> = { name: "loop" };
  cycle.self = cycle;
  it.each([
    ["a BigInt", { count: 1n }, "metadata.count is a BigInt"],
    ["a function", { render: () => "x" }, "metadata.render is a function"],
    ["a symbol", { tag: Symbol("t") }, "metadata.tag is a symbol"],
    ["a number that is not finite", { ratio: Number.NaN }, "metadata.ratio is NaN, not a finite number"],
    ["a cycle", cycle, "metadata.self refers back to an enclosing value (a cycle)"],
    ["an array", [1, 2], "metadata is not an object"],
  ])("metadata holding %s: the call fails with invalid-metadata, the model reads why, and the turn completes", async (_what, metadata, reason) => {
    const { runtime, session, provider } = await setup([callOdd("a"), { content: "done" }], [oddTool({ a: () => ({ ok: true, content: "fine", metadata: metadata as Record<string, unknown> }) })]);
    await expect(session.send("go")).resolves.toMatchObject({ status: "completed", text: "done" });
    const failed = (await runtime.events("s1")).find((event) => event.type === "turn.tool.failed");
    expect(failed?.data).toMatchObject({ code: "invalid-metadata", message: `the tool returned metadata the log cannot store: ${reason}` });
    expect(toolMessages(provider)).toEqual([`Error (invalid-metadata): the tool returned metadata the log cannot store: ${reason}`]);
    await expectSound(runtime);
  });

  it("metadata with a Date and an undefined member is stored as JSON writes it", async () => {
    const { runtime, session } = await setup([callOdd("a"), { content: "done" }], [oddTool({ a: () => ({ ok: true, content: "fine", metadata: { at: new Date(0), gone: undefined } }) })]);
    await expect(session.send("go")).resolves.toMatchObject({ status: "completed" });
    const succeeded = (await runtime.events("s1")).find((event) => event.type === "turn.tool.succeeded");
    expect((succeeded?.data as { metadata?: unknown }).metadata).toEqual({ at: "1970-01-01T00:00:00.000Z" });
    await expectSound(runtime);
  });
});

describe("runTool with odd values", () => {
  it("an output with a lone surrogate is recorded repaired, and BigInt metadata fails the call as data", async () => {
    const { runtime, session } = await setup([], [oddTool({ text: () => halfEmoji, meta: () => ({ ok: true, content: "x", metadata: { size: 10n } }) })]);
    await expect(session.runTool("odd", { key: "text" }, { by: `button \ud800` })).resolves.toMatchObject({ status: "succeeded", content: "hello \ufffd" });
    await expect(session.runTool("odd", { key: "meta" }, { by: "button" })).resolves.toMatchObject({
      status: "failed",
      errorCode: "invalid-metadata",
      content: "the tool returned metadata the log cannot store: metadata.size is a BigInt",
    });
    const events = await runtime.events("s1");
    expect(events.find((event) => event.type === "session.native_tool.requested")?.data).toMatchObject({ by: "button \ufffd" });
    expect(events.filter((event) => event.type === "session.native_tool.completed").map((event) => event.data)).toMatchObject([
      { ok: true, output: "hello \ufffd" },
      { ok: false, code: "invalid-metadata" },
    ]);
    await expectSound(runtime);
  });

  it("input that is not JSON is the caller's mistake: a TypeError, and nothing is logged", async () => {
    const { runtime, session } = await setup([], [oddTool({})]);
    const before = (await runtime.events("s1")).length;
    await expect(session.runTool("odd", { key: 1n }, { by: "button" })).rejects.toThrow(new TypeError("runTool's input must be JSON: input.key is a BigInt"));
    expect(await runtime.events("s1")).toHaveLength(before);
    // Input strings with lone surrogates are repaired, not refused.
    await expect(session.runTool("odd", { key: "\ud800" }, { by: "button" })).resolves.toMatchObject({ status: "succeeded", content: "nothing scripted" });
    await expectSound(runtime);
  });
});

/** A log whose appends holding an event of `type` fail once, as `error()` says. */
function failingOnce(type: string, error: () => Error) {
  let failed = false;
  return (log: EventLog) =>
    withAppend(log, async (stream, events, options) => {
      if (!failed && events.some((event) => event.type === type)) {
        failed = true;
        throw error();
      }
      return log.appendToStream(stream, events, options);
    });
}

describe("a failed append leaves a session the same process can continue", () => {
  it("a storage failure writing a tool's outcome: send rejects with the log's typed error, and resume() marks the call interrupted as a new runtime would", async () => {
    const { runtime, session, directory } = await setup(
      [callOdd("a"), { content: "after the failure" }, { content: "next" }],
      [oddTool({ a: () => "ran" })],
      failingOnce("turn.tool.succeeded", () => new LogWriteError(directory, "EIO")),
    );
    const error = await session.send("go").catch((caught: unknown) => caught);
    expect(LogWriteError.isInstance(error)).toBe(true);
    // The session tells what its log holds: the call started, its outcome was not written.
    expect(session.state().calls.get("call_a")?.status).toBe("running");
    expect(session.outcome()).toMatchObject({ status: "needs-resume", reason: "unfinished-turn" });

    await expect(session.resume()).resolves.toMatchObject({ status: "completed", text: "after the failure" });
    const events = await runtime.events("s1");
    expect(events.filter((event) => event.type.startsWith("turn.tool.")).map((event) => event.type)).toEqual(["turn.tool.started", "turn.tool.interrupted"]);
    await expectSound(runtime);
    // The next message goes through as on any session.
    await expect(session.send("again")).resolves.toMatchObject({ status: "completed", text: "next" });
  });

  it("an idempotent read whose outcome was lost runs again on resume(), as after a crash", async () => {
    let runs = 0;
    const { runtime, session, directory } = await setup(
      [callOdd("a"), { content: "done" }],
      [
        oddTool(
          {
            a: () => {
              runs += 1;
              return `run ${runs}`;
            },
          },
          { idempotent: true },
        ),
      ],
      failingOnce("turn.tool.succeeded", () => new LogWriteError(directory, "ENOSPC")),
    );
    await expect(session.send("go")).rejects.toSatisfy(LogWriteError.isInstance);
    await expect(session.resume()).resolves.toMatchObject({ status: "completed", text: "done" });
    expect(runs).toBe(2);
    const succeeded = (await runtime.events("s1")).filter((event) => event.type === "turn.tool.succeeded");
    expect(succeeded.map((event) => (event.data as { output: string }).output)).toEqual(["run 2"]);
    await expectSound(runtime);
  });

  it("an event the log refuses as data is an EventRefusedError, and resume() continues", async () => {
    const { runtime, session } = await setup(
      [callOdd("a"), { content: "done" }],
      [oddTool({ a: () => "ran" })],
      failingOnce("turn.tool.succeeded", () => new TypeError("event turn.tool.succeeded contains a string that is not valid Unicode")),
    );
    const error = await session.send("go").catch((caught: unknown) => caught);
    expect(EventRefusedError.isInstance(error)).toBe(true);
    expect(TurnlogError.isTurnlogError(error) && error.code).toBe("TURNLOG_EVENT_REFUSED");
    await expect(session.resume()).resolves.toMatchObject({ status: "completed", text: "done" });
    await expectSound(runtime);
  });

  it("runTool whose completion could not be written: the next operation records it interrupted, and the session goes on", async () => {
    const { runtime, session, directory } = await setup(
      [{ content: "hello" }],
      [oddTool({ a: () => "ran" })],
      failingOnce("session.native_tool.completed", () => new LogWriteError(directory, "EIO")),
    );
    await expect(session.runTool("odd", { key: "a" }, { by: "button" })).rejects.toSatisfy(LogWriteError.isInstance);
    await expect(session.send("hi")).resolves.toMatchObject({ status: "completed", text: "hello" });
    const completed = (await runtime.events("s1")).filter((event) => event.type === "session.native_tool.completed");
    expect(completed.map((event) => event.data)).toMatchObject([{ ok: false, code: "interrupted" }]);
    await expectSound(runtime);
  });
});

describeWithPostgres("a failed append on PostgreSQL, under the session's lease", () => {
  const fixtures = postgresFixtures();

  it("an error the log throws as it is (a dropped connection) still leaves the session to resume() in the same process", async () => {
    const postgres = await fixtures.open(fixtures.schema("odd_inputs"));
    const log = failingOnce("turn.tool.succeeded", () => new Error("Connection terminated unexpectedly"))(postgres);
    const runtime = await createRuntime({
      log,
      provider: scriptedProvider([callOdd("a"), { content: "done" }]),
      tools: [oddTool({ a: () => "ran" })],
      policy: { approvalMode: "full-auto", workspace: { root: "/workspace", trusted: true } },
    });
    const session = await runtime.openSession("s1");
    await expect(session.send("go")).rejects.toThrow("Connection terminated unexpectedly");
    // A send is refused as in a new process: the turn is unfinished.
    await expect(session.send("next")).rejects.toThrow(/unfinished turn/);
    await expect(session.resume()).resolves.toMatchObject({ status: "completed", text: "done" });
    const events = await runtime.events("s1");
    expect(events.filter((event) => event.type.startsWith("turn.tool.")).map((event) => event.type)).toEqual(["turn.tool.started", "turn.tool.interrupted"]);
    expect(await runtime.replay("s1")).toMatchObject({ identical: true });
    await runtime.close();
  });
});
