import { JsonTraceSerializer } from "@opentelemetry/otlp-transformer";
import { describe, expect, it } from "vitest";
import { MemoryEventLog } from "../../src/index.js";
import { createSpanEmitter, otlpJson, sessionSpans, spanIds, type OtlpTraceRequest } from "../../src/otel/index.js";
import { driveScenario, scenarioRuntime } from "./support/otel-scenario.js";
import { memoryTracer, normalizeOtlp, otlpSpans } from "./support/otel-spans.js";

async function scenarioEvents() {
  const log = new MemoryEventLog();
  const runtime = await scenarioRuntime(log);
  const sessionId = await driveScenario(runtime);
  const events = await runtime.events(sessionId);
  await runtime.close();
  return { sessionId, events };
}

/** The same spans through the OpenTelemetry SDK and the official OTLP/JSON serializer. */
async function officialJson(sessionId: string, events: Awaited<ReturnType<typeof scenarioEvents>>["events"]): Promise<OtlpTraceRequest> {
  const { exporter, provider, tracer } = memoryTracer();
  createSpanEmitter(tracer).recorded(sessionId, events);
  await provider.forceFlush();
  const bytes = JsonTraceSerializer.serializeRequest(exporter.getFinishedSpans());
  if (bytes === undefined) throw new Error("the serializer returned nothing");
  return JSON.parse(new TextDecoder().decode(bytes)) as OtlpTraceRequest;
}

describe("OTLP/JSON", () => {
  it("has the structure the official OTLP/JSON trace serializer gives the same spans", async () => {
    const { sessionId, events } = await scenarioEvents();
    const ours = otlpJson(sessionSpans(events, { sessionId }), { sessionId });
    const official = await officialJson(sessionId, events);
    expect(normalizeOtlp(ours)).toEqual(normalizeOtlp(official));
    // Field by field: the same members, the same JSON types (IDs hex, times decimal strings, ints as strings).
    const shape = (value: unknown): unknown =>
      Array.isArray(value) ? (value.length === 0 ? [] : [shape(value[0])]) : typeof value === "object" && value !== null ? Object.fromEntries(Object.entries(value).filter(([key]) => key !== "resource" && key !== "scope" && key !== "droppedAttributesCount").map(([key, item]) => [key, shape(item)]).sort(([a], [b]) => String(a).localeCompare(String(b)))) : typeof value;
    const oursSpans = ours.resourceSpans[0]!.scopeSpans[0]!.spans;
    const officialSpans = official.resourceSpans[0]!.scopeSpans[0]!.spans;
    const chat = (spans: typeof oursSpans) => spans.find((span) => span.name.startsWith("chat") && span.status.code === 2)!;
    const asked = (spans: typeof oursSpans) => spans.find((span) => span.attributes.some((attribute) => attribute.key === "gen_ai.tool.call.id" && "stringValue" in attribute.value && attribute.value.stringValue === "call_write"))!;
    expect(shape(chat(oursSpans))).toEqual(shape(chat(officialSpans)));
    expect(shape(asked(oursSpans))).toEqual(shape(asked(officialSpans)));
    for (const span of oursSpans) {
      expect(span.traceId).toMatch(/^[0-9a-f]{32}$/);
      expect(span.spanId).toMatch(/^[0-9a-f]{16}$/);
      expect(span.startTimeUnixNano).toMatch(/^\d+$/);
    }
    expect(new Set(oursSpans.map((span) => span.flags))).toEqual(new Set(officialSpans.map((span) => span.flags)));
  });

  it("derives trace and span IDs from the session and each span's identity, so the same log gives the same bytes", async () => {
    const { sessionId, events } = await scenarioEvents();
    const once = JSON.stringify(otlpJson(sessionSpans(events, { sessionId }), { sessionId }));
    expect(JSON.stringify(otlpJson(sessionSpans(events, { sessionId }), { sessionId }))).toBe(once);
    const spans = otlpSpans(JSON.parse(once) as OtlpTraceRequest);
    expect(new Set(spans.map((span) => span.spanId)).size).toBe(spans.length);
    // One trace per send, one per host-routed call.
    expect(new Set(spans.map((span) => span.traceId)).size).toBe(3);
    // Another session (a fork, say) with the same spans gets other IDs.
    expect(spanIds("other", { key: "send:2", traceKey: "send:2" })).not.toEqual(spanIds(sessionId, { key: "send:2", traceKey: "send:2" }));
  });
});
