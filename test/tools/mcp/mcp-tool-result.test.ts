import { describe, expect, it } from "vitest";
import { mcpToolResult } from "../../../src/index.js";

describe("mcpToolResult", () => {
  it("joins text items with newlines", () => {
    expect(mcpToolResult({ content: [{ type: "text", text: "one" }, { type: "text", text: "two" }] })).toEqual({ ok: true, content: "one\ntwo" });
  });

  it("describes images and audio instead of pasting base64", () => {
    const result = mcpToolResult({
      content: [
        { type: "image", mimeType: "image/png", data: "A".repeat(1234) },
        { type: "audio", mimeType: "audio/wav", data: "QUJD" },
      ],
    });
    expect(result.content).toBe("[image image/png, 1234 bytes base64]\n[audio audio/wav, 4 bytes base64]");
  });

  it("gives an embedded resource's URI and text, and a link's URI, name and type", () => {
    const result = mcpToolResult({
      content: [
        { type: "resource", resource: { uri: "file:///a.txt", mimeType: "text/plain", text: "alpha" } },
        { type: "resource", resource: { uri: "file:///b.bin", blob: "AAAA" } },
        { type: "resource_link", uri: "demo://r/1", name: "Resource 1", mimeType: "text/plain", description: "the first" },
      ],
    });
    expect(result.content).toBe('[resource file:///a.txt text/plain]\nalpha\n[resource file:///b.bin, 4 bytes base64]\n[resource link demo://r/1 "Resource 1" text/plain] the first');
  });

  it("shows structuredContent as JSON only when no item is text", () => {
    expect(mcpToolResult({ content: [], structuredContent: { temperature: 21 } }).content).toBe('{"temperature":21}');
    expect(mcpToolResult({ content: [{ type: "text", text: '{"temperature":21}' }], structuredContent: { temperature: 21 } }).content).toBe('{"temperature":21}');
  });

  it("turns isError into a failed result the model reads", () => {
    expect(mcpToolResult({ content: [{ type: "text", text: "no such issue" }], isError: true })).toEqual({ ok: false, content: "no such issue" });
    expect(mcpToolResult({ content: [], isError: true })).toEqual({ ok: false, content: "(the tool reported an error and gave no details)" });
  });

  it("says so when a tool returns nothing", () => {
    expect(mcpToolResult({ content: [] })).toEqual({ ok: true, content: "(the tool returned no content)" });
  });
});
