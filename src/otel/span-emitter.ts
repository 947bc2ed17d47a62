import { context as otelContext, SpanKind, SpanStatusCode, trace, type Attributes, type Context, type Span, type Tracer } from "@opentelemetry/api";
import type { RecordedEvent } from "../log/event-log.js";
import type { OtelTracer } from "./otel-tracer.js";
import { deriveSpans, initialSpanState, type DerivedSpan, type SpanAttributes, type SpanChange, type SpanDerivationOptions, type SpanDerivationState } from "./span-derivation.js";

/*
 * Live spans: the events a runtime records, fed one by one to the same pure derivation that
 * `turnlog otel` runs after the fact, and played onto a host's OpenTelemetry tracer with the
 * recorded times. This is the one module that loads `@opentelemetry/api`; the runtime imports it
 * only when a host passes a tracer.
 */

/**
 * What the runtime tells the emitter, per session, in stream order (`SessionObserver`), and the
 * context a call runs in.
 */
export interface SpanEmitter {
  /**
   * A session's history, read when a runtime opens it: nothing happens now, so no span ends. The
   * spans still open at its end (a send awaiting approval) start again at their recorded start
   * times, with their recorded span events, and end when later events end them.
   */
  loaded(sessionId: string, events: readonly RecordedEvent[]): void;
  /** Events just recorded (appended by this runtime, or another writer's read back). */
  recorded(sessionId: string, events: readonly RecordedEvent[]): void;
  /**
   * Runs `run` with the call's `execute_tool` span active, so that spans a tool's code starts
   * itself nest under it. Without such a span (no tracer, an unknown call) `run` runs as it is.
   */
  inCallSpan<T>(sessionId: string, callId: string, run: () => T): T;
  /**
   * Forgets a session (a runtime released it from memory, `maxOpenSessions`): its derivation state
   * and its open spans, which are never ended — so never exported. Its history, told again by
   * `loaded` when it is next opened, starts them again at their recorded start times.
   */
  forget(sessionId: string): void;
}

const spanKinds = { internal: SpanKind.INTERNAL, client: SpanKind.CLIENT } as const;

/** Derived attributes as OpenTelemetry takes them (its arrays are mutable). */
function otelAttributes(attributes: SpanAttributes): Attributes {
  const result: Attributes = {};
  for (const [key, value] of Object.entries(attributes)) result[key] = typeof value === "object" ? [...value] : value;
  return result;
}

/**
 * Makes the emitter that turns a runtime's events into live spans on `tracer`. `createRuntime({
 * tracer })` makes one itself; a host that records events another way (its own store, a follower
 * of the log) can make one and feed it. A span's parent is the span the derivation names; a
 * send's span is a child of the span active where its first event was recorded (normally the
 * host's span around `session.send`), or a root. Tracing never fails the agent: an error thrown by
 * the tracer is swallowed.
 *
 * @example
 * const emitter = createSpanEmitter(trace.getTracer("my-agent"));
 * const stop = log.subscribe((event) => emitter.recorded(sessionOf(event), [event]));
 */
export function createSpanEmitter(tracer: OtelTracer, options: SpanDerivationOptions = {}): SpanEmitter {
  const real = tracer as Tracer;
  const states = new Map<string, SpanDerivationState>();
  const live = new Map<string, Map<string, Span>>();

  function spansOf(sessionId: string): Map<string, Span> {
    let spans = live.get(sessionId);
    if (spans === undefined) live.set(sessionId, (spans = new Map()));
    return spans;
  }

  function start(sessionId: string, span: DerivedSpan): Span {
    const spans = spansOf(sessionId);
    const parent = span.parentKey !== undefined ? spans.get(span.parentKey) : undefined;
    const active = otelContext.active();
    const parentContext: Context = parent !== undefined ? trace.setSpan(active, parent) : active;
    const started = real.startSpan(span.name, { kind: spanKinds[span.kind], startTime: span.startTimeMs, attributes: otelAttributes(span.attributes) }, parentContext);
    for (const event of span.events) started.addEvent(event.name, otelAttributes(event.attributes), event.timeMs);
    spans.set(span.key, started);
    return started;
  }

  function play(sessionId: string, change: SpanChange): void {
    const spans = spansOf(sessionId);
    if (change.type === "started") {
      start(sessionId, change.span);
    } else if (change.type === "event") {
      spans.get(change.key)?.addEvent(change.event.name, otelAttributes(change.event.attributes), change.event.timeMs);
    } else {
      const ended = change.span;
      const span = spans.get(ended.key) ?? start(sessionId, ended);
      spans.delete(ended.key);
      span.setAttributes(otelAttributes(ended.attributes));
      if (ended.status.code === "error") span.setStatus({ code: SpanStatusCode.ERROR, ...(ended.status.message !== undefined ? { message: ended.status.message } : {}) });
      span.end(ended.endTimeMs);
    }
  }

  function guarded(work: () => void): void {
    try {
      work();
    } catch {
      // A tracer that throws must not fail the append the events belong to: they are recorded.
    }
  }

  return {
    loaded(sessionId, events) {
      guarded(() => {
        let state = states.get(sessionId) ?? initialSpanState(sessionId);
        for (const event of events) state = deriveSpans(state, event, options).state;
        states.set(sessionId, state);
        const spans = spansOf(sessionId);
        for (const span of Object.values(state.open)) if (!spans.has(span.key)) start(sessionId, span);
      });
    },
    recorded(sessionId, events) {
      guarded(() => {
        let state = states.get(sessionId) ?? initialSpanState(sessionId);
        for (const event of events) {
          const step = deriveSpans(state, event, options);
          state = step.state;
          states.set(sessionId, state);
          for (const change of step.changes) play(sessionId, change);
        }
      });
    },
    forget(sessionId) {
      states.delete(sessionId);
      live.delete(sessionId);
    },
    inCallSpan(sessionId, callId, run) {
      const spans = live.get(sessionId);
      const span = spans?.get(`tool:${callId}`) ?? spans?.get(`native:${callId}`);
      return span === undefined ? run() : otelContext.with(trace.setSpan(otelContext.active(), span), run);
    },
  };
}
