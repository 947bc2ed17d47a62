import type { FormatAdapter } from "../format-adapter.js";
import { openAiChatProvider } from "./openai-chat-provider.js";
import { finalizeOpenAiChatChunks } from "./openai-chat-finalizer.js";
import { openAiChatLane } from "./openai-chat-lane.js";
import { countOpenAiChatMessage, openAiUnitSerialization, serializeOpenAiChat, type OpenAiChatMessage } from "./openai-chat-serializer.js";

/** OpenAI accepts any call ID up to 40 characters, and tool names of `[a-zA-Z0-9_-]`, 1 to 64. */
const toolCallIdLimit = 40;
const toolNamePattern = /^[a-zA-Z0-9_-]{1,64}$/;

/**
 * The OpenAI Chat Completions format (`openai-chat`): every server that speaks `/v1/chat/completions`.
 * Its SDK adapter is `openAiChatProvider` (openai-chat-provider.ts).
 *
 * @example
 * const { messages } = openAiChatFormat.serialize(units, { system: "Be brief." });
 */
export const openAiChatFormat: FormatAdapter<OpenAiChatMessage> = {
  name: "openai-chat",
  serializedReason: "openai_chat",
  serialize: (units, options) => serializeOpenAiChat(units, options),
  unitSerialization: openAiUnitSerialization,
  lane: openAiChatLane,
  countMessage: countOpenAiChatMessage,
  otel: { providerName: "openai", operationName: "chat" },
  ids: {
    isValidToolCallId: (id) => id.length > 0 && id.length <= toolCallIdLimit,
    isValidToolName: (name) => toolNamePattern.test(name),
  },
  sdk: { runKind: "openai", create: (options) => openAiChatProvider(options) },
  finalizeStream: (chunks, { done, onText }) => finalizeOpenAiChatChunks(chunks, { sawDone: done, ...(onText !== undefined ? { onText } : {}) }),
  // A reasoning model behind an OpenAI-compatible server sends its reasoning as `reasoning_content`.
  reasoningOf: (echo) => (typeof echo.reasoning_content === "string" && echo.reasoning_content !== "" ? [echo.reasoning_content] : []),
};
