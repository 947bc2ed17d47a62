/**
 * turnlog/ai-sdk: any AI SDK language model as a turnlog provider (docs/providers.md, "The AI SDK
 * bridge"). `aiSdkProvider(model, options?)` takes a `LanguageModelV3` (ai 6, @ai-sdk/provider 3
 * and the provider packages of that line: @ai-sdk/openai, @ai-sdk/anthropic, @ai-sdk/google 3.x)
 * and speaks the provider format `ai-sdk`. `ai` and `@ai-sdk/provider` are optional peer
 * dependencies: the root import never loads them, and this entry loads nothing of them at run
 * time either (it only drives the model object the host made).
 */
export { aiSdkProvider } from "./providers/ai-sdk/ai-sdk-provider.js";
export type { AiSdkProviderOptions } from "./providers/ai-sdk/ai-sdk-provider.js";
export { createAiSdkFinalizer, finalizeAiSdkStreamParts } from "./providers/ai-sdk/ai-sdk-finalizer.js";
export type { AiSdkEchoPart, AiSdkFinalizer } from "./providers/ai-sdk/ai-sdk-finalizer.js";
export type { AiSdkAssistantPart, AiSdkMessage, AiSdkProviderOptions as AiSdkPromptProviderOptions, AiSdkToolResultPart } from "./providers/ai-sdk/ai-sdk-serializer.js";
