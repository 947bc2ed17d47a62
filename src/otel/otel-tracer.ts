/*
 * The members of an OpenTelemetry `Tracer` and `Span` that turnlog calls, as structural types: a
 * host passes its `Tracer` from `@opentelemetry/api` (any 1.x), and the root entry's types never
 * name that package, so a host that does not trace needs nothing of OpenTelemetry installed.
 */

/** An attribute value as turnlog sets it. */
export type OtelAttributeValue = string | number | boolean | string[];

/** What turnlog passes to `startSpan`: the kind (1 INTERNAL, 3 CLIENT), the recorded start time (ms) and attributes. */
export interface OtelSpanStartOptions {
  kind?: number;
  startTime?: number;
  attributes?: Record<string, OtelAttributeValue>;
}

/** The members of an OpenTelemetry `Span` turnlog calls. */
export interface OtelSpan {
  setAttributes(attributes: Record<string, OtelAttributeValue>): unknown;
  addEvent(name: string, attributes?: Record<string, OtelAttributeValue>, time?: number): unknown;
  setStatus(status: { code: number; message?: string }): unknown;
  end(endTime?: number): void;
}

/**
 * The members of an OpenTelemetry `Tracer` turnlog calls: `createRuntime({ tracer })` takes any
 * `Tracer` from `@opentelemetry/api`, e.g. `trace.getTracer("my-agent")`.
 *
 * @example
 * import { trace } from "@opentelemetry/api";
 * const tracer: OtelTracer = trace.getTracer("my-agent");
 */
export interface OtelTracer {
  startSpan(name: string, options?: OtelSpanStartOptions, context?: object): OtelSpan;
}
