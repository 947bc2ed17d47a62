import type { LanguageModelV3, LanguageModelV3CallOptions, LanguageModelV3FunctionTool, LanguageModelV3Prompt, LanguageModelV3StreamPart, SharedV3ProviderOptions } from "@ai-sdk/provider";
import { milliseconds } from "../adapter-options.js";
import type { Provider, ProviderRequest } from "../provider.js";
import { ProviderError } from "../../errors/provider-error.js";
import { unwrapFinalization } from "../stream-finalization.js";
import { aiSdkRequestFailure } from "./ai-sdk-errors.js";
import { createAiSdkFinalizer } from "./ai-sdk-finalizer.js";
import type { AiSdkMessage } from "./ai-sdk-serializer.js";

/** Options of `aiSdkProvider`. */
export interface AiSdkProviderOptions {
  /**
   * The provider's `id`, recorded in the log: an echo (reasoning, signatures) is sent back only to
   * the provider id and format it came from. Default `ai-sdk:<model.provider>:<model.modelId>`.
   */
  id?: string;
  /** Upper bound on generated tokens (`maxOutputTokens`). Omitted: the provider's default. */
  maxOutputTokens?: number;
  temperature?: number;
  /**
   * Provider options sent with every request (`providerOptions` of the call), e.g.
   * `{ openai: { reasoningEffort: "low", include: ["reasoning.encrypted_content"], store: false } }`.
   * Never put a key here: they are not logged, but the key belongs in the model object.
   */
  providerOptions?: SharedV3ProviderOptions;
  /** Extra headers sent with every request. */
  headers?: Record<string, string>;
  /**
   * How long the stream may go without a part before the request is abandoned as a retryable
   * `timeout`. Default 60 000. (The model owns its HTTP client, so this watches the SDK's parts,
   * not bytes: keep-alive pings do not count.)
   */
  staleStreamTimeoutMs?: number;
}

/**
 * A `Provider` for any AI SDK language model (`LanguageModelV3` of @ai-sdk/provider 3, as
 * `@ai-sdk/openai`, `@ai-sdk/anthropic`, `@ai-sdk/google` 3.x and ai 6 make them): turnlog's
 * provider format `ai-sdk` (docs/providers.md, "The AI SDK bridge").
 *
 * - The request is the history turnlog built from the log as the SDK's prompt (the system message
 *   first, then the history, with reasoning parts and their provider options echoed back), sent
 *   with `model.doStream()` — one call, never the SDK's own loop or retries; the turn loop retries.
 * - Every stream part goes through `createAiSdkFinalizer`; visible text goes to `onDelta` as it
 *   arrives; only finished tool calls are surfaced.
 * - The API key stays in the model object: turnlog never reads it, and the provider's `id` names
 *   the model only.
 *
 * @example
 * import { createOpenAI } from "@ai-sdk/openai";
 * const provider = aiSdkProvider(createOpenAI()("gpt-5"), { providerOptions: { openai: { reasoningEffort: "low" } } });
 * const runtime = await createRuntime({ provider, tools });
 */
