import { describe, expect, it } from "vitest";
import { DiagnosticRecordedSchema } from "../../src/contracts/events.js";
import { serializedDiagnostic } from "../../src/history/history-diagnostics.js";
import type { AnthropicMessage } from "../../src/providers/anthropic-messages/anthropic-messages-serializer.js";
import { providerFormat } from "../../src/providers/formats.js";
import { buildNativeHistory } from "../../src/providers/format-history.js";
import { HistorySession } from "../support/history-sessions.js";

describe("history diagnostics", () => {
  const session = new HistorySession({ provider: { id: "p", format: "anthropic-messages" } })
    .user("Zq7-user-text")
    .toolTurn({
      content: "Zq7-assistant-text",
      calls: [{ id: "call_a", arguments: '{"path":"Zq7-path.txt"}' }, { id: "call_b", arguments: '{"password":"[REDACTED]"}', redacted: true }],
      results: [{ content: "Zq7-result" }, { ok: false, content: "Zq7-error" }],
      echo: { thinking: [{ type: "thinking", thinking: "Zq7-echo", signature: "Zq7-sig" }] },
    })
    .toolTurn({ calls: [{ id: "call_c", arguments: '{"path":"Zq7-other.txt"}' }], echo: { thinking: [{ type: "thinking", thinking: "Zq7-echo2", signature: "Zq7-sig2" }] } })
    .answer("Zq7-answer")
    .user("Zq7-current");

  it("are valid session.diagnostic.recorded payloads with counts and reason enums only", () => {
    for (const format of ["openai-chat", "anthropic-messages"] as const) {
      for (const maxTokens of [50, 100_000]) {
        const built = buildNativeHistory(session.state(), { format, provider: { id: "q", format }, maxTokens });
        for (const diagnostic of built.diagnostics) {
          expect(() => DiagnosticRecordedSchema.parse({ type: "session.diagnostic.recorded", data: diagnostic })).not.toThrow();
        }
        expect(JSON.stringify(built.diagnostics)).not.toContain("Zq7");
        expect(JSON.stringify(built.diagnostics)).not.toContain("call_");
      }
    }
  });

  it("emit -selected and -serialized always, -skipped and -repaired only when something happened", () => {
    const plain = buildNativeHistory(new HistorySession().user("hi").state(), { format: "openai-chat", provider: { id: "scripted", format: "openai-chat" }, maxTokens: 1000 });
    expect(plain.diagnostics.map((entry) => entry.name)).toEqual(["structured-tool-history-selected", "structured-tool-history-serialized"]);
    const repaired = new HistorySession().user("go").toolTurn({ calls: [{ id: "call_a", redacted: true }] }).toolTurn({ calls: [{ id: "call_b" }] }).user("next");
    const built = buildNativeHistory(repaired.state(), { format: "anthropic-messages", provider: { id: "q", format: "anthropic-messages" }, maxTokens: 100_000 });
    expect(built.diagnostics.map((entry) => entry.name)).toEqual([
      "structured-tool-history-selected",
      "structured-tool-history-skipped",
      "structured-tool-history-repaired",
      "structured-tool-history-serialized",
    ]);
  });

  it("-serialized counts what is in the messages, not what the serializer was given", () => {
    const tampered: AnthropicMessage[] = [
      { role: "user", content: [{ type: "text", text: "x" }] },
      { role: "assistant", content: [{ type: "tool_use", id: "a", name: "n", input: {} }] },
    ];
    expect(serializedDiagnostic(providerFormat("anthropic-messages"), { messages: tampered }).counts).toMatchObject({ messages: 2, tool_calls: 1, tool_results: 0 });
  });
});
