import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { LevelEventLog, MemoryEventLog, type RecordedEvent } from "../../src/index.js";
import { otlpJson, sessionSpans } from "../../src/otel/index.js";
import { runTurnlogInProcess } from "../cli/support/turnlog-in-process.js";
import { exampleSecretMarker, exampleSecrets } from "../support/secret-examples.js";
import { driveScenario, scenarioRuntime, scenarioSecret } from "./support/otel-scenario.js";
import { memoryTracer, normalizeReadable } from "./support/otel-spans.js";

/** Every string anywhere in a value (attribute values, event attributes, names). */
function strings(value: unknown): string[] {
  if (typeof value === "string") return [value];
  if (Array.isArray(value)) return value.flatMap(strings);
  if (typeof value === "object" && value !== null) return Object.entries(value).flatMap(([key, item]) => [key, ...strings(item)]);
  return [];
}

describe("content in spans", () => {
  let workDir = "";
  let logDir = "";
  let sessionId = "";

  beforeAll(async () => {
    workDir = await mkdtemp(path.join(os.tmpdir(), "turnlog-otel-content-"));
    logDir = path.join(workDir, "log");
    const log = await LevelEventLog.open(logDir);
    try {
      const runtime = await scenarioRuntime(log);
      sessionId = await driveScenario(runtime);
      await runtime.close();
    } finally {
      await log.close();
    }
  }, 120_000);

  afterAll(async () => {
    if (workDir !== "") await rm(workDir, { recursive: true, force: true });
  });

  it("carries no tool arguments or results unless asked, and with --include-content carries them redacted", async () => {
    const plain = await runTurnlogInProcess(["otel", sessionId, "--dir", logDir], { cwd: workDir });
    expect(plain.stdout).not.toContain("gen_ai.tool.call.arguments");
    expect(plain.stdout).not.toContain("gen_ai.tool.call.result");
    expect(plain.stdout).not.toContain("alpha");
    const withContent = await runTurnlogInProcess(["otel", sessionId, "--dir", logDir, "--include-content"], { cwd: workDir });
    expect(withContent.code).toBe(0);
    const spans = JSON.parse(withContent.stdout).resourceSpans[0].scopeSpans[0].spans as { attributes: { key: string; value: { stringValue?: string } }[] }[];
    const attribute = (callId: string, key: string) =>
      spans.find((span) => span.attributes.some((a) => a.key === "gen_ai.tool.call.id" && a.value.stringValue === callId))?.attributes.find((a) => a.key === key)?.value.stringValue;
    expect(attribute("call_read", "gen_ai.tool.call.arguments")).toBe('{"path":"a.txt"}');
    expect(attribute("call_read", "gen_ai.tool.call.result")).toBe("alpha");
    expect(attribute("call_secret", "gen_ai.tool.call.result")).toContain("[REDACTED]");
    expect(attribute("call_missing", "gen_ai.tool.call.result")).toBe("no such file: missing.txt");
    expect(attribute("native-1", "gen_ai.tool.call.arguments")).toBe('{"path":"a.txt"}');
    for (const output of [plain.stdout, withContent.stdout]) {
      expect(output).not.toContain(scenarioSecret);
      expect(output).not.toContain(exampleSecretMarker);
    }
  });

  it("never exports a secret in live spans, with or without traceContent", async () => {
    for (const traceContent of [false, true]) {
      const { exporter, provider, tracer } = memoryTracer();
      const runtime = await scenarioRuntime(new MemoryEventLog(), tracer, { traceContent });
      await driveScenario(runtime);
      await runtime.close();
      await provider.forceFlush();
      const texts = strings(normalizeReadable(exporter.getFinishedSpans()));
      expect(texts.filter((text) => text.includes(exampleSecretMarker))).toEqual([]);
      expect(texts.some((text) => text === "alpha")).toBe(traceContent);
    }
  });

  it("scans opted-in content for secrets again: a log that holds one (written by an older turnlog, or by hand) exports none", () => {
    const at = (position: number, type: string, data: unknown): RecordedEvent => ({
      type,
      data,
      meta: { eventId: `e${position}`, stream: "session-s1", streamPosition: position, globalPosition: position, recordedAt: new Date(Date.UTC(2026, 0, 1, 0, 0, position)).toISOString(), schemaVersion: 1, prevHash: "", hash: "" },
    });
    const secretArguments = JSON.stringify({ url: `https://${exampleSecrets["url-credentials"]}@example.com/`, token: exampleSecrets["github-token"] });
    const events = [
      at(1, "session.started", { sessionId: "s1", provider: { id: "anthropic-messages:claude-test", format: "anthropic-messages", maxAttempts: 3 } }),
      at(2, "session.user_message.added", { content: "go" }),
      at(3, "turn.started", { turnId: "t1", turnSeq: 1, iteration: 1 }),
      at(4, "turn.provider.requested", { turnId: "t1", attempt: 1, providerId: "anthropic-messages:claude-test", format: "anthropic-messages", messageCount: 1, toolNames: ["fetch"] }),
      at(5, "turn.provider.responded", { turnId: "t1", attempt: 1, content: "", toolCalls: [], finishReason: "tool_calls" }),
      at(6, "turn.tool_calls.normalized", { turnId: "t1", content: "", calls: [{ index: 0, id: "c1", idSource: "provider", name: "fetch", argumentsText: secretArguments }], nativeReplaySafe: true, unsafeReasons: [] }),
      at(7, "turn.tool_calls.planned", { turnId: "t1", plans: [{ callId: "c1", status: "planned", tool: "fetch", input: {} }] }),
      at(8, "turn.tool_calls.gated", { turnId: "t1", approvalMode: "full-auto", decisions: [{ callId: "c1", decision: "allow", rule: "mode:full-auto", riskClass: "read-only-network", fingerprint: "f" }] }),
      at(9, "turn.tool.started", { turnId: "t1", callId: "c1", tool: "fetch", group: 0 }),
      at(10, "turn.tool.succeeded", { turnId: "t1", callId: "c1", output: `key: ${exampleSecrets["openai-key"]}\nAKIA: ${exampleSecrets["aws-access-key-id"]}`, durationMs: 3 }),
      at(11, "turn.completed", { turnId: "t1", text: "ok" }),
    ];
    for (const includeContent of [false, true]) {
      const spans = sessionSpans(events, { includeContent });
      const json = JSON.stringify(otlpJson(spans, { sessionId: "s1" }));
      expect(json).not.toContain(exampleSecretMarker);
      expect(json.includes("gen_ai.tool.call.result")).toBe(includeContent);
      expect(spans.find((span) => span.name === "chat claude-test")?.attributes["gen_ai.provider.name"]).toBe("anthropic");
    }
  });
});
