import { mkdtemp, readdir, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { createRuntime, defineTool, LevelEventLog } from "../../src/index.js";
import type { EventLog } from "../../src/index.js";
import { MemoryEventLog, scriptedProvider } from "../../src/testing/index.js";
import { exampleSecretMarker, exampleSecrets, exampleSecretTexts } from "../support/secret-examples.js";

/** A tool that records the real input it ran with and echoes a value back. */
function echoTool(received: unknown[]) {
  return defineTool({
    name: "echo",
    description: "echo",
    risk: "read-only-local",
    input: z.object({ text: z.string() }),
    run: ({ text }) => {
      received.push(text);
      return `you said: ${text}`;
    },
  });
}

function deployTool(received: unknown[]) {
  return defineTool({
    name: "deploy",
    description: "deploy",
    risk: "external-side-effect",
    input: z.object({ apiKey: z.string(), target: z.string() }),
    run: (input) => {
      received.push(input);
      return "deployed";
    },
  });
}

const dirs: string[] = [];
afterEach(async () => {
  await Promise.all(dirs.splice(0).map((dir) => rm(dir, { recursive: true, force: true })));
});

async function allText(log: EventLog, stream: string) {
  return JSON.stringify(await log.readStream(stream, { maxCount: 10_000 }));
}

describe("secrets in tool calls", () => {
  it("logs arguments and outputs redacted, runs the tool with the real values, and keeps the group off native replay", async () => {
    const received: unknown[] = [];
    const texts = Object.values(exampleSecretTexts);
    const provider = scriptedProvider([{ toolCalls: texts.map((text) => ({ name: "echo", arguments: JSON.stringify({ text }) })) }, { content: "ok" }]);
    const log = new MemoryEventLog();
    const runtime = await createRuntime({ log, provider, tools: [echoTool(received)] });
    const session = await runtime.openSession("s1");
    expect(await session.send("go")).toMatchObject({ status: "completed" });

    // The handler saw every real value.
    expect(received).toEqual(texts);
    // The log holds none of them, anywhere: response, normalized turn, plan, result, packets.
    const logged = await allText(log, "session-s1");
    for (const secret of Object.values(exampleSecrets)) expect(logged).not.toContain(secret);
    expect(logged).not.toContain(exampleSecretMarker);
    expect(logged).toContain("[REDACTED]");

    const normalized = (await runtime.events("s1")).find((event) => event.type === "turn.tool_calls.normalized")?.data as {
      calls: { argumentsRedacted?: boolean }[];
      nativeReplaySafe: boolean;
      unsafeReasons: string[];
    };
    expect(normalized.calls.every((call) => call.argumentsRedacted === true)).toBe(true);
    expect(normalized).toMatchObject({ nativeReplaySafe: false, unsafeReasons: ["unsafe_arguments"] });
    // The model's next request does not replay that group as native tool calls.
    const messages = provider.requests.at(-1)?.messages as { role: string }[];
    expect(messages.some((message) => message.role === "tool")).toBe(false);
    expect(JSON.stringify(messages)).not.toContain(exampleSecretMarker);

    // Replay is identical, and says which plans it could not recompute and why.
    const report = await runtime.replay("s1");
    expect(report.divergences).toEqual([]);
    expect(report.unverifiable).toHaveLength(texts.length);
    expect(report.unverifiable.every((entry) => entry.reason === "redacted" && entry.type === "turn.tool_calls.planned")).toBe(true);
  });

  it("leaves ordinary arguments alone", async () => {
    const received: unknown[] = [];
    const provider = scriptedProvider([{ toolCalls: [{ name: "echo", arguments: '{"text": "APP_NAME=turnlog, max_tokens 3"}' }] }, { content: "ok" }]);
    const runtime = await createRuntime({ log: new MemoryEventLog(), provider, tools: [echoTool(received)] });
    const session = await runtime.openSession("s1");
    await session.send("go");
    const normalized = (await runtime.events("s1")).find((event) => event.type === "turn.tool_calls.normalized")?.data as { nativeReplaySafe: boolean };
    expect(normalized.nativeReplaySafe).toBe(true);
    expect(await runtime.replay("s1")).toMatchObject({ identical: true, unverifiable: [] });
  });

  it("shows a reviewer the redacted arguments, and runs the approved call with the real ones", async () => {
    const received: unknown[] = [];
    const secret = exampleSecrets["openai-key"];
    const provider = scriptedProvider([{ toolCalls: [{ name: "deploy", arguments: JSON.stringify({ apiKey: secret, target: "prod" }) }] }, { content: "done" }]);
    const runtime = await createRuntime({ log: new MemoryEventLog(), provider, tools: [deployTool(received)] });
    const session = await runtime.openSession("s1");
    const held = await session.send("deploy");
    expect(held.pendingApprovals[0]?.input).toEqual({ apiKey: "[REDACTED]", target: "prod" });
    await session.approve(held.pendingApprovals[0]!.callId, { by: "alice", fingerprint: held.pendingApprovals[0]!.fingerprint });
    expect(await session.resume()).toMatchObject({ status: "completed" });
    expect(received).toEqual([{ apiKey: secret, target: "prod" }]);
  });

  it("a held call with secret arguments cannot run after a restart, and its packet says so", async () => {
    const dir = await mkdtemp(join(tmpdir(), "turnlog-secrets-"));
    dirs.push(dir);
    const first = await LevelEventLog.open(dir, { durability: "sync" });
    const before = await createRuntime({
      log: first,
      provider: scriptedProvider([{ toolCalls: [{ name: "deploy", arguments: JSON.stringify({ apiKey: exampleSecrets["github-token"], target: "prod" }) }] }]),
      tools: [deployTool([])],
    });
    const held = await (await before.openSession("s1")).send("deploy");
    await first.close();

    const received: unknown[] = [];
    const log = await LevelEventLog.open(dir, { durability: "sync" });
    const provider = scriptedProvider([{ content: "could not deploy" }]);
    const runtime = await createRuntime({ log, provider, tools: [deployTool(received)] });
    const session = await runtime.openSession("s1");
    await session.approve(held.pendingApprovals[0]!.callId, { by: "alice" });
    expect(await session.resume()).toMatchObject({ status: "completed" });
    expect(received).toEqual([]);
    const packet = (provider.requests[0]?.messages as { role: string; content: string }[]).find((message) => message.role === "tool");
    expect(packet).toBeUndefined(); // unsafe group: described as text, not replayed as a tool call
    const failed = (await runtime.events("s1")).find((event) => event.type === "turn.tool.failed");
    expect(failed?.data).toMatchObject({ code: "arguments-unavailable" });
    expect(JSON.stringify(provider.requests[0]?.messages)).toContain("arguments-unavailable");
    await log.close();

    // Grep the LevelDB files themselves: the raw secret was never written.
    for (const file of await readdir(dir)) {
      const bytes = await readFile(join(dir, file));
      expect(bytes.includes(Buffer.from(exampleSecretMarker)), file).toBe(false);
    }
  });
});

describe("approvals bound to a fingerprint", () => {
  it("the runner refuses a call whose approval was given for other arguments", async () => {
    const log = new MemoryEventLog();
    const provider = scriptedProvider([{ toolCalls: [{ name: "deploy", arguments: '{"apiKey": "", "target": "prod"}' }] }]);
    const first = await createRuntime({ log, provider, tools: [deployTool([])] });
    const held = await (await first.openSession("s1")).send("deploy");
    const pending = held.pendingApprovals[0]!;
    // An approval event for the same call ID but another fingerprint, as a forged or stale answer would be.
    const version = await log.streamVersion("session-s1");
    await log.appendToStream(
      "session-s1",
      [{ type: "turn.approval.granted", data: { turnId: "turn-1", callId: pending.callId, fingerprint: "f".repeat(64), by: "mallory", scope: "call" } }],
      { expectedStreamVersion: version },
    );

    const received: unknown[] = [];
    const runtime = await createRuntime({ log, provider: scriptedProvider([{ content: "not deployed" }]), tools: [deployTool(received)] });
    const session = await runtime.openSession("s1");
    expect(await session.resume()).toMatchObject({ status: "completed" });
    expect(received).toEqual([]);
    const failed = (await runtime.events("s1")).find((event) => event.type === "turn.tool.failed");
    expect(failed?.data).toMatchObject({ callId: pending.callId, code: "fingerprint-mismatch" });
  });
});
