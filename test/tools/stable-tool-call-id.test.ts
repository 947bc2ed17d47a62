import { describe, expect, it } from "vitest";
import { stableToolCallId } from "../../src/index.js";
import { normalizeToolCalls } from "../../src/tools/tool-call-normalizer.js";

const base = { sessionId: "s1", turnSeq: 1, index: 0, name: "read_file", argumentsText: '{"path":"a.txt"}' };
const openAi = /^.{1,40}$/;
const anthropic = /^[a-zA-Z0-9_-]+$/;

describe("stableToolCallId", () => {
  it("is deterministic and valid for both providers", () => {
    const id = stableToolCallId(base);
    expect(stableToolCallId({ ...base })).toBe(id);
    expect(id).toMatch(openAi);
    expect(id).toMatch(anthropic);
  });

  it("differs when anything that identifies the call differs — the same call in two turns gets two IDs", () => {
    const id = stableToolCallId(base);
    for (const change of [{ sessionId: "s2" }, { turnSeq: 2 }, { index: 1 }, { name: "write_file" }, { argumentsText: "{}" }]) {
      expect(stableToolCallId({ ...base, ...change })).not.toBe(id);
    }
  });
});

describe("normalizing a response's tool calls", () => {
  const normalize = (toolCalls: { index: number; id?: string; name?: string; argumentsText: string }[], usedIds: string[] = [], turnSeq = 1) =>
    normalizeToolCalls({ sessionId: "s1", turnId: `turn-${turnSeq}`, turnSeq, content: "", toolCalls, finishReason: "tool_calls", usedIds: new Set(usedIds) }).calls;

  it("keeps a provider ID that is valid and unused, recording it", () => {
    expect(normalize([{ index: 0, id: "call_abc", name: "read_file", argumentsText: "{}" }])[0]).toEqual({
      index: 0,
      id: "call_abc",
      idSource: "provider",
      providerId: "call_abc",
      name: "read_file",
      argumentsText: "{}",
    });
  });

  it("derives an ID when the provider gave none, an invalid one, or one already used — and records the original", () => {
    const calls = normalize(
      [
        { index: 0, name: "a", argumentsText: "{}" },
        { index: 1, id: "toolu 01!", name: "a", argumentsText: "{}" },
        { index: 2, id: "x".repeat(41), name: "a", argumentsText: "{}" },
        { index: 3, id: "call_used", name: "a", argumentsText: "{}" },
        { index: 4, id: "call_dup", name: "a", argumentsText: "{}" },
        { index: 5, id: "call_dup", name: "a", argumentsText: "{}" },
      ],
      ["call_used"],
    );
    expect(calls.map((call) => call.idSource)).toEqual(["derived", "derived", "derived", "derived", "provider", "derived"]);
    expect(calls.map((call) => call.providerId)).toEqual([undefined, "toolu 01!", "x".repeat(41), "call_used", "call_dup", "call_dup"]);
    const ids = calls.map((call) => call.id);
    expect(new Set(ids).size).toBe(ids.length);
    for (const id of ids) {
      expect(id).toMatch(openAi);
      expect(id).toMatch(anthropic);
    }
  });

  it("gives the same call in two turns two different IDs", () => {
    const [first] = normalize([{ index: 0, name: "read_file", argumentsText: "{}" }]);
    const [second] = normalize([{ index: 0, name: "read_file", argumentsText: "{}" }], [first!.id], 2);
    expect(second!.id).not.toBe(first!.id);
  });
});
