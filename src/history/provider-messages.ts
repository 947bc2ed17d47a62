import type { ProviderFormat } from "../contracts/provider.js";
import type { SessionMessage } from "../projections/session-state.js";

/**
 * Builds the provider request messages from the session's messages, in the provider's own
 * format. This is the thin first version: complete tool groups are replayed natively, a group
 * without every result (or marked unsafe) is described as plain text that never pretends to be a
 * native tool call. Token-budget selection, compaction and diagnostics come with issue #5.
 */
export function buildProviderMessages(messages: readonly SessionMessage[], format: ProviderFormat): unknown[] {
  const units = toUnits(messages);
  return format === "openai-chat" ? toOpenAi(units) : toAnthropic(units);
}

type Unit =
  | { kind: "user"; content: string }
  | { kind: "assistant"; content: string }
  | {
      kind: "tool-group";
      content: string;
      calls: { id: string; name: string; argumentsText: string }[];
      results: { id: string; content: string; ok: boolean }[];
    }
  | { kind: "flat"; content: string };

function toUnits(messages: readonly SessionMessage[]): Unit[] {
  const units: Unit[] = [];
  for (let index = 0; index < messages.length; index += 1) {
    const message = messages[index] as SessionMessage;
    if (message.role === "user") {
      units.push({ kind: "user", content: message.content });
    } else if (message.role === "agent" && message.metadata?.kind === "provider-tool-call-turn") {
      const calls = message.metadata.providerToolCalls;
      const results: { id: string; content: string; ok: boolean }[] = [];
      while (results.length < calls.length) {
        const next = messages[index + 1];
        if (next?.role !== "tool" || next.metadata.tool_call_id !== calls[results.length]?.id) break;
        results.push({ id: next.metadata.tool_call_id, content: next.content, ok: next.metadata.ok });
        index += 1;
      }
      const complete = results.length === calls.length;
      if (complete && message.metadata.nativeReplaySafe && calls.every((call) => call.argumentsText !== undefined)) {
        units.push({
          kind: "tool-group",
          content: message.content,
          calls: calls.map((call) => ({ id: call.id, name: call.name, argumentsText: call.argumentsText ?? "" })),
          results,
        });
      } else {
        const lines = calls.map((call, position) => {
          const result = results[position];
          return `- ${call.name}: ${result === undefined ? "no result" : `${result.ok ? "ok" : "error"}: ${result.content}`}`;
        });
        units.push({ kind: "flat", content: [message.content, "Earlier tool activity (not replayable as tool calls):", ...lines].filter(Boolean).join("\n") });
      }
    } else if (message.role === "agent") {
      units.push({ kind: "assistant", content: message.content });
    }
    // A tool message outside a group has no call to answer; it is never sent on its own.
  }
  return units;
}

function toOpenAi(units: readonly Unit[]): unknown[] {
  const out: unknown[] = [];
  for (const unit of units) {
    if (unit.kind === "user") out.push({ role: "user", content: unit.content });
    else if (unit.kind === "assistant" || unit.kind === "flat") out.push({ role: "assistant", content: unit.content });
    else {
      out.push({
        role: "assistant",
        content: unit.content === "" ? null : unit.content,
        tool_calls: unit.calls.map((call) => ({ id: call.id, type: "function", function: { name: call.name, arguments: call.argumentsText } })),
      });
      for (const result of unit.results) out.push({ role: "tool", tool_call_id: result.id, content: result.content });
    }
  }
  return out;
}

type AnthropicBlock = Record<string, unknown>;

function toAnthropic(units: readonly Unit[]): unknown[] {
  const out: { role: "user" | "assistant"; content: AnthropicBlock[] }[] = [];
  // Roles strictly alternate: consecutive content of one role merges into one message.
  const push = (role: "user" | "assistant", blocks: AnthropicBlock[]) => {
    const last = out.at(-1);
    if (last?.role === role) {
      last.content.push(...blocks);
    } else {
      out.push({ role, content: blocks });
    }
  };
  for (const unit of units) {
    if (unit.kind === "user") push("user", [{ type: "text", text: unit.content }]);
    else if (unit.kind === "assistant" || unit.kind === "flat") push("assistant", [{ type: "text", text: unit.content }]);
    else {
      const blocks: AnthropicBlock[] = unit.content === "" ? [] : [{ type: "text", text: unit.content }];
      for (const call of unit.calls) blocks.push({ type: "tool_use", id: call.id, name: call.name, input: parseObject(call.argumentsText) });
      push("assistant", blocks);
      out.push({
        role: "user",
        content: unit.results.map((result) => ({ type: "tool_result", tool_use_id: result.id, content: result.content, ...(result.ok ? {} : { is_error: true }) })),
      });
    }
  }
  return out;
}

function parseObject(text: string): unknown {
  try {
    const value: unknown = JSON.parse(text === "" ? "{}" : text);
    return typeof value === "object" && value !== null && !Array.isArray(value) ? value : {};
  } catch {
    return {};
  }
}
