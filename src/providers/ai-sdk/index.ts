import type { LanguageModelV3, SharedV3ProviderOptions } from "@ai-sdk/provider";
import type { FormatAdapter } from "../format-adapter.js";
import { finalizeAiSdkStreamParts } from "./ai-sdk-finalizer.js";
import { aiSdkProvider, isAiSdkModelProvider } from "./ai-sdk-provider.js";
import { aiSdkLane } from "./ai-sdk-lane.js";
import { aiSdkUnitSerialization, countAiSdkMessage, serializeAiSdk, type AiSdkMessage } from "./ai-sdk-serializer.js";

/*
 * The AI SDK's providers pass tool call IDs through to their APIs (or make their own, as Gemini's
 * does), so the format accepts what the strictest of them does: OpenAI's 40 characters and
 * Anthropic's `[a-zA-Z0-9_-]`; tool names of `[a-zA-Z0-9_-]`, 1 to 64 (OpenAI, Anthropic, Gemini).
 */
const toolCallIdPattern = /^[a-zA-Z0-9_-]{1,40}$/;
const toolNamePattern = /^[a-zA-Z0-9_-]{1,64}$/;

/**
 * The AI SDK format (`ai-sdk`): any AI SDK language model (`LanguageModelV3`), its prompt built from
 * the log with what the provider needs echoed back (docs/providers.md, "The AI SDK bridge"). Served
 * by `aiSdkProvider` of `turnlog/ai-sdk`, which takes the host's model object; `turnlog run` has no
 * `--provider` kind for it, so `sdk` is left out — it loads an installed provider package instead
 * (`--ai-sdk <package>`, through `modelPackage`).
 *
 * @example
 * const { messages } = aiSdkFormat.serialize(units, { system: "Be brief.", provider });
 */
/**
 * The OpenTelemetry GenAI conventions' `gen_ai.provider.name` for an AI SDK model's provider
 * (`model.provider`: `openai.responses`, `google.generative-ai`, `google.vertex.chat`), first match
 * by dotted prefix; a provider the conventions do not name keeps the part before its first dot.
 */
const conventionProviderNames: readonly (readonly [prefix: string, name: string])[] = [
  ["google.vertex", "gcp.vertex_ai"],
  ["vertex", "gcp.vertex_ai"],
  ["google", "gcp.gemini"],
  ["amazon-bedrock", "aws.bedrock"],
  ["bedrock", "aws.bedrock"],
  ["azure", "azure.ai.openai"],
  ["mistral", "mistral_ai"],
  ["xai", "x_ai"],
];

/** `gen_ai.provider.name` of a default `aiSdkProvider` ID, `ai-sdk:<model.provider>:<model.modelId>`. */
function conventionProviderName(providerId: string): string | undefined {
  const provider = /^ai-sdk:([^:]+):./.exec(providerId)?.[1];
  if (provider === undefined) return undefined;
  const known = conventionProviderNames.find(([prefix]) => provider === prefix || provider.startsWith(`${prefix}.`));
  return known?.[1] ?? provider.split(".")[0];
}

export const aiSdkFormat: FormatAdapter<AiSdkMessage> = {
  name: "ai-sdk",
  serializedReason: "ai_sdk",
  serialize: (units, options) => serializeAiSdk(units, options),
  unitSerialization: aiSdkUnitSerialization,
  lane: aiSdkLane,
  countMessage: countAiSdkMessage,
  otel: {
    providerName: "ai-sdk",
    operationName: "chat",
    // `aiSdkProvider`'s IDs are `ai-sdk:<model.provider>:<model.modelId>`; a model ID may itself hold
    // colons (`qwen3:8b`), a provider name does not (`openai.responses`).
    requestModel: (providerId) => /^ai-sdk:[^:]+:(.+)$/.exec(providerId)?.[1],
    providerNameOf: conventionProviderName,
  },
  ids: {
    isValidToolCallId: (id) => toolCallIdPattern.test(id),
    isValidToolName: (name) => toolNamePattern.test(name),
  },
  modelPackage: {
    isModelProvider: isAiSdkModelProvider,
    // The model is checked by aiSdkProvider itself (a `doStream`, the v3 interface).
    create: (model, options) => aiSdkProvider(model as LanguageModelV3, options.providerOptions !== undefined ? { providerOptions: options.providerOptions as SharedV3ProviderOptions } : {}),
  },
  // An AI SDK stream says itself that it ended (its `finish` part): `done` is not read.
  finalizeStream: (parts, { onText }) => finalizeAiSdkStreamParts(parts, onText !== undefined ? { onText } : {}),
  reasoningOf: aiSdkReasoningOf,
};

/** The reasoning parts of an `ai-sdk` echo (`{ parts }`): a summary's text, or a note that it is encrypted only. */
function aiSdkReasoningOf(echo: Readonly<Record<string, unknown>>): string[] {
  const parts = Array.isArray(echo.parts) ? (echo.parts as unknown[]) : [];
  return parts.flatMap((part) => {
    if (typeof part !== "object" || part === null || (part as { type?: unknown }).type !== "reasoning") return [];
    const text = (part as { text?: unknown }).text;
    return [typeof text === "string" && text !== "" ? text : "(encrypted reasoning)"];
  });
}
