import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { createRuntime, defineTool } from "../src/index.js";
import { MemoryEventLog, scriptedProvider } from "../src/testing/index.js";

const dangerousNames = ["__proto__", "constructor", "toString", "hasOwnProperty", "valueOf", "prototype", "__defineGetter__", "isPrototypeOf"];

describe("names and keys from the model", () => {
  it("never change a prototype and never reach a tool that was not registered", async () => {
    const prototypeBefore = Object.getOwnPropertyNames(Object.prototype).sort();
    await fc.assert(
      fc.asyncProperty(
        fc.array(
          fc.record({
            name: fc.oneof(fc.constantFrom(...dangerousNames, "echo"), fc.string({ maxLength: 12 })),
            keys: fc.array(fc.oneof(fc.constantFrom(...dangerousNames, "text"), fc.string({ maxLength: 8 })), { maxLength: 4 }),
          }),
          { minLength: 1, maxLength: 5 },
        ),
        async (calls) => {
          const received: unknown[] = [];
          const echo = defineTool({
            name: "echo",
            description: "echo",
            risk: "read-only-local",
            input: z.looseObject({}),
            run: (input) => {
              received.push(input);
              return "ok";
            },
          });
          const toolCalls = calls.map((call) => ({
            name: call.name,
            // Raw JSON text, so "__proto__" arrives as the model wrote it.
            arguments: `{${call.keys.map((key, index) => `${JSON.stringify(key)}: {"polluted": ${index}}`).join(", ")}}`,
          }));
          const runtime = await createRuntime({ log: new MemoryEventLog(), provider: scriptedProvider([{ toolCalls }, { content: "done" }]), tools: [echo] });
          const session = await runtime.openSession("p");
          const outcome = await session.send("go");
          expect(outcome.status).toBe("completed");
          // Only the registered tool ran, once per call that named it.
          expect(received).toHaveLength(calls.filter((call) => call.name === "echo").length);
          for (const call of session.state().calls.values()) {
            if (call.name !== "echo") expect(call.status).toBe("rejected");
          }
          // Nothing leaked onto any prototype.
          expect(({} as Record<string, unknown>).polluted).toBeUndefined();
          expect(Object.getOwnPropertyNames(Object.prototype).sort()).toEqual(prototypeBefore);
          expect(Object.getPrototypeOf({})).toBe(Object.prototype);
        },
      ),
      { numRuns: 200 },
    );
  });
});
