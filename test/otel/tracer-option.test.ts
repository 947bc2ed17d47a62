import { trace, type Tracer } from "@opentelemetry/api";
import { describe, expect, it } from "vitest";
import { ConfigError, createRuntime, MemoryEventLog, type OtelTracer, type RuntimeOptions } from "../../src/index.js";
import { scriptedProvider } from "../../src/testing/index.js";
import { memoryTracer } from "./support/otel-spans.js";

describe("createRuntime({ tracer })", () => {
  it("takes any Tracer of @opentelemetry/api, though the root's types never name that package", () => {
    // Compile-time: a real Tracer is an OtelTracer (tsc --noEmit checks this file).
    const tracer: Tracer = trace.getTracer("host");
    const structural: OtelTracer = tracer;
    const options: Pick<RuntimeOptions, "tracer"> = { tracer: structural };
    expect(options.tracer).toBe(tracer);
  });

  it("refuses a tracer without startSpan, and a traceContent that is not a boolean, as a ConfigError", async () => {
    const provider = scriptedProvider([]);
    const bad = (extra: Record<string, unknown>) => createRuntime({ log: new MemoryEventLog(), provider, ...extra } as RuntimeOptions);
    await expect(bad({ tracer: {} })).rejects.toThrow(ConfigError);
    await expect(bad({ tracer: {} })).rejects.toThrow(/tracer: expected an object with startSpan\(\)/);
    await expect(bad({ tracer: memoryTracer().tracer, traceContent: "yes" })).rejects.toThrow(/traceContent/);
  });

  it("keeps the agent running when the tracer throws", async () => {
    const throwing: OtelTracer = {
      startSpan() {
        throw new Error("exporter down");
      },
    };
    const runtime = await createRuntime({ log: new MemoryEventLog(), provider: scriptedProvider([{ content: "hi" }]), tracer: throwing });
    const session = await runtime.openSession("s1");
    expect((await session.send("hello")).status).toBe("completed");
    await runtime.close();
  });
});
