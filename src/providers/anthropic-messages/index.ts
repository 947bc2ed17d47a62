import type { FormatAdapter } from "../format-adapter.js";
import { anthropicMessagesProvider } from "./anthropic-messages-provider.js";
import { finalizeAnthropicMessagesEvents } from "./anthropic-messages-finalizer.js";
import { anthropicMessagesLane } from "./anthropic-messages-lane.js";
import { anthropicUnitSerialization, countAnthropicMessage, serializeAnthropicMessages, type AnthropicMessage } from "./anthropic-messages-serializer.js";

/** Anthropic accepts call IDs of `[a-zA-Z0-9_-]`, and tool names of `[a-zA-Z0-9_-]`, 1 to 64. */
const toolCallIdPattern = /^[a-zA-Z0-9_-]+$/;
const toolNamePattern = /^[a-zA-Z0-9_-]{1,64}$/;

/**
 * The Anthropic Messages format (`anthropic-messages`): `/v1/messages`, `system` beside the
 * messages, roles strictly alternating. Its SDK adapter is `anthropicMessagesProvider`
 * (anthropic-messages-provider.ts).
 *
 * @example
 * const { system, messages } = anthropicMessagesFormat.serialize(units, { system: "Be brief." });
 */
export const anthropicMessagesFormat: FormatAdapter<AnthropicMessage> = {
  name: "anthropic-messages",
  serializedReason: "anthropic_messages",
  serialize: (units, options) => serializeAnthropicMessages(units, options),
  unitSerialization: anthropicUnitSerialization,
  lane: anthropicMessagesLane,
  countMessage: countAnthropicMessage,
  otel: { providerName: "anthropic", operationName: "chat" },
  ids: {
    isValidToolCallId: (id) => toolCallIdPattern.test(id),
    isValidToolName: (name) => toolNamePattern.test(name),
  },
  // Anthropic streams say themselves that they ended (`message_stop`): `done` is not read.
  sdk: { runKind: "anthropic", create: (options) => anthropicMessagesProvider(options) },
  finalizeStream: (chunks, { onText }) => finalizeAnthropicMessagesEvents(chunks, onText !== undefined ? { onText } : {}),
  reasoningOf: anthropicReasoningOf,
};

/** The thinking blocks of an `anthropic-messages` echo (`{ thinking }`): their text, or a note for a redacted one. */
function anthropicReasoningOf(echo: Readonly<Record<string, unknown>>): string[] {
  const blocks = Array.isArray(echo.thinking) ? (echo.thinking as unknown[]) : [];
  return blocks.flatMap((block) => {
    if (typeof block !== "object" || block === null) return [];
    const { type, thinking } = block as { type?: unknown; thinking?: unknown };
    if (type === "redacted_thinking") return ["(redacted thinking)"];
    return type === "thinking" && typeof thinking === "string" ? [thinking] : [];
  });
}
