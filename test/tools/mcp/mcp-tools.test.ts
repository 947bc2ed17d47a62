import { execFileSync, spawn, type ChildProcess } from "node:child_process";
import { createServer } from "node:net";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { z } from "zod";
import { connectMcpServer, createRuntime, defineTool, McpServerError, parseEvent } from "../../../src/index.js";
import type { McpServerConnection, McpStdioServerConfig, Runtime, ToolContext, ToolDefinition } from "../../../src/index.js";
import { MemoryEventLog, scriptedProvider } from "../../../src/testing/index.js";
import type { ScriptedProvider } from "../../../src/testing/index.js";
import { bundledScript } from "../../support/bundled-child.js";
import { sequentialIds, steppingClock } from "../../support/tools.js";

const require = createRequire(import.meta.url);
/** The reference server's entry point, run with this Node (its package has only a `bin`). */
const everything = join(dirname(require.resolve("@modelcontextprotocol/server-everything/package.json")), "dist/index.js");
const repositoryRoot = fileURLToPath(new URL("../../..", import.meta.url));
// The test's own MCP servers run from a bundle (test/support/bundled-child.ts): under tsx each start transpiles them again.
const pagedServer = { command: process.execPath, args: [await bundledScript("mcp-paged-server.ts")], cwd: repositoryRoot };
const mutableServer = { command: process.execPath, args: [await bundledScript("mcp-mutable-server.ts")], cwd: repositoryRoot };

/** PIDs of this process's children whose command line mentions `marker` (zombies already ended). */
function childProcesses(marker: string): number[] {
  const table = execFileSync("ps", ["-A", "-o", "pid=,ppid=,stat=,args="], { encoding: "utf8" });
  return table
    .split("\n")
    .map((line) => /^\s*(\d+)\s+(\d+)\s+(\S+)\s+(.*)$/.exec(line))
    .filter((match): match is RegExpExecArray => match !== null)
    .filter((match) => Number(match[2]) === process.pid && !match[3]!.startsWith("Z") && match[4]!.includes(marker))
    .map((match) => Number(match[1]));
}

const call = (name: string, args: unknown, id: string) => ({ id, name: `mcp__everything__${name}`, arguments: JSON.stringify(args) });

