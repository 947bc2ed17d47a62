import { createAnthropic } from "@ai-sdk/anthropic";
import { createGoogleGenerativeAI } from "@ai-sdk/google";
import { createOpenAI } from "@ai-sdk/openai";
import type { LanguageModelV3 } from "@ai-sdk/provider";

/**
 * The real provider packages' models pointed at the fake servers (responses-server.ts,
 * anthropic-thinking-server.ts, gemini-server.ts), with the call options each server's checks
 * expect. A turnlog test hands the model to `aiSdkProvider` and passes the options on every call;
 * the fake key stays in the model object, where a test can look for it leaking into the log.
 *
 * @example
 * const server = await startResponsesServer(script);
 * const model = responsesModel(server.url);
 * // aiSdkProvider(model, { providerOptions: responsesProviderOptions })
 */

/** A distinctive fake key: if it shows up in a log or a diagnostic, a test can find it. */
export const fakeProviderKey = `sk-fake-${"Hq3Vn8Tc5Wd1Ja7Ue2Lo".repeat(2)}`;

/** `openai.responses(model)` against a fake Responses server. */
export function responsesModel(url: string, modelId = "gpt-5"): LanguageModelV3 {
  return createOpenAI({ baseURL: `${url}/v1`, apiKey: fakeProviderKey }).responses(modelId);
}

/** Stateless reasoning: the API keeps nothing, so the encrypted reasoning must travel in each request. */
export const responsesProviderOptions = { openai: { store: false, include: ["reasoning.encrypted_content"] } };

/** `anthropic(model)` against a fake Messages server. */
export function anthropicModel(url: string, modelId = "claude-sonnet-4-5"): LanguageModelV3 {
  return createAnthropic({ baseURL: `${url}/v1`, apiKey: fakeProviderKey })(modelId);
}

/** Extended thinking, which the server requires of a conversation with thinking blocks. */
export const anthropicProviderOptions = { anthropic: { thinking: { type: "enabled", budgetTokens: 1024 } } };

/** `google(model)` against a fake Gemini server; a Gemini 3 model, whose function calls carry thought signatures. */
export function geminiModel(url: string, modelId = "gemini-3-pro-preview"): LanguageModelV3 {
  return createGoogleGenerativeAI({ baseURL: `${url}/v1beta`, apiKey: fakeProviderKey })(modelId);
}

/** Thought summaries included in the stream. */
export const geminiProviderOptions = { google: { thinkingConfig: { includeThoughts: true } } };