export function aiSdkProvider(model: LanguageModelV3, options: AiSdkProviderOptions = {}): Provider {
  if (typeof model !== "object" || model === null || typeof model.doStream !== "function") {
    throw new TypeError("ai-sdk provider: the model must be an AI SDK language model (with doStream)");
  }
  if (model.specificationVersion !== "v3") {
    throw new TypeError(`ai-sdk provider: the model implements the language model interface ${String(model.specificationVersion)}; turnlog supports v3 (@ai-sdk/provider 3, ai 6)`);
  }
  const format = "ai-sdk";
  const staleStreamTimeoutMs = milliseconds(format, "staleStreamTimeoutMs", options.staleStreamTimeoutMs, 60_000);
  return {
    id: options.id ?? `${format}:${model.provider}:${model.modelId}`,
    format,
    async complete(request, { signal, onDelta }) {
      signal.throwIfAborted();
      const finalizer = createAiSdkFinalizer(onDelta !== undefined ? { onText: onDelta } : {});
      const stale = new AbortController();
      const abortSignal = AbortSignal.any([signal, stale.signal]);
      let timer: ReturnType<typeof setTimeout> | undefined;
      const arm = () => {
        if (timer !== undefined) clearTimeout(timer);
        timer = setTimeout(() => stale.abort(new Error(`no stream part for ${staleStreamTimeoutMs} ms`)), staleStreamTimeoutMs);
        // A forgotten request must not keep a process alive.
        timer.unref?.();
      };
      let brokeOff: unknown;
      try {
        let stream: ReadableStream<LanguageModelV3StreamPart>;
        try {
          ({ stream } = await model.doStream(callOptions(request, options, abortSignal)));
        } catch (error) {
          signal.throwIfAborted();
          throw aiSdkRequestFailure(error);
        }
        const reader = stream.getReader();
        // The model ties its HTTP request to `abortSignal`, but a stream need not end with it (a
        // model that is not HTTP, a middleware's own stream): an abort — the caller's or the stale
        // watch's — cancels the reader too, which ends the pending read.
        const cancel = () => void reader.cancel(abortSignal.reason).catch(() => undefined);
        abortSignal.addEventListener("abort", cancel, { once: true });
        arm();
        try {
          for (;;) {
            const next = await reader.read();
            if (next.done) break;
            arm();
            finalizer.push(next.value);
            // The failure stands whatever follows; cancelling the reader ends the request.
            if (finalizer.failure !== undefined) break;
          }
        } catch (error) {
          brokeOff = error;
        } finally {
          abortSignal.removeEventListener("abort", cancel);
          // Cancelling a stream that errored or ended is harmless; one still running is stopped.
          reader.cancel().catch(() => undefined);
        }
      } finally {
        if (timer !== undefined) clearTimeout(timer);
      }
      signal.throwIfAborted();
      const result = finalizer.finish();
      if (result.ok) return result.response;
      if (stale.signal.aborted) {
        throw new ProviderError({ kind: "timeout", retryable: true, message: `ai-sdk stream: no stream part for ${staleStreamTimeoutMs} ms; the request was abandoned` });
      }
      if (brokeOff !== undefined && result.kind === "incomplete-stream") {
        const cause = aiSdkRequestFailure(brokeOff);
        throw new ProviderError({ kind: "incomplete-stream", retryable: true, message: `${result.message}; the stream broke off (${cause.message})` });
      }
      return unwrapFinalization(result);
    },
  };
}

/**
 * Whether a value is an AI SDK provider (`ProviderV3`): callable with a model ID, with a
 * `languageModel` function — what `@ai-sdk/openai`'s `openai`, `@ai-sdk/anthropic`'s `anthropic`
 * or `@ai-sdk/google`'s `google` are, and their `create…` factories are not.
 *
 * @example
 * isAiSdkModelProvider(openai); // true
 * isAiSdkModelProvider(createOpenAI); // false: a factory of providers
 */
export function isAiSdkModelProvider(value: unknown): boolean {
  return typeof value === "function" && typeof (value as { languageModel?: unknown }).languageModel === "function";
}

/** The `doStream` options of a turnlog request. */
function callOptions(request: ProviderRequest, options: AiSdkProviderOptions, abortSignal: AbortSignal): LanguageModelV3CallOptions {
  // The history projection already built the prompt (ai-sdk-serializer.ts); its shapes are the SDK's.
  const history = request.messages as AiSdkMessage[];
  const prompt = (request.system !== undefined ? [{ role: "system", content: request.system }, ...history] : history) as LanguageModelV3Prompt;
  return {
    prompt,
    abortSignal,
    ...(request.tools.length > 0
      ? {
          tools: request.tools.map((tool) => ({ type: "function" as const, name: tool.name, description: tool.description, inputSchema: tool.parameters as LanguageModelV3FunctionTool["inputSchema"] })),
          toolChoice: { type: "auto" as const },
        }
      : {}),
    ...(options.maxOutputTokens !== undefined ? { maxOutputTokens: options.maxOutputTokens } : {}),
    ...(options.temperature !== undefined ? { temperature: options.temperature } : {}),
    ...(options.providerOptions !== undefined ? { providerOptions: options.providerOptions } : {}),
    ...(options.headers !== undefined ? { headers: options.headers } : {}),
  };
}
