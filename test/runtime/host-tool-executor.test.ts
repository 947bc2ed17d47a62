import { describe, expect, it } from "vitest";
import { AgentLoopBuilder, createRuntime } from "../../src/index.js";
import { MemoryEventLog, scriptedProvider } from "../../src/testing/index.js";
import { exampleSecretMarker, exampleSecrets } from "../support/secret-examples.js";
import { workspace } from "../support/tools.js";

async function setup(script: Parameters<typeof scriptedProvider>[0] = [{ content: "hello" }]) {
  const ws = workspace();
  const log = new MemoryEventLog();
  const provider = scriptedProvider(script);
  const runtime = await new AgentLoopBuilder()
    .withLog(log)
    .withProvider(provider)
    .withTools(ws.tools)
    .withPolicy({ workspace: { root: "/workspace", trusted: true } })
    .build();
  return { ws, log, provider, runtime, session: await runtime.openSession("s1") };
}

describe("host-routed calls (HostToolExecutor)", () => {
  it("runs an allowed tool through the gate, logs it, and keeps it out of the model's history", async () => {
    const { session, ws, runtime, provider } = await setup();
    const result = await session.runTool("read_file", { path: "a.txt" }, { by: "ui:open" });
    expect(result).toEqual({ callId: "native-1", status: "succeeded", content: "alpha", decision: "allow", rule: "mode:ask" });
    expect(ws.ran).toEqual(["read_file a.txt"]);
    const types = (await runtime.events("s1")).map((event) => event.type);
    // The gate's first look at a.txt through the file system is recorded before its decision (decisions version 2).
    expect(types.slice(-4)).toEqual(["session.native_tool.requested", "session.environment.observed", "session.native_tool.decided", "session.native_tool.completed"]);
    // Never in the provider's history.
    await session.send("hi");
    expect(JSON.stringify(provider.requests[0]?.messages)).not.toContain("alpha");
    expect(session.state().messages.every((message) => message.role !== "tool")).toBe(true);
    expect(await runtime.replay("s1")).toMatchObject({ identical: true });
  });

  it("does not run what the gate holds unless a person approved it up front", async () => {
    const { session, ws } = await setup();
    expect(await session.runTool("write_file", { path: "c.txt", content: "x" }, { by: "ui" })).toMatchObject({ status: "needs-approval", decision: "ask" });
    expect(ws.ran).toEqual([]);
    expect(await session.runTool("write_file", { path: "c.txt", content: "x" }, { by: "ui", approvedBy: "alice" })).toMatchObject({ status: "succeeded", decision: "ask" });
    expect(ws.files.get("c.txt")).toBe("x");
    const calls = session.state().hostCalls;
    expect(calls.map((call) => [call.callId, call.runs, call.approvedBy])).toEqual([
      ["native-1", false, undefined],
      ["native-2", true, "alice"],
    ]);
  });

  it("blocks a write outside the workspace and rejects invalid input as data", async () => {
    const { session, ws } = await setup();
    expect(await session.runTool("write_file", { path: "../x", content: "x" }, { by: "ui", approvedBy: "alice" })).toMatchObject({
      status: "blocked",
      rule: "hard-block:path-outside-workspace",
    });
    expect(await session.runTool("read_file", { path: 3 }, { by: "ui" })).toMatchObject({ status: "rejected", errorCode: "schema-invalid" });
    expect(await session.runTool("__proto__", {}, { by: "ui" })).toMatchObject({ status: "rejected", errorCode: "unknown-tool" });
    expect(ws.ran).toEqual([]);
  });

  it("never logs a secret in a host-routed call's input, and replay says so", async () => {
    const { session, runtime, log } = await setup();
    const result = await session.runTool("read_file", { path: "a.txt", token: exampleSecrets["github-token"] }, { by: "ui" });
    expect(result.status).toBe("succeeded");
    expect(JSON.stringify(await log.readStream("session-s1"))).not.toContain(exampleSecretMarker);
    const report = await runtime.replay("s1");
    expect(report.divergences).toEqual([]);
    expect(report.unverifiable).toEqual([{ position: expect.any(Number), type: "session.native_tool.decided", callId: "native-1", reason: "redacted" }]);
  });

  it("a host-routed call in doubt after a crash is marked interrupted, never run again", async () => {
    const log = new MemoryEventLog();
    const first = await createRuntime({ log, provider: scriptedProvider([]), tools: workspace().tools });
    await (await first.openSession("s1")).runTool("read_file", { path: "a.txt" }, { by: "ui" });
    // Rebuild the log without the completion, as a process killed mid-call leaves it.
    const events = await log.readStream("session-s1");
    const crashed = new MemoryEventLog();
    for (const event of events.slice(0, -1)) await crashed.appendToStream("session-s1", [{ type: event.type, data: event.data }]);
    const ws = workspace();
    const runtime = await createRuntime({ log: crashed, provider: scriptedProvider([]), tools: ws.tools });
    const session = await runtime.openSession("s1");
    expect(session.state().hostCalls[0]?.result).toMatchObject({ ok: false, code: "interrupted" });
    expect(ws.ran).toEqual([]);
    expect(await runtime.replay("s1")).toMatchObject({ identical: true });
  });
});
