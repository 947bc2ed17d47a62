import { describe, expect, it } from "vitest";
import { mcpRiskClass } from "../../../src/index.js";

describe("mcpRiskClass", () => {
  it.each([
    [{ readOnlyHint: true }, "read-only-local"],
    [{ readOnlyHint: true, openWorldHint: false }, "read-only-local"],
    [{ readOnlyHint: true, openWorldHint: true }, "read-only-network"],
    // Read-only wins: a tool that changes nothing destroys nothing.
    [{ readOnlyHint: true, destructiveHint: true }, "read-only-local"],
    [{ destructiveHint: true }, "destructive-local"],
    [{ readOnlyHint: false, destructiveHint: true, openWorldHint: true }, "destructive-local"],
    [{ readOnlyHint: false, destructiveHint: false }, "external-side-effect"],
    [{ readOnlyHint: false, destructiveHint: false, openWorldHint: true }, "external-side-effect"],
    [{ openWorldHint: false }, "external-side-effect"],
    [{}, "external-side-effect"],
    [undefined, "external-side-effect"],
  ] as const)("%j → %s", (annotations, risk) => {
    expect(mcpRiskClass(annotations)).toBe(risk);
  });

  it("never takes a hint that is not literally true for read-only", () => {
    expect(mcpRiskClass({ readOnlyHint: "true" } as never)).toBe("external-side-effect");
    expect(mcpRiskClass({ readOnlyHint: 1 } as never)).toBe("external-side-effect");
  });
});
