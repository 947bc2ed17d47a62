import { describe, expect, it } from "vitest";
import { z } from "zod";
import { defineTool } from "../../src/index.js";
import { planToolCalls } from "../../src/tools/tool-call-planner.js";
import { canonicalJson } from "../../src/util/digest.js";
import { ToolRegistry } from "../../src/tools/tool-registry.js";

const registry = new ToolRegistry([
  defineTool({ name: "read_file", description: "", risk: "read-only-local", input: z.object({ path: z.string() }), run: () => "" }),
  defineTool({ name: "ping", description: "", risk: "read-only-local", input: z.object({}), run: () => "" }),
  defineTool({ name: "anything", description: "", risk: "read-only-local", input: z.looseObject({}), run: () => "" }),
]);
const plan = (name: string, argumentsText: string | undefined, id = "c1") => planToolCalls([{ id, name, argumentsText }], registry)[0];

describe("ToolCallPlanner", () => {
  it("plans a valid call with the parsed arguments", () => {
    expect(plan("read_file", '{"path": "a.txt"}')).toEqual({ callId: "c1", status: "planned", tool: "read_file", input: { path: "a.txt" } });
  });

  it("treats empty argument text as {}", () => {
    expect(plan("ping", "")).toMatchObject({ status: "planned", input: {} });
    expect(plan("ping", "   ")).toMatchObject({ status: "planned", input: {} });
  });

  it("gives each mistake its own reason, as data", () => {
    expect(plan("nope", "{}")).toMatchObject({ status: "rejected", reason: "unknown-tool", tool: "nope" });
    expect(plan("", "{}")).toMatchObject({ status: "rejected", reason: "missing-name" });
    expect(plan("read_file", '{"path": ')).toMatchObject({ status: "rejected", reason: "malformed-arguments" });
    expect(plan("read_file", "[1, 2]")).toMatchObject({ status: "rejected", reason: "not-an-object", issues: [{ path: "", message: "received an array" }] });
    expect(plan("read_file", '"a.txt"')).toMatchObject({ status: "rejected", reason: "not-an-object", issues: [{ message: "received a string" }] });
    expect(plan("read_file", "null")).toMatchObject({ status: "rejected", reason: "not-an-object", issues: [{ message: "received null" }] });
    expect(plan("read_file", undefined)).toMatchObject({ status: "rejected", reason: "missing-arguments" });
  });

  it("never quotes half of an emoji in a malformed-arguments message (the log could not hold it)", () => {
    // V8's SyntaxError quotes the first UTF-16 unit of an unexpected astral character: a lone surrogate.
    for (const text of ["\u{1F600}", '{"path": \u{1F600}}', "\u{10000}"]) {
      const rejected = plan("read_file", text);
      expect(rejected).toMatchObject({ status: "rejected", reason: "malformed-arguments" });
      const message = rejected?.issues?.[0]?.message ?? "";
      expect(message).toMatch(/^arguments are not valid JSON: /);
      // Canonical JSON (the log's hash) refuses exactly the lone surrogates.
      expect(() => canonicalJson({ message })).not.toThrow();
    }
  });

  it("reports schema failures with zod's issues, readable by a model", () => {
    expect(plan("read_file", '{"path": 3}')).toEqual({
      callId: "c1",
      status: "rejected",
      tool: "read_file",
      reason: "schema-invalid",
      issues: [{ path: "path", message: "Invalid input: expected string, received number" }],
    });
  });

  it("rejects a second call with the same ID in one response", () => {
    const plans = planToolCalls(
      [
        { id: "same", name: "ping", argumentsText: "{}" },
        { id: "same", name: "ping", argumentsText: "{}" },
      ],
      registry,
    );
    expect(plans.map((entry) => entry.status)).toEqual(["planned", "rejected"]);
    expect(plans[1]).toMatchObject({ reason: "duplicate-id" });
  });

  it("keeps prototype names as ordinary strings: no tool, no pollution", () => {
    for (const name of ["__proto__", "constructor", "toString", "hasOwnProperty"]) {
      expect(plan(name, "{}")).toMatchObject({ status: "rejected", reason: "unknown-tool", tool: name });
    }
    const planned = plan("anything", '{"__proto__": {"polluted": true}, "constructor": 1, "toString": "x"}');
    expect(planned?.status).toBe("planned");
    expect(Object.keys(planned?.input as object).sort()).toEqual(["__proto__", "constructor", "toString"]);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect(Object.getPrototypeOf(planned?.input)).toBe(Object.prototype);
  });
});
