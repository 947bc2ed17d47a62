/**
 * Spans from the three places a test gets them — the OpenTelemetry SDK's in-memory exporter (live),
 * OTLP/JSON (`turnlog otel`, `otlpJson`, the official serializer) — normalized to one comparable
 * shape: parents and traces by the spans' own identity (name, call, turn, attempt, position)
 * instead of random IDs, times in whole milliseconds, attributes as plain values.
 */
import { AsyncLocalStorage } from "node:async_hooks";
import { context, ROOT_CONTEXT, type Context, type ContextManager } from "@opentelemetry/api";
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor, type ReadableSpan, type SpanProcessor } from "@opentelemetry/sdk-trace-base";
import type { OtlpAnyValue, OtlpTraceRequest } from "../../../src/otel/otlp-json.js";

export interface NormalSpan {
  label: string;
  parent: string | null;
  /** The label of the root of the span's trace (found through the trace ID, not the parent chain). */
  traceRoot: string;
  name: string;
  kind: number;
  startMs: number;
  endMs: number;
  attributes: Record<string, unknown>;
  events: { name: string; timeMs: number; attributes: Record<string, unknown> }[];
  status: { code: number; message?: string };
}

interface RawSpan {
  traceId: string;
  spanId: string;
  parentSpanId: string | undefined;
  name: string;
  kind: number;
  startMs: number;
  endMs: number;
  attributes: Record<string, unknown>;
  events: NormalSpan["events"];
  status: NormalSpan["status"];
}

function labelOf(span: Pick<RawSpan, "name" | "attributes">): string {
  const a = span.attributes;
  return [span.name, a["gen_ai.tool.call.id"] ?? "", a["turnlog.turn.id"] ?? "", a["turnlog.attempt"] ?? "", a["turnlog.stream_position"] ?? ""].join("|");
}

/** `known`: spans not among `raw` that may be parents (started, never ended). */
function normalize(raw: readonly RawSpan[], known: readonly RawSpan[] = []): NormalSpan[] {
  const all = [...raw, ...known];
  const byId = new Map(all.map((span) => [span.spanId, span]));
  const roots = new Map(all.filter((span) => span.parentSpanId === undefined).map((span) => [span.traceId, labelOf(span)]));
  const spans = raw.map((span): NormalSpan => {
    const parent = span.parentSpanId !== undefined ? byId.get(span.parentSpanId) : undefined;
    if (span.parentSpanId !== undefined && parent === undefined) throw new Error(`span ${span.name} has a parent that is not among the spans`);
    return {
      label: labelOf(span),
      parent: parent !== undefined ? labelOf(parent) : null,
      traceRoot: roots.get(span.traceId) ?? "(no root in this trace)",
      name: span.name,
      kind: span.kind,
      startMs: span.startMs,
      endMs: span.endMs,
      attributes: Object.fromEntries(Object.entries(span.attributes).sort(([a], [b]) => a.localeCompare(b))),
      events: span.events,
      status: span.status.message !== undefined ? span.status : { code: span.status.code },
    };
  });
  return spans.sort((a, b) => a.label.localeCompare(b.label));
}

const hrMs = (time: readonly [number, number]) => Math.round(time[0] * 1000 + time[1] / 1e6);

/** OTLP's span kinds are the API's plus one (UNSPECIFIED is 0 in OTLP). */
export function normalizeReadable(spans: readonly ReadableSpan[], started: readonly ReadableSpan[] = []): NormalSpan[] {
  const ended = new Set(spans.map((span) => span.spanContext().spanId));
  return normalize(
    spans.map(rawOf),
    started.filter((span) => !ended.has(span.spanContext().spanId)).map(rawOf),
  );
}

function rawOf(span: ReadableSpan): RawSpan {
  return {
    traceId: span.spanContext().traceId,
    spanId: span.spanContext().spanId,
    parentSpanId: span.parentSpanContext?.spanId,
    name: span.name,
    kind: span.kind + 1,
    startMs: hrMs(span.startTime),
    endMs: hrMs(span.endTime),
    attributes: { ...span.attributes },
    events: span.events.map((event) => ({ name: event.name, timeMs: hrMs(event.time), attributes: { ...(event.attributes ?? {}) } })),
  status: { code: span.status.code === 2 ? 2 : 0, ...(span.status.message !== undefined ? { message: span.status.message } : {}) },
  };
}

function plain(value: OtlpAnyValue | Record<string, unknown>): unknown {
  const v = value as Record<string, unknown>;
  if ("stringValue" in v) return v.stringValue;
  if ("boolValue" in v) return v.boolValue;
  if ("intValue" in v) return Number(v.intValue);
  if ("doubleValue" in v) return v.doubleValue;
  if ("arrayValue" in v) return ((v.arrayValue as { values?: OtlpAnyValue[] }).values ?? []).map(plain);
  throw new Error(`unknown OTLP value ${JSON.stringify(value)}`);
}

function attributesOf(list: readonly { key: string; value: OtlpAnyValue }[] | undefined): Record<string, unknown> {
  return Object.fromEntries((list ?? []).map(({ key, value }) => [key, plain(value)]));
}

const nanosToMs = (value: string | number) => Number(BigInt(value) / 1_000_000n);

/** Every span of an OTLP/JSON `ExportTraceServiceRequest` (ours or the official serializer's). */
export function otlpSpans(request: OtlpTraceRequest): RawSpan[] {
  return request.resourceSpans.flatMap((resource) =>
    resource.scopeSpans.flatMap((scope) =>
      scope.spans.map((span) => ({
        traceId: span.traceId,
        spanId: span.spanId,
        parentSpanId: span.parentSpanId === undefined || span.parentSpanId === "" ? undefined : span.parentSpanId,
        name: span.name,
        kind: span.kind,
        startMs: nanosToMs(span.startTimeUnixNano),
        endMs: nanosToMs(span.endTimeUnixNano),
        attributes: attributesOf(span.attributes),
        events: (span.events ?? []).map((event) => ({ name: event.name, timeMs: nanosToMs(event.timeUnixNano), attributes: attributesOf(event.attributes) })),
        status: { code: span.status?.code ?? 0, ...(span.status?.message !== undefined && span.status.message !== "" ? { message: span.status.message } : {}) },
      })),
    ),
  );
}

export function normalizeOtlp(request: OtlpTraceRequest): NormalSpan[] {
  return normalize(otlpSpans(request));
}

/** A tracer that keeps every ended span in memory (the SDK 2.x way), and every started one in `started`. */
export function memoryTracer() {
  const exporter = new InMemorySpanExporter();
  const started: ReadableSpan[] = [];
  const recordStarts: SpanProcessor = {
    onStart: (span) => void started.push(span),
    onEnd: () => undefined,
    forceFlush: () => Promise.resolve(),
    shutdown: () => Promise.resolve(),
  };
  const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter), recordStarts] });
  return { exporter, provider, started, tracer: provider.getTracer("turnlog-test") };
}

/**
 * A context manager on AsyncLocalStorage (what `@opentelemetry/context-async-hooks` provides), so
 * `context.with` really makes a span active across awaits in a test.
 */
export function useAsyncContext(): () => void {
  const storage = new AsyncLocalStorage<Context>();
  const manager: ContextManager = {
    active: () => storage.getStore() ?? ROOT_CONTEXT,
    with: (ctx, fn, thisArg, ...args) => storage.run(ctx, () => fn.call(thisArg, ...args)),
    bind: (_ctx, target) => target,
    enable() {
      return this;
    },
    disable() {
      storage.disable();
      return this;
    },
  };
  context.setGlobalContextManager(manager);
  return () => context.disable();
}
