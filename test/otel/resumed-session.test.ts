import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { LevelEventLog } from "../../src/index.js";
import { otlpJson, sessionSpans } from "../../src/otel/index.js";
import { scenarioRuntime } from "./support/otel-scenario.js";
import { memoryTracer, normalizeOtlp, normalizeReadable, type NormalSpan } from "./support/otel-spans.js";

// A send paused for approval when its process ends: that runtime exports the spans that ended;
// the runtime that resumes the session starts the still-open spans again at their recorded start
// times and ends them. Together they are the spans derived from the log, except that the two
// halves of the send are in two traces (live IDs are the tracer's own).
describe("a send resumed by another runtime", () => {
  let workDir = "";
  let before: NormalSpan[] = [];
  let after: NormalSpan[] = [];
  let derived: NormalSpan[] = [];

  beforeAll(async () => {
    workDir = await mkdtemp(path.join(os.tmpdir(), "turnlog-otel-resume-"));
    const logDir = path.join(workDir, "log");
    const first = memoryTracer();
    let log = await LevelEventLog.open(logDir);
    let runtime = await scenarioRuntime(log, first.tracer);
    const session = await runtime.openSession("paused");
    expect((await session.send("Read a.txt and env.txt, write b.txt, tidy up.")).status).toBe("awaiting-approval");
    await runtime.close();
    await log.close();
    await first.provider.forceFlush();
    // The open send never ended here: its span is known from its start only.
    before = normalizeReadable(first.exporter.getFinishedSpans(), first.started);

    const second = memoryTracer();
    log = await LevelEventLog.open(logDir);
    runtime = await scenarioRuntime(log, second.tracer, { providerFrom: 1 });
    const reopened = await runtime.openSession("paused", { create: false });
    await reopened.approve("call_write", { by: "alice" });
    expect((await reopened.resume()).status).toBe("completed");
    const events = await runtime.events("paused");
    await runtime.close();
    await log.close();
    await second.provider.forceFlush();
    after = normalizeReadable(second.exporter.getFinishedSpans());
    derived = normalizeOtlp(otlpJson(sessionSpans(events, { sessionId: "paused" }), { sessionId: "paused" }));
  });

  afterAll(async () => {
    if (workDir !== "") await rm(workDir, { recursive: true, force: true });
  });

  it("exports, before the pause, only spans that ended; the held call and the send stay open", () => {
    expect(before.map((span) => span.name)).not.toContain("invoke_agent");
    expect(before.find((span) => span.attributes["gen_ai.tool.call.id"] === "call_write")).toBeUndefined();
    expect(before.some((span) => span.name === "chat gpt-test")).toBe(true);
  });

  it("continues the open spans in the resuming runtime, with their recorded start times and events", () => {
    const send = after.find((span) => span.name === "invoke_agent");
    const derivedSend = derived.find((span) => span.name === "invoke_agent");
    expect(send).toBeDefined();
    expect(send?.startMs).toBe(derivedSend?.startMs);
    const held = after.find((span) => span.attributes["gen_ai.tool.call.id"] === "call_write");
    expect(held?.events.map((event) => event.name)).toEqual(["turnlog.approval.requested", "turnlog.approval.granted", "turnlog.tool.started"]);
    expect(held?.parent).toBe(send?.label);
  });

  it("adds up to the spans derived from the log", () => {
    const strip = (spans: NormalSpan[]) => spans.map(({ traceRoot: _traceRoot, ...span }) => span);
    expect(strip([...before, ...after].sort((a, b) => a.label.localeCompare(b.label)))).toEqual(strip(derived));
  });
});