describe("MCP tools from @modelcontextprotocol/server-everything over stdio", () => {
  let runtime: Runtime;
  let provider: ScriptedProvider;
  const note = defineTool({ name: "note", description: "Keeps a note", risk: "read-only-local", input: z.object({ text: z.string() }), run: ({ text }) => text });

  beforeAll(async () => {
    provider = scriptedProvider([
      {
        toolCalls: [
          call("echo", { message: "hello from turnlog" }, "call_echo"),
          call("get-sum", { a: 2, b: 40 }, "call_sum"),
          call("get-resource-reference", { resourceId: 1.5 }, "call_error"),
          call("echo", { message: 3 }, "call_invalid"),
          call("get-tiny-image", {}, "call_image"),
          call("get-structured-content", { location: "Chicago" }, "call_structured"),
        ],
      },
      { content: "2 + 40 is 42." },
    ]);
    runtime = await createRuntime({
      log: new MemoryEventLog({ clock: steppingClock(), ids: sequentialIds("event") }),
      provider,
      tools: [note],
      mcpServers: [{ name: "everything", command: process.execPath, args: [everything, "stdio"] }],
      clock: steppingClock(),
    });
  });

  afterAll(async () => {
    await runtime?.close();
  });

  it("registers the server's tools first, as mcp__everything__<tool>, classed by their annotations", async () => {
    await runtime.openSession("listing");
    const started = parseEvent((await runtime.events("listing"))[0]!);
    if (started.type !== "session.started") throw new Error("expected session.started first");
    const tools = started.data.tools;
    expect(tools.at(-1)).toMatchObject({ name: "note", phase: "pre-skill-visibility", source: "host" });
    const mcp = tools.filter((tool) => tool.phase === "mcp");
    expect(mcp.every((tool) => tool.source === "mcp:everything")).toBe(true);
    const risk = Object.fromEntries(mcp.map((tool) => [tool.name, tool.riskClass]));
    expect(risk).toMatchObject({
      "mcp__everything__echo": "read-only-local",
      "mcp__everything__get-sum": "read-only-local",
      "mcp__everything__get-tiny-image": "read-only-local",
      // readOnlyHint: false, destructiveHint: false (openWorldHint: true): a side effect elsewhere.
      "mcp__everything__gzip-file-as-resource": "external-side-effect",
      "mcp__everything__toggle-simulated-logging": "external-side-effect",
    });
    // It requires task-based execution, which turnlog does not do: not offered at all.
    expect(risk).not.toHaveProperty("mcp__everything__simulate-research-query");
    expect(mcp.find((tool) => tool.name === "mcp__everything__echo")?.flags.idempotent).toBe(true);
  });

  it("runs the model's calls against the real server; an error result fails, a bad argument is a rejected plan", async () => {
    const session = await runtime.openSession("s1");
    expect(await session.send("what is 2 + 40?")).toMatchObject({ status: "completed", text: "2 + 40 is 42." });
    provider.assertConsumed();

    // The provider was offered the server's own JSON Schema, descriptions included.
    const sum = provider.requests[0]?.tools.find((tool) => tool.name === "mcp__everything__get-sum");
    expect(sum).toEqual({
      name: "mcp__everything__get-sum",
      description: "Returns the sum of two numbers",
      parameters: {
        type: "object",
        properties: { a: { type: "number", description: "First number" }, b: { type: "number", description: "Second number" } },
        required: ["a", "b"],
      },
    });

    const events = (await runtime.events("s1")).map((event) => parseEvent(event));
    const planned = events.find((event) => event.type === "turn.tool_calls.planned");
    if (planned?.type !== "turn.tool_calls.planned") throw new Error("no plans");
    expect(planned.data.plans.find((plan) => plan.callId === "call_invalid")).toMatchObject({
      status: "rejected",
      reason: "schema-invalid",
      issues: [{ path: "message", message: "must be string" }],
    });
    const succeeded = Object.fromEntries(events.flatMap((event) => (event.type === "turn.tool.succeeded" ? [[event.data.callId, event.data.output]] : [])));
    expect(succeeded).toMatchObject({ call_echo: "Echo: hello from turnlog", call_sum: "The sum of 2 and 40 is 42." });
    const failed = events.find((event) => event.type === "turn.tool.failed");
    expect(failed?.data).toMatchObject({ callId: "call_error", code: "tool-error", message: "Invalid resourceId: 1.5. Must be a finite positive integer." });

    // What the model reads next, call by call.
    const packets = Object.fromEntries([...session.state().calls.values()].map((state) => [state.callId, state.packet]));
    expect(packets.call_echo).toMatchObject({ ok: true, content: "Echo: hello from turnlog" });
    expect(packets.call_sum).toMatchObject({ ok: true, content: "The sum of 2 and 40 is 42." });
    expect(packets.call_error).toMatchObject({ ok: false, errorCode: "tool-error", content: "Error (tool-error): Invalid resourceId: 1.5. Must be a finite positive integer." });
    expect(packets.call_invalid).toMatchObject({ ok: false, errorCode: "schema-invalid", content: "Error: not run: arguments did not match the schema: message: must be string" });
    expect(packets.call_image?.content).toMatch(/^Here's the image you requested:\n\[image image\/png, \d+ bytes base64\]\nThe image above is the MCP logo\.$/);
    // Text content present: structuredContent is not repeated.
    expect(JSON.parse(packets.call_structured?.content ?? "")).toEqual({ temperature: 36, conditions: "Light rain / drizzle", humidity: 82 });

    expect(await runtime.replay("s1")).toMatchObject({ identical: true });
    const audit = await runtime.audit("s1");
    expect(audit.find((row) => row.callId === "call_sum")).toMatchObject({ tool: "mcp__everything__get-sum", riskClass: "read-only-local", decision: "allow", outcome: "succeeded" });
  });

  it("runtime.close() ends the server process", async () => {
    expect(childProcesses(everything)).toHaveLength(1);
    await runtime.close();
    expect(childProcesses(everything)).toEqual([]);
  });
});

describe("MCP server failures", () => {
  const provider = () => scriptedProvider([]);

  it("a command that does not exist fails createRuntime with an error naming the server", async () => {
    const attempt = createRuntime({ log: new MemoryEventLog(), provider: provider(), mcpServers: [{ name: "ghost", command: join(repositoryRoot, "no-such-mcp-server") }] });
    await expect(attempt).rejects.toSatisfy((error) => McpServerError.isInstance(error) && error.server === "ghost");
    await expect(attempt).rejects.toThrow(/^MCP server "ghost" could not be started: .*ENOENT/);
  });

  it("a server that exits at once is reported with the end of its stderr, and the servers that did start are closed", async () => {
    const attempt = createRuntime({
      log: new MemoryEventLog(),
      provider: provider(),
      mcpServers: [
        { name: "everything", command: process.execPath, args: [everything, "stdio"] },
        { name: "broken", command: process.execPath, args: ["-e", "console.error('missing API key'); process.exit(3)"] },
      ],
    });
    await expect(attempt).rejects.toThrow(/^MCP server "broken" could not be started: .*\(its stderr ended with: missing API key\)$/);
    expect(childProcesses(everything)).toEqual([]);
  });

  it("a server that never answers the handshake fails after connectTimeoutMs", async () => {
    // Reads its stdin and never replies; it ends when stdin closes, so closing it is quick.
    const silent = { name: "silent", command: process.execPath, args: ["-e", "process.stdin.resume(); process.stdin.on('end', () => process.exit(0))"], connectTimeoutMs: 300 };
    await expect(createRuntime({ log: new MemoryEventLog(), provider: provider(), mcpServers: [silent] })).rejects.toThrow(/^MCP server "silent" did not start within 300 ms: /);
  });

  it("a tool name that clashes with a host tool is the registry's duplicate error, and the server is closed", async () => {
    const clash = defineTool({ name: "mcp__everything__echo", description: "mine", risk: "read-only-local", input: z.object({}), run: () => "" });
    const attempt = createRuntime({
      log: new MemoryEventLog(),
      provider: provider(),
      tools: [clash],
      mcpServers: [{ name: "everything", command: process.execPath, args: [everything, "stdio"] }],
    });
    await expect(attempt).rejects.toThrow('tool "mcp__everything__echo" from host (pre-skill-visibility) duplicates the one from mcp:everything (mcp)');
    expect(childProcesses(everything)).toEqual([]);
  });

  it("two servers under one name are refused before either starts", async () => {
    const attempt = createRuntime({
      log: new MemoryEventLog(),
      provider: provider(),
      mcpServers: [
        { name: "twin", command: process.execPath, args: [everything, "stdio"] },
        { name: "twin", command: process.execPath, args: [everything, "stdio"] },
      ],
    });
    await expect(attempt).rejects.toThrow(TypeError);
    expect(childProcesses(everything)).toEqual([]);
  });
});

describe("MCP tools listed over several pages", () => {
  let server: McpServerConnection;
  const context: ToolContext = { signal: new AbortController().signal, callId: "c1", sessionId: "s1", workspace: { root: "/", trusted: false } };

  beforeAll(async () => {
    server = await connectMcpServer({ name: "fixture", ...pagedServer, risk: { fetch: "read-only-local" } });
  });

  afterAll(async () => {
    await server?.close();
  });

  it("follows the cursor, names every tool validly and classes each by its annotations or the override", () => {
    const byName = Object.fromEntries(server.tools.map((tool) => [tool.name, tool.risk]));
    expect(Object.keys(byName)).toEqual([expect.stringMatching(/^mcp__fixture__files_read_[0-9a-f]{8}$/), "mcp__fixture__wipe", "mcp__fixture__fetch"]);
    expect(Object.values(byName)).toEqual(["external-side-effect", "destructive-local", "read-only-local"]);
  });

  it("calls a renamed tool by its own MCP name", async () => {
    const read = server.tools[0]!;
    expect(await read.run({ path: "a.txt" }, context)).toEqual({ ok: true, content: 'files.read {"path":"a.txt"}' });
  });

  it("refuses a risk override for a tool the server does not list", async () => {
    await expect(connectMcpServer({ name: "fixture", ...pagedServer, risk: { fecth: "read-only-local" } })).rejects.toThrow(
      'MCP server "fixture" offers tools turnlog cannot use: the risk overrides name tools the server does not list: fecth',
    );
  });

  it("gives up on a server that repeats its pagination cursor", async () => {
    await expect(connectMcpServer({ name: "loop", ...pagedServer, args: [...pagedServer.args, "loop"] })).rejects.toThrow(
      'MCP server "loop" could not list its tools: the server repeated the pagination cursor "0"',
    );
  });
});

describe("MCP tools over Streamable HTTP", () => {
  let child: ChildProcess | undefined;
  let port = 0;

  beforeAll(async () => {
    port = await freePort();
    child = spawn(process.execPath, [everything, "streamableHttp"], { env: { ...process.env, PORT: String(port) }, stdio: ["ignore", "ignore", "pipe"] });
    await new Promise<void>((resolve, reject) => {
      let output = "";
      child!.stderr!.on("data", (chunk: Buffer) => {
        output += String(chunk);
        if (output.includes(`listening on port ${port}`)) resolve();
      });
      child!.once("exit", (code) => reject(new Error(`the HTTP server exited (${code}): ${output}`)));
    });
  });

  afterAll(() => {
    child?.kill();
  });

  it("lists and calls the server's tools by URL", async () => {
    const server = await connectMcpServer({ name: "remote", url: `http://127.0.0.1:${port}/mcp`, headers: { "x-test": "1" } });
    try {
      const sum = server.tools.find((tool) => tool.name === "mcp__remote__get-sum");
      expect(sum?.risk).toBe("read-only-local");
      const context: ToolContext = { signal: new AbortController().signal, callId: "c1", sessionId: "s1", workspace: { root: "/", trusted: false } };
      expect(await sum?.run({ a: 1, b: 2 }, context)).toEqual({ ok: true, content: "The sum of 1 and 2 is 3." });

      // The call's signal reaches the SDK: a cancelled ten-second operation lets go at once.
      const slow = server.tools.find((tool) => tool.name === "mcp__remote__trigger-long-running-operation");
      const controller = new AbortController();
      setTimeout(() => controller.abort(new Error("cancelled by the test")), 100);
      // Had the signal not reached the SDK, the operation would have run its ten seconds and answered.
      await expect(slow?.run({ duration: 10, steps: 2 }, { ...context, signal: controller.signal })).rejects.toThrow(/cancelled by the test/);
    } finally {
      await server.close();
    }
  });
});

describe("MCP servers whose tool list changes (tools/list_changed)", () => {
  // A signal per call: the SDK leaves its abort listener on the signal after the call ends.
  const context = (): ToolContext => ({ signal: new AbortController().signal, callId: "c1", sessionId: "s1", workspace: { root: "/", trusted: false } });
  const control = ["mcp__mutable__add_tool", "mcp__mutable__remove_tool", "mcp__mutable__set_listing"];
  const names = (tools: readonly ToolDefinition[]) => tools.map((tool) => tool.name);
  const call = (server: McpServerConnection, tool: string, args: Record<string, unknown>) => {
    const found = server.tools.find((candidate) => candidate.name === `mcp__mutable__${tool}`);
    if (found === undefined) throw new Error(`the connection does not list ${tool}`);
    return found.run(args, context());
  };
  /** Starts the fixture with `initial` echo tools; `stderr` collects what it writes there. */
  const connect = (initial: string[] = [], options: Partial<McpStdioServerConfig> = {}) => {
    const stderr = { text: "" };
    const connecting = connectMcpServer({
      name: "mutable",
      ...mutableServer,
      args: [...mutableServer.args, ...initial],
      onStderr: (text) => {
        stderr.text += text;
      },
      ...options,
    });
    return connecting.then((server) => ({ server, stderr }));
  };

  it("lists, announces and calls a tool the server adds, over every page, with the config's risk overrides", async () => {
    const { server } = await connect(["greet"], { risk: { greet: "destructive-local" } });
    try {
      expect(names(server.tools)).toEqual([...control, "mcp__mutable__greet"]);
      const changed = nextToolsChange(server);
      expect(await call(server, "add_tool", { name: "wave" })).toEqual({ ok: true, content: "added wave" });
      // The fixture lists one tool per page: "wave" is on the fifth, so the re-list followed the cursor.
      const announced = await changed;
      expect(names(announced)).toEqual([...control, "mcp__mutable__greet", "mcp__mutable__wave"]);
      expect(server.tools).toBe(announced);
      const risk = Object.fromEntries(announced.map((tool) => [tool.name, tool.risk]));
      expect(risk).toMatchObject({ "mcp__mutable__greet": "destructive-local", "mcp__mutable__wave": "read-only-local" });

      const wave = server.tools.find((tool) => tool.name === "mcp__mutable__wave")!;
      expect(await wave.run({ text: "hello" }, context())).toEqual({ ok: true, content: "wave: hello" });
      // Validated by the server's own JSON Schema, as a tool listed at connect is.
      expect(wave.input.safeParse({ text: 3 }).error?.issues).toMatchObject([{ path: ["text"], message: "must be string" }]);
    } finally {
      await server.close();
    }
  });

  it("drops a tool the server removes, the same way", async () => {
    const { server } = await connect(["greet", "wave"]);
    try {
      const changed = nextToolsChange(server);
      await call(server, "remove_tool", { name: "greet" });
      expect(names(await changed)).toEqual([...control, "mcp__mutable__wave"]);
      expect(names(server.tools)).toEqual([...control, "mcp__mutable__wave"]);
    } finally {
      await server.close();
    }
  });

  it("does not call an unsubscribed listener, and a listener that throws does not stop the others", async () => {
    const { server } = await connect();
    try {
      const unsubscribed = vi.fn();
      const stop = server.onToolsChanged(unsubscribed);
      stop();
      const throwing = vi.fn(() => {
        throw new Error("a bug in the host's listener");
      });
      server.onToolsChanged(throwing);
      // Subscribed after the throwing one, so it is called after it.
      const first = nextToolsChange(server);
      await call(server, "add_tool", { name: "greet" });
      expect(names(await first)).toContain("mcp__mutable__greet");

      // The connection keeps following changes.
      const second = nextToolsChange(server);
      await call(server, "add_tool", { name: "wave" });
      expect(names(await second)).toContain("mcp__mutable__wave");
      expect(throwing).toHaveBeenCalledTimes(2);
      expect(unsubscribed).not.toHaveBeenCalled();
    } finally {
      await server.close();
    }
  });

  it("keeps its tools when the re-list fails, and takes the next change", async () => {
    const { server, stderr } = await connect(["greet"]);
    try {
      const listener = vi.fn();
      server.onToolsChanged(listener);
      const before = server.tools;
      await call(server, "set_listing", { fail: true });
      await call(server, "add_tool", { name: "wave" });
      await vi.waitFor(() => expect(stderr.text).toContain("refused to list"), { timeout: 60_000 });
      // A round trip after the refusal: its answer comes after the failed listing's.
      await call(server, "set_listing", { fail: false });
      expect(server.tools).toBe(before);
      expect(listener).not.toHaveBeenCalled();

      const changed = nextToolsChange(server);
      await call(server, "add_tool", { name: "smile" });
      expect(names(await changed)).toEqual([...control, "mcp__mutable__greet", "mcp__mutable__wave", "mcp__mutable__smile"]);
    } finally {
      await server.close();
    }
  });

  it("keeps its tools when a risk override names a tool the server dropped", async () => {
    const { server, stderr } = await connect(["greet"], { risk: { greet: "destructive-local" } });
    try {
      const listener = vi.fn();
      server.onToolsChanged(listener);
      await call(server, "remove_tool", { name: "greet" });
      await vi.waitFor(() => expect(stderr.text).toContain("listed: add_tool, remove_tool, set_listing\n"), { timeout: 60_000 });
      await call(server, "set_listing", { fail: false });
      expect(listener).not.toHaveBeenCalled();
      expect(server.tools.find((tool) => tool.name === "mcp__mutable__greet")?.risk).toBe("destructive-local");
    } finally {
      await server.close();
    }
  });

  it("a runtime follows the change: the session logs the new tool set before it offers it, and replays identical", async () => {
    const mutable = (name: string, args: Record<string, unknown>, id: string) => ({ id, name: `mcp__mutable__${name}`, arguments: JSON.stringify(args) });
    const provider = scriptedProvider([
      { toolCalls: [mutable("add_tool", { name: "wave" }, "call_add")] },
      { content: "wave is there now" },
      { toolCalls: [mutable("wave", { text: "hello" }, "call_wave")] },
      { content: "waved" },
    ]);
    const runtime = await createRuntime({
      log: new MemoryEventLog(),
      provider,
      mcpServers: [{ name: "mutable", ...mutableServer, risk: { add_tool: "read-only-local" } }],
    });
    try {
      const session = await runtime.openSession("follows");
      expect((await session.send("add a tool called wave")).status).toBe("completed");
      await vi.waitFor(() => expect(runtime.listTools().map((tool) => tool.name)).toContain("mcp__mutable__wave"), { timeout: 60_000 });
      expect((await session.send("wave")).status).toBe("completed");

      const events = (await runtime.events("follows")).map((event) => parseEvent(event));
      const changes = events.flatMap((event, index) => (event.type === "session.tools.changed" ? [{ index, tools: event.data.tools }] : []));
      expect(changes).toHaveLength(1);
      const [change] = changes;
      expect(change!.tools.find((tool) => tool.name === "mcp__mutable__wave")).toMatchObject({ riskClass: "read-only-local", parameters: { required: ["text"] } });
      // The first request that offered wave comes after the change that recorded it.
      const firstOffer = provider.requests.findIndex((request) => request.tools.some((tool) => tool.name === "mcp__mutable__wave"));
      expect(firstOffer).toBeGreaterThan(0);
      const requests = events.flatMap((event, index) => (event.type === "turn.provider.requested" ? [index] : []));
      expect(requests[firstOffer]).toBeGreaterThan(change!.index);
      expect(requests[firstOffer - 1]).toBeLessThan(change!.index);
      expect(events.some((event) => event.type === "turn.tool.succeeded" && event.data.callId === "call_wave")).toBe(true);

      const report = await runtime.replay("follows");
      expect(report.divergences).toEqual([]);
      expect(report.identical).toBe(true);
    } finally {
      await runtime.close();
    }
  });
});

/** The tool list `server` announces next; fails after `timeoutMs` if none comes. */
function nextToolsChange(server: McpServerConnection, timeoutMs = 5_000): Promise<readonly ToolDefinition[]> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      stop();
      reject(new Error(`MCP server "${server.name}" announced no change of its tools within ${timeoutMs} ms`));
    }, timeoutMs);
    const stop = server.onToolsChanged((tools) => {
      clearTimeout(timer);
      stop();
      resolve(tools);
    });
  });
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once("error", reject);
    probe.listen(0, "127.0.0.1", () => {
      const address = probe.address();
      probe.close(() => (typeof address === "object" && address !== null ? resolve(address.port) : reject(new Error("no port"))));
    });
  });
}
