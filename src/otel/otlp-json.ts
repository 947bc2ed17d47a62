import { createHash } from "node:crypto";
import packageJson from "../../package.json" with { type: "json" };
import type { DerivedSpan, SpanAttributes, SpanAttributeValue } from "./span-derivation.js";

/*
 * The OTLP/JSON form of derived spans (an `ExportTraceServiceRequest`, as an OTLP/HTTP collector
 * takes it with `content-type: application/json`), built by hand so that `turnlog otel` needs no
 * OpenTelemetry package at run time; test/otel checks it against the official serializer. Trace
 * and span IDs are hashes of the session ID and the span's identity, so the same log always gives
 * the same bytes.
 */

/** An OTLP/JSON attribute value. */
export type OtlpAnyValue =
  | { stringValue: string }
  | { boolValue: boolean }
  | { intValue: string }
  | { doubleValue: number }
  | { arrayValue: { values: OtlpAnyValue[] } };

export interface OtlpKeyValue {
  key: string;
  value: OtlpAnyValue;
}

export interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  /** 1 INTERNAL, 3 CLIENT. */
  kind: number;
  startTimeUnixNano: string;
  endTimeUnixNano: string;
  attributes: OtlpKeyValue[];
  droppedAttributesCount: number;
  events: { timeUnixNano: string; name: string; attributes: OtlpKeyValue[]; droppedAttributesCount: number }[];
  droppedEventsCount: number;
  links: never[];
  droppedLinksCount: number;
  /** 0 UNSET, 2 ERROR. */
  status: { code: number; message?: string };
  /** W3C trace flags (sampled) and "whether the parent is remote" known: never remote here. */
  flags: number;
}

/** The body of an OTLP/HTTP trace export. */
export interface OtlpTraceRequest {
  resourceSpans: {
    resource: { attributes: OtlpKeyValue[]; droppedAttributesCount: number };
    scopeSpans: { scope: { name: string; version: string }; spans: OtlpSpan[] }[];
  }[];
}

export interface OtlpJsonOptions {
  /** The session the spans belong to: part of every ID. */
  sessionId: string;
  /** `service.name` of the resource. Default `turnlog`. */
  serviceName?: string;
}

/** The instrumentation scope turnlog's spans are reported under. */
export const otelScope = { name: "turnlog", version: packageJson.version } as const;

function hexHash(parts: readonly string[], hexDigits: number): string {
  const hash = createHash("sha256");
  for (const part of parts) hash.update(part).update("\u0000");
  const hex = hash.digest("hex").slice(0, hexDigits);
  // An all-zero ID is invalid in OTLP; a SHA-256 prefix of zeros is as good as impossible, but cheap to rule out.
  return /^0+$/.test(hex) ? `${hex.slice(0, -1)}1` : hex;
}

/**
 * The deterministic IDs of a derived span: the trace ID from its root's key, the span ID from its own.
 *
 * @example
 * spanIds("s1", { key: "tool:call_a", traceKey: "send:2" }); // { traceId: "…32 hex", spanId: "…16 hex" }
 */
export function spanIds(sessionId: string, span: Pick<DerivedSpan, "key" | "traceKey">): { traceId: string; spanId: string } {
  return { traceId: hexHash(["turnlog-trace", sessionId, span.traceKey], 32), spanId: hexHash(["turnlog-span", sessionId, span.key], 16) };
}

function anyValue(value: SpanAttributeValue): OtlpAnyValue {
  if (typeof value === "string") return { stringValue: value };
  if (typeof value === "boolean") return { boolValue: value };
  if (typeof value === "number") return Number.isInteger(value) ? { intValue: String(value) } : { doubleValue: value };
  return { arrayValue: { values: value.map((item) => ({ stringValue: item })) } };
}

function keyValues(attributes: SpanAttributes): OtlpKeyValue[] {
  return Object.entries(attributes).map(([key, value]) => ({ key, value: anyValue(value) }));
}

/** The span flags of a sampled span whose parent (if any) is known to be local: 0x01 | 0x100. */
const localSampledFlags = 0x101;

function nanos(ms: number): string {
  return (BigInt(Math.round(ms)) * 1_000_000n).toString();
}

/**
 * Derived spans as one OTLP/JSON `ExportTraceServiceRequest`: one resource (`service.name`), one
 * scope (`turnlog`), hex IDs, times in nanoseconds as strings. A span still open is written with
 * the end time it was cut at (`sessionSpans` gives it one).
 *
 * @example
 * const body = JSON.stringify(otlpJson(sessionSpans(events), { sessionId: "s1" }));
 * await fetch("http://127.0.0.1:4318/v1/traces", { method: "POST", headers: { "content-type": "application/json" }, body });
 */
export function otlpJson(spans: readonly DerivedSpan[], options: OtlpJsonOptions): OtlpTraceRequest {
  const sessionId = options.sessionId;
  const otlpSpans = spans.map((span): OtlpSpan => {
    const { traceId, spanId } = spanIds(sessionId, span);
    return {
      traceId,
      spanId,
      ...(span.parentKey !== undefined ? { parentSpanId: spanIds(sessionId, { key: span.parentKey, traceKey: span.traceKey }).spanId } : {}),
      name: span.name,
      kind: span.kind === "client" ? 3 : 1,
      startTimeUnixNano: nanos(span.startTimeMs),
      endTimeUnixNano: nanos(span.endTimeMs ?? span.startTimeMs),
      attributes: keyValues(span.attributes),
      droppedAttributesCount: 0,
      events: span.events.map((event) => ({ timeUnixNano: nanos(event.timeMs), name: event.name, attributes: keyValues(event.attributes), droppedAttributesCount: 0 })),
      droppedEventsCount: 0,
      links: [],
      droppedLinksCount: 0,
      status: span.status.code === "error" ? { code: 2, ...(span.status.message !== undefined ? { message: span.status.message } : {}) } : { code: 0 },
      flags: localSampledFlags,
    };
  });
  return {
    resourceSpans: [
      {
        resource: { attributes: keyValues({ "service.name": options.serviceName ?? "turnlog" }), droppedAttributesCount: 0 },
        scopeSpans: [{ scope: { ...otelScope }, spans: otlpSpans }],
      },
    ],
  };
}
