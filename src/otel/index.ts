/**
 * turnlog/otel: OpenTelemetry spans of a session, following the GenAI semantic conventions
 * (docs/observability.md, "Spans"). Derived from the log — live through `createRuntime({ tracer })`
 * or a host's own `createSpanEmitter`, or after the fact with `sessionSpans` and `otlpJson` (what
 * `turnlog otel` writes). This entry needs `@opentelemetry/api` (an optional peer of turnlog); the
 * root entry never loads it.
 */
export { deriveSpans, initialSpanState, providerName, requestModel, sessionSpans } from "./span-derivation.js";
export type {
  DerivedSpan,
  DerivedSpanEvent,
  DerivedSpanKind,
  SpanAttributes,
  SpanAttributeValue,
  SpanChange,
  SpanDerivationOptions,
  SpanDerivationState,
} from "./span-derivation.js";
export { otelScope, otlpJson, spanIds } from "./otlp-json.js";
export type { OtlpAnyValue, OtlpJsonOptions, OtlpKeyValue, OtlpSpan, OtlpTraceRequest } from "./otlp-json.js";
export { createSpanEmitter } from "./span-emitter.js";
export type { SpanEmitter } from "./span-emitter.js";
export type { OtelAttributeValue, OtelSpan, OtelSpanStartOptions, OtelTracer } from "./otel-tracer.js";
