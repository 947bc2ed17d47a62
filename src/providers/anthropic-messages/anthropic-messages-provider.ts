import type { MessageCreateParamsStreaming, MessageParam, Tool } from "@anthropic-ai/sdk/resources/messages";
import { resolveAdapterOptions, type StreamingAdapterOptions } from "../adapter-options.js";
import { createAnthropicMessagesFinalizer } from "./anthropic-messages-finalizer.js";
import { readProviderCredential } from "../provider-credential.js";
import type { Provider, ProviderRequest } from "../provider.js";
import { runStreamingCall } from "../sdk-streaming-call.js";

/** Options of `anthropicMessagesProvider`. */
export interface AnthropicMessagesProviderOptions extends StreamingAdapterOptions {
  /** The model name, e.g. `claude-sonnet-4-5`. */
  model: string;
  /** The API root, without `/v1` (the SDK adds `/v1/messages`). Default `https://api.anthropic.com`. */
  baseURL?: string;
  /**
   * The NAME of the environment variable holding the key (default `ANTHROPIC_API_KEY`). It is read
   * on every request, never stored; when it is unset a placeholder is sent, so keyless
   * Anthropic-compatible local servers work and the real API answers 401.
   */
  apiKeyEnv?: string;
  /** Upper bound on generated tokens; the API requires one. Default 4096. */
  maxTokens?: number;
}

const defaultBaseUrl = "https://api.anthropic.com";


/**
 * A `Provider` for the Anthropic Messages API, built on the official `@anthropic-ai/sdk` client.
 * It streams the raw events (`messages.create({ stream: true })`) into
 * `createAnthropicMessagesFinalizer` (visible text goes to `onDelta` as it arrives) and resolves
 * with the finalized response; `system` goes in as the top-level `system`, tools as
 * `{ name, description, input_schema }`.
 *
 * The SDK's own retries are off (`maxRetries: 0`): the turn loop retries, so that every failed
 * attempt is logged as `turn.provider.failed` (see docs/providers.md for the error mapping).
 *
 * @example
 * const provider = anthropicMessagesProvider({ model: "claude-sonnet-4-5", maxTokens: 8192 });
 * const runtime = await createRuntime({ provider, tools });
 */
export function anthropicMessagesProvider(options: AnthropicMessagesProviderOptions): Provider {
  const format = "anthropic-messages";
  const { model, url, keyEnv, requestTimeoutMs, staleStreamTimeoutMs, headers } = resolveAdapterOptions(format, options, { baseURL: defaultBaseUrl, apiKeyEnv: "ANTHROPIC_API_KEY" });
  const maxTokens = options.maxTokens ?? 4096;
  if (!Number.isSafeInteger(maxTokens) || maxTokens <= 0) throw new TypeError(`${format} provider: "maxTokens" must be a positive integer`);

  return {
    // The model only: never the key, and never the URL (which may name an internal host).
    id: `${format}:${model}`,
    format,
    async complete(request, { signal, onDelta }) {
      // Loaded on first use, like the OpenAI adapter's SDK.
      const { default: Anthropic, APIError, APIConnectionError, APIConnectionTimeoutError } = await import("@anthropic-ai/sdk");
      const credential = readProviderCredential(keyEnv, undefined, options.env);
      const finalizer = createAnthropicMessagesFinalizer(onDelta !== undefined ? { onText: onDelta } : {});
      const body = requestBody(request, { model, maxTokens, temperature: options.temperature });
      return runStreamingCall({
        format,
        signal,
        credential,
        requestTimeoutMs,
        staleStreamTimeoutMs,
        errors: { APIError, APIConnectionError, APIConnectionTimeoutError },
        open: ({ fetch, signal: requestSignal }) =>
          // A client per request: the key is read now, and lives no longer than the request.
          // `authToken: null` so that ANTHROPIC_AUTH_TOKEN in the environment is not sent as well.
          new Anthropic({ apiKey: credential.value, authToken: null, baseURL: url, timeout: requestTimeoutMs, maxRetries: 0, defaultHeaders: headers, fetch }).messages.create(
            body,
            { signal: requestSignal },
          ),
        finalizer,
        finish: () => finalizer.finish(),
        // The SDK throws an `event: error` as a status-less APIError holding the event's payload.
        inBandEvent: (error) => error.error,
      });
    },
  };
}

/** The Messages request for a turnlog request. */
function requestBody(request: ProviderRequest, options: { model: string; maxTokens: number; temperature: number | undefined }): MessageCreateParamsStreaming {
  // The history projection already built the messages in this exact wire format (docs/history.md#serializers).
  const messages = request.messages as MessageParam[];
  const tools: Tool[] = request.tools.map((tool) => ({
    name: tool.name,
    description: tool.description,
    input_schema: { ...tool.parameters, type: "object" },
  }));
  return {
    model: options.model,
    max_tokens: options.maxTokens,
    messages,
    stream: true,
    ...(request.system !== undefined ? { system: request.system } : {}),
    ...(tools.length > 0 ? { tools } : {}),
    ...(options.temperature !== undefined ? { temperature: options.temperature } : {}),
  };
}
