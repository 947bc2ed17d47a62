import type { ChatCompletionCreateParamsStreaming, ChatCompletionMessageParam, ChatCompletionTool } from "openai/resources/chat/completions";
import { resolveAdapterOptions, type StreamingAdapterOptions } from "../adapter-options.js";
import { createOpenAiChatFinalizer } from "./openai-chat-finalizer.js";
import { readProviderCredential } from "../provider-credential.js";
import type { Provider, ProviderRequest } from "../provider.js";
import { runStreamingCall } from "../sdk-streaming-call.js";

/** Options of `openAiChatProvider`. */
export interface OpenAiChatProviderOptions extends StreamingAdapterOptions {
  /** The model name the server knows, e.g. `gpt-4.1-mini`, `qwen3:8b`, `meta-llama/Llama-3.1-8B-Instruct`. */
  model: string;
  /** Any OpenAI-compatible endpoint, up to and including `/v1`. Default `https://api.openai.com/v1`. */
  baseURL?: string;
  /**
   * The NAME of the environment variable holding the key (default `OPENAI_API_KEY`). It is read on
   * every request, never stored; when it is unset a placeholder is sent, which keyless local
   * servers accept.
   */
  apiKeyEnv?: string;
  /** Upper bound on generated tokens; sent as `maxTokensParameter`. Omitted: the server's default. */
  maxTokens?: number;
  /**
   * The request field `maxTokens` is sent as. Default: `max_completion_tokens` for
   * api.openai.com (its reasoning models refuse `max_tokens`), `max_tokens` elsewhere (what local
   * servers read).
   */
  maxTokensParameter?: "max_tokens" | "max_completion_tokens";
}

const defaultBaseUrl = "https://api.openai.com/v1";


/**
 * A `Provider` for the OpenAI Chat Completions API and every server that speaks it (OpenAI,
 * Ollama, vLLM, llama.cpp, LM Studio, gateways), built on the official `openai` client. It
 * streams (`stream: true`, with usage), runs every chunk through `createOpenAiChatFinalizer`
 * (visible text goes to `onDelta` as it arrives) and resolves with the finalized response.
 *
 * The SDK's own retries are off (`maxRetries: 0`): the turn loop retries, so that every failed
 * attempt is logged as `turn.provider.failed` (see docs/providers.md for the error mapping). A
 * tool call the server sent without an `id` keeps none, and turnlog derives a stable one.
 *
 * @example
 * const provider = openAiChatProvider({ baseURL: "http://localhost:11434/v1", model: "qwen3:8b" });
 * const runtime = await createRuntime({ provider, tools });
 */
export function openAiChatProvider(options: OpenAiChatProviderOptions): Provider {
  const format = "openai-chat";
  const { model, url, keyEnv, requestTimeoutMs, staleStreamTimeoutMs, headers } = resolveAdapterOptions(format, options, { baseURL: defaultBaseUrl, apiKeyEnv: "OPENAI_API_KEY" });
  const maxTokensParameter = options.maxTokensParameter ?? (new URL(url).hostname === "api.openai.com" ? "max_completion_tokens" : "max_tokens");

  return {
    // The model only: never the key, and never the URL (which may name an internal host).
    id: `${format}:${model}`,
    format,
    async complete(request, { signal, onDelta }) {
      // Loaded on first use: a host or CLI command that never calls this provider does not pay
      // for the SDK at start-up.
      const { default: OpenAI, APIError, APIConnectionError, APIConnectionTimeoutError } = await import("openai");
      const credential = readProviderCredential(keyEnv, undefined, options.env);
      const finalizer = createOpenAiChatFinalizer(onDelta !== undefined ? { onText: onDelta } : {});
      const done = doneSentinelDetector();
      const body = requestBody(request, { model, temperature: options.temperature, maxTokens: options.maxTokens, maxTokensParameter });
      return runStreamingCall({
        format,
        signal,
        credential,
        requestTimeoutMs,
        staleStreamTimeoutMs,
        errors: { APIError, APIConnectionError, APIConnectionTimeoutError },
        open: ({ fetch, signal: requestSignal }) =>
          // A client per request: the key is read now, and lives no longer than the request.
          new OpenAI({ apiKey: credential.value, baseURL: url, timeout: requestTimeoutMs, maxRetries: 0, defaultHeaders: headers, fetch }).chat.completions.create(body, {
            signal: requestSignal,
          }),
        finalizer,
        finish: () => finalizer.finish({ sawDone: done.seen }),
        inBandEvent: (error) => ({ error: error.error }),
        onBytes: done.observe,
      });
    },
  };
}

/** The Chat Completions request for a turnlog request. */
function requestBody(
  request: ProviderRequest,
  options: { model: string; temperature: number | undefined; maxTokens: number | undefined; maxTokensParameter: "max_tokens" | "max_completion_tokens" },
): ChatCompletionCreateParamsStreaming {
  // The history projection already built the messages in this exact wire format (docs/history.md#serializers).
  const history = request.messages as ChatCompletionMessageParam[];
  const messages: ChatCompletionMessageParam[] = request.system !== undefined ? [{ role: "system", content: request.system }, ...history] : history;
  const tools: ChatCompletionTool[] = request.tools.map((tool) => ({
    type: "function",
    function: { name: tool.name, description: tool.description, parameters: tool.parameters },
  }));
  return {
    model: options.model,
    messages,
    stream: true,
    stream_options: { include_usage: true },
    // An empty `tools` array is refused by some servers: leave the field out instead.
    ...(tools.length > 0 ? { tools } : {}),
    ...(options.temperature !== undefined ? { temperature: options.temperature } : {}),
    ...(options.maxTokens !== undefined ? { [options.maxTokensParameter]: options.maxTokens } : {}),
  };
}

/**
 * Whether the raw stream carried the `data: [DONE]` line. The SDK consumes that sentinel without
 * telling, but the finalizer needs it to tell a stream that ended properly from one cut short, so
 * the adapter reads the start of each line of the raw bytes itself — nothing more of SSE than that.
 */
function doneSentinelDetector(): { readonly seen: boolean; observe(bytes: Uint8Array): void } {
  const decoder = new TextDecoder();
  // The start of the line being received; only its first characters can matter.
  let lineStart = "";
  let seen = false;
  return {
    get seen() {
      return seen;
    },
    observe(bytes) {
      if (seen) return;
      const lines = decoder.decode(bytes, { stream: true }).split(/\r\n|\r|\n/);
      lines.forEach((piece, position) => {
        const line = position === 0 ? lineStart + piece : piece;
        if (position < lines.length - 1) {
          if (/^data: ?\[DONE\]/.test(line)) seen = true;
        } else {
          lineStart = line.slice(0, 16);
        }
      });
    },
  };
}
