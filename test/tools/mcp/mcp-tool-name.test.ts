import { describe, expect, it } from "vitest";
import { defineTool, mcpToolName } from "../../../src/index.js";
import { z } from "zod";

const valid = /^[a-zA-Z0-9_-]{1,64}$/;

describe("mcpToolName", () => {
  it("is mcp__<server>__<tool> when that is a valid name", () => {
    expect(mcpToolName("everything", "get-sum")).toBe("mcp__everything__get-sum");
    expect(mcpToolName("gh", "create_issue")).toBe("mcp__gh__create_issue");
  });

  it("replaces other characters with _ and adds a hash of the original, so near-identical names stay apart", () => {
    const dotted = mcpToolName("github", "issues.create");
    expect(dotted).toMatch(/^mcp__github__issues_create_[0-9a-f]{8}$/);
    expect(mcpToolName("github", "issues/create")).not.toBe(dotted);
    expect(mcpToolName("my server", "lire-fichier")).toMatch(/^mcp__my_server__lire-fichier_[0-9a-f]{8}$/);
    // One character outside the BMP is one `_`.
    expect(mcpToolName("s", "🔥")).toMatch(/^mcp__s____[0-9a-f]{8}$/);
    expect(mcpToolName("s", "__proto__")).toBe("mcp__s____proto__");
  });

  it("cuts a long name to 64 characters, keeping names that differ past the cut apart", () => {
    const long = "a".repeat(80);
    const first = mcpToolName("server", `${long}_first`);
    const second = mcpToolName("server", `${long}_second`);
    expect(first).toHaveLength(64);
    expect(first).toMatch(/^mcp__server__a+_[0-9a-f]{8}$/);
    expect(first).not.toBe(second);
    expect(mcpToolName("server", "x".repeat(64 - "mcp__server__".length))).toHaveLength(64);
  });

  it("is the same in every process and always a name defineTool accepts", () => {
    for (const [server, tool] of [["a", "b"], ["files", "read.file"], ["x".repeat(70), "y"], ["s", ""], ["ü", "ß"]] as const) {
      const name = mcpToolName(server, tool);
      expect(name).toMatch(valid);
      expect(mcpToolName(server, tool)).toBe(name);
      expect(() => defineTool({ name, description: "", risk: "read-only-local", input: z.object({}), run: () => "" })).not.toThrow();
    }
  });
});
