import { describe, expect, it } from "vitest";
import { z } from "zod";
import { defineTool } from "../../src/index.js";
import { ToolRegistry, type ToolProvider } from "../../src/tools/tool-registry.js";

const tool = (name: string, risk: "read-only-local" | "workspace-write" = "read-only-local") =>
  defineTool({ name, description: `${name} tool`, risk, input: z.object({ path: z.string().describe("a path"), limit: z.number().int().optional() }), run: () => "" });

describe("defineTool", () => {
  it("applies the documented defaults", () => {
    expect(tool("a")).toMatchObject({ maxResultChars: 12_000, timeoutMs: 120_000, serial: false, idempotent: false });
  });

  it("refuses names the providers would reject, unknown risk classes and missing schemas", () => {
    expect(() => tool("has space")).toThrow(TypeError);
    expect(() => tool("x".repeat(65))).toThrow(TypeError);
    expect(() => defineTool({ name: "t", description: "", risk: "scary" as never, input: z.object({}), run: () => "" })).toThrow(/risk class/);
    expect(() => defineTool({ name: "t", description: "", risk: "read-only-local", input: {} as never, run: () => "" })).toThrow(/zod schema/);
  });
});

describe("ToolRegistry", () => {
  it("offers each tool with zod's own JSON Schema of its input", () => {
    const registry = new ToolRegistry([tool("read_file")]);
    expect(registry.providerSchemas()).toEqual([
      {
        name: "read_file",
        description: "read_file tool",
        parameters: {
          type: "object",
          properties: { path: { type: "string", description: "a path" }, limit: { type: "integer", minimum: expect.any(Number), maximum: expect.any(Number) } },
          required: ["path"],
        },
      },
    ]);
  });

  it("records a snapshot with a schema digest that changes with the schema", () => {
    const before = new ToolRegistry([tool("read_file")]).snapshot()[0];
    const changed = defineTool({ name: "read_file", description: "read_file tool", risk: "read-only-local", input: z.object({ path: z.number() }), run: () => "" });
    const after = new ToolRegistry([changed]).snapshot()[0];
    expect(before).toMatchObject({ name: "read_file", riskClass: "read-only-local", phase: "pre-skill-visibility", source: "host", flags: { serial: false, idempotent: false, command: false, paths: false } });
    expect(before?.schemaDigest).toMatch(/^[0-9a-f]{64}$/);
    expect(after?.schemaDigest).not.toBe(before?.schemaDigest);
  });

  it("looks names up without touching prototypes", () => {
    const registry = new ToolRegistry([tool("read_file")]);
    for (const name of ["__proto__", "constructor", "toString", "hasOwnProperty"]) {
      expect(registry.get(name)).toBeUndefined();
      expect(registry.has(name)).toBe(false);
    }
  });

  it("registers MCP tools first, then the host's, then each phase in order; a later phase sees the earlier ones", async () => {
    const seen: Record<string, string[]> = {};
    const provider = (name: string, phase: ToolProvider["phase"]): ToolProvider => ({
      name,
      phase,
      register: ({ registered, add }) => {
        seen[name] = registered().map((registeredTool) => registeredTool.name);
        add(tool(`${name}_tool`));
      },
    });
    const registry = await ToolRegistry.build({
      mcp: [{ source: "files", tools: [tool("mcp_read")] }],
      tools: [tool("host_tool")],
      // Given out of order: phases decide the order, not the array.
      providers: [provider("executor", "post-tool-executor"), provider("memory", "post-memory-provider"), provider("skills", "post-skill-visibility"), provider("early", "pre-skill-visibility")],
    });
    expect(registry.names()).toEqual(["mcp_read", "host_tool", "early_tool", "skills_tool", "memory_tool", "executor_tool"]);
    expect(seen).toEqual({
      early: ["mcp_read", "host_tool"],
      skills: ["mcp_read", "host_tool", "early_tool"],
      memory: ["mcp_read", "host_tool", "early_tool", "skills_tool"],
      executor: ["mcp_read", "host_tool", "early_tool", "skills_tool", "memory_tool"],
    });
    expect(registry.snapshot().map((entry) => [entry.name, entry.phase, entry.source])).toEqual([
      ["mcp_read", "mcp", "mcp:files"],
      ["host_tool", "pre-skill-visibility", "host"],
      ["early_tool", "pre-skill-visibility", "early"],
      ["skills_tool", "post-skill-visibility", "skills"],
      ["memory_tool", "post-memory-provider", "memory"],
      ["executor_tool", "post-tool-executor", "executor"],
    ]);
  });

  it("rejects a duplicate name at registration, naming both registrants", async () => {
    expect(() => new ToolRegistry([tool("read_file"), tool("read_file")])).toThrow(/"read_file" from host \(pre-skill-visibility\) duplicates the one from host/);
    await expect(
      ToolRegistry.build({
        mcp: [{ source: "files", tools: [tool("read_file")] }],
        providers: [{ name: "memory", phase: "post-memory-provider", register: ({ add }) => add(tool("read_file")) }],
      }),
    ).rejects.toThrow('tool "read_file" from memory (post-memory-provider) duplicates the one from mcp:files (mcp)');
  });

  it("rejects a provider that names an unknown phase", async () => {
    await expect(ToolRegistry.build({ providers: [{ name: "x", phase: "whenever" as never, register: () => {} }] })).rejects.toThrow(/unknown phase "whenever"/);
  });
});
