import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { trace } from "@opentelemetry/api";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { LevelEventLog } from "../../src/index.js";
import { runTurnlogInProcess } from "../cli/support/turnlog-in-process.js";
import { driveScenario, scenarioRuntime } from "./support/otel-scenario.js";
import { memoryTracer, normalizeOtlp, normalizeReadable, useAsyncContext, type NormalSpan } from "./support/otel-spans.js";

// The Done-when of issue 16 (spans): the spans a live run exports and the spans `turnlog otel`
// derives afterwards from the same log are equal — names, kinds, attributes, span events, status,
// parent links and traces (by structure), and times to the millisecond.
describe("spans live and after the fact", () => {
  let workDir = "";
  let logDir = "";
  let sessionId = "";
  let live: NormalSpan[] = [];
  const seen: { activeSpan?: () => string | undefined; spans: (string | undefined)[] } = { spans: [] };

  beforeAll(async () => {
    workDir = await mkdtemp(path.join(os.tmpdir(), "turnlog-otel-"));
    logDir = path.join(workDir, "log");
    const stopContext = useAsyncContext();
    // A tool reads the span active while it runs: its own spans would nest there.
    seen.activeSpan = () => (trace.getActiveSpan() as unknown as { name?: string } | undefined)?.name;
    const { exporter, provider, tracer } = memoryTracer();
    const log = await LevelEventLog.open(logDir);
    try {
      const runtime = await scenarioRuntime(log, tracer, { seen });
      sessionId = await driveScenario(runtime);
      await runtime.close();
    } finally {
      await log.close();
      stopContext();
    }
    await provider.forceFlush();
    live = normalizeReadable(exporter.getFinishedSpans());
  }, 120_000);

  afterAll(async () => {
    if (workDir !== "") await rm(workDir, { recursive: true, force: true });
  });

  it("exports the span tree live: sends, provider attempts, calls and a host-routed call", () => {
    const names = live.map((span) => `${span.parent === null ? "" : "  "}${span.name}`);
    expect(names.filter((name) => name === "invoke_agent")).toHaveLength(2);
    // Turn 1; turn 2's failed attempt and its retry; turns 3 and 4 of the second send.
    expect(live.filter((span) => span.name === "chat gpt-test")).toHaveLength(5);
    // Six calls of the first send, one of the second, one routed by the host.
    expect(live.filter((span) => span.name.startsWith("execute_tool"))).toHaveLength(8);
    for (const span of live) {
      if (span.name === "invoke_agent" || span.attributes["gen_ai.tool.call.id"] === "native-1") expect(span.parent).toBeNull();
      else expect(span.parent).toMatch(/^invoke_agent\|/);
      expect(span.endMs).toBeGreaterThanOrEqual(span.startMs);
    }
  });

  it("`turnlog otel` derives the same spans from the log", async () => {
    const run = await runTurnlogInProcess(["otel", sessionId, "--dir", logDir], { cwd: workDir });
    expect(run.stderr).toBe("");
    expect(run.code).toBe(0);
    const after = normalizeOtlp(JSON.parse(run.stdout));
    expect(after).toEqual(live);
  });

  it("gives every outcome its attributes and status", () => {
    const call = (id: string) => live.find((span) => span.attributes["gen_ai.tool.call.id"] === id);
    expect(call("call_read")).toMatchObject({ status: { code: 0 }, attributes: { "turnlog.decision": "allow", "turnlog.outcome": "succeeded", "gen_ai.tool.type": "function" } });
    expect(call("call_write")).toMatchObject({ attributes: { "turnlog.decision": "ask", "turnlog.approver": "alice", "turnlog.outcome": "succeeded" } });
    expect(call("call_write")?.events.map((event) => event.name)).toEqual(["turnlog.approval.requested", "turnlog.approval.granted", "turnlog.tool.started"]);
    expect(call("call_write_again")).toMatchObject({ status: { code: 2 }, attributes: { "turnlog.approver": "bob", "turnlog.outcome": "denied", "error.type": "denied-by-user" } });
    expect(call("call_remove")).toMatchObject({ status: { code: 2 }, attributes: { "turnlog.decision": "deny", "turnlog.outcome": "denied", "error.type": "denied" } });
    expect(call("call_unknown")).toMatchObject({ status: { code: 2 }, attributes: { "turnlog.decision": "rejected", "turnlog.rule": "rejected:unknown-tool", "error.type": "unknown-tool" } });
    expect(call("call_missing")).toMatchObject({ status: { code: 2 }, attributes: { "turnlog.outcome": "failed", "error.type": "tool-exception" } });
    expect(call("native-1")).toMatchObject({ attributes: { "turnlog.requested_by": "ui:preview", "turnlog.outcome": "succeeded" } });
    const failed = live.find((span) => span.attributes["turnlog.turn.id"] !== undefined && span.name.startsWith("chat") && span.status.code === 2);
    expect(failed).toMatchObject({ attributes: { "error.type": "transport", "turnlog.retryable": true, "turnlog.attempt": 1, "gen_ai.provider.name": "openai", "gen_ai.request.model": "gpt-test" } });
    const retried = live.find((span) => span.name.startsWith("chat") && span.attributes["turnlog.attempt"] === 2);
    expect(retried).toMatchObject({ status: { code: 0 }, attributes: { "gen_ai.response.finish_reasons": ["stop"], "gen_ai.usage.input_tokens": 300, "gen_ai.usage.output_tokens": 8 } });
    expect(live.filter((span) => span.name === "invoke_agent").map((span) => span.attributes["turnlog.outcome"])).toEqual(["completed", "completed"]);
  });

  it("runs a tool's handler with its execute_tool span active", () => {
    // call_read, call_secret, call_missing and the host-routed read, in that order of start.
    expect(seen.spans).toEqual(["execute_tool read_file", "execute_tool read_file", "execute_tool read_file", "execute_tool read_file"]);
  });

  it("exports no tool arguments or results by default", () => {
    for (const span of live) {
      expect(Object.keys(span.attributes).filter((key) => key.startsWith("gen_ai.tool.call.") && key !== "gen_ai.tool.call.id")).toEqual([]);
    }
  });

  it("writes the same bytes every time, to --out as to stdout", async () => {
    const first = await runTurnlogInProcess(["otel", sessionId, "--dir", logDir], { cwd: workDir });
    const second = await runTurnlogInProcess(["otel", sessionId, "--dir", logDir, "--out", "spans.json"], { cwd: workDir });
    expect(second.code).toBe(0);
    expect(second.stdout).toBe("");
    expect(second.stderr).toMatch(/^wrote 15 spans of session otel-scenario to spans\.json\n$/);
    const { readFile } = await import("node:fs/promises");
    expect(await readFile(path.join(workDir, "spans.json"), "utf8")).toBe(first.stdout);
  });
});
