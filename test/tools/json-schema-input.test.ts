import { describe, expect, it } from "vitest";
import { defineTool, jsonSchemaInput, planToolCalls, ToolRegistry } from "../../src/index.js";

const parameters = {
  $schema: "http://json-schema.org/draft-07/schema#",
  type: "object",
  properties: {
    path: { type: "string", description: "Where" },
    recursive: { type: "boolean" },
    tags: { type: "array", items: { type: "string" } },
    confirm: { const: "yes" },
  },
  required: ["path"],
  additionalProperties: false,
  // Conditional schemas are exactly what a round trip through zod would lose.
  if: { properties: { recursive: { const: true } }, required: ["recursive"] },
  then: { required: ["confirm"] },
};

const wipe = defineTool({ name: "wipe", description: "Deletes", risk: "destructive-local", input: jsonSchemaInput(parameters), parameters, run: () => "gone" });

describe("jsonSchemaInput", () => {
  it("accepts what the JSON Schema accepts and passes the very same object on", () => {
    const args = JSON.parse('{"path": "a", "__proto__": {"polluted": true}}') as Record<string, unknown>;
    const lenient = jsonSchemaInput({ type: "object", properties: { path: { type: "string" } } });
    const parsed = lenient.safeParse(args);
    expect(parsed.success && parsed.data).toBe(args);
    expect(Object.hasOwn(args, "__proto__")).toBe(true);
  });

  it("reports each JSON Schema error with its path, as a rejected plan the model can read", () => {
    const [plan] = planToolCalls([{ id: "c1", name: "wipe", argumentsText: '{"recursive": true, "tags": ["a", 2]}' }], new ToolRegistry([wipe]));
    expect(plan).toMatchObject({ status: "rejected", reason: "schema-invalid" });
    expect(plan?.issues).toEqual(
      expect.arrayContaining([
        { path: "", message: "must have required property 'path'" },
        { path: "tags.1", message: "must be string" },
        { path: "", message: "must have required property 'confirm'" },
      ]),
    );
    expect(planToolCalls([{ id: "c2", name: "wipe", argumentsText: '{"path": "/tmp/x", "recursive": true, "confirm": "yes"}' }], new ToolRegistry([wipe]))[0]).toMatchObject({ status: "planned" });
  });

  it("offers providers the JSON Schema itself, without its dialect tag", () => {
    const registry = new ToolRegistry([wipe]);
    const { $schema: _dialect, ...offered } = parameters;
    expect(registry.providerSchemas()).toEqual([{ name: "wipe", description: "Deletes", parameters: offered }]);
    // The digest follows the JSON Schema, not the zod wrapper.
    const other = defineTool({ ...wipe, parameters: { ...parameters, required: [] } });
    expect(new ToolRegistry([other]).snapshot()[0]?.schemaDigest).not.toBe(registry.snapshot()[0]?.schemaDigest);
  });

  it("refuses parameters that are not an object schema, and a schema that cannot be compiled", () => {
    expect(() => defineTool({ ...wipe, parameters: { type: "string" } })).toThrow(/not a JSON Schema of an object/);
    expect(() => jsonSchemaInput({ type: "object", properties: { a: { $ref: "#/nowhere" } } })).toThrow();
  });
});
