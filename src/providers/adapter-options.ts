/**
 * Checks shared by the real adapters' factories. A bad option is the host's programming mistake,
 * so it is a plain `TypeError`, thrown when the provider is made rather than on the first turn.
 */

/**
 * The model name, which must be a non-empty string.
 *
 * @example
 * requireModel("openai-chat", options.model) // "gpt-4.1-mini"
 */
export function requireModel(format: string, model: unknown): string {
  if (typeof model !== "string" || model.trim() === "") throw new TypeError(`${format} provider: "model" must be a non-empty string`);
  return model;
}

/**
 * A duration option in milliseconds: a positive finite number, or the default when omitted.
 *
 * @example
 * milliseconds("openai-chat", "requestTimeoutMs", undefined, 120_000) // 120000
 */
export function milliseconds(format: string, name: string, value: number | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== "number" || !Number.isFinite(value) || value <= 0) throw new TypeError(`${format} provider: "${name}" must be a positive number of milliseconds`);
  return value;
}

/**
 * The base URL, checked to be an http(s) URL without credentials in it: the provider's key comes
 * from `apiKeyEnv` only, and a URL is quoted in errors and docs where a password must never be.
 * The URL is deliberately not repeated in the error message.
 *
 * @example
 * baseUrl("openai-chat", "http://localhost:11434/v1") // "http://localhost:11434/v1"
 */
export function baseUrl(format: string, value: string): string {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new TypeError(`${format} provider: "baseURL" is not a valid URL`);
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") throw new TypeError(`${format} provider: "baseURL" must be an http or https URL`);
  if (url.username !== "" || url.password !== "") {
    throw new TypeError(`${format} provider: "baseURL" must not carry credentials; put the key in the variable named by "apiKeyEnv"`);
  }
  return value;
}

/**
 * The name of the environment variable holding the key (not the key itself).
 *
 * @example
 * apiKeyEnvName("openai-chat", undefined, "OPENAI_API_KEY") // "OPENAI_API_KEY"
 */
export function apiKeyEnvName(format: string, value: string | undefined, fallback: string): string {
  if (value === undefined) return fallback;
  // Upper case only: a key pasted where its variable's name belongs (mixed case, dashes) is refused
  // here, instead of being looked up in vain and then quoted in an error message.
  if (typeof value !== "string" || !/^[A-Z_][A-Z0-9_]*$/.test(value)) {
    throw new TypeError(`${format} provider: "apiKeyEnv" must be the NAME of an environment variable (upper-case letters, digits, underscores)`);
  }
  return value;
}

/** The options both real adapters take (each adds its own, and documents its defaults). */
export interface StreamingAdapterOptions {
  model: string;
  baseURL?: string;
  /** The NAME of the environment variable holding the key, read on every request and never stored. */
  apiKeyEnv?: string;
  /** The environment `apiKeyEnv` is read from, on every request. Default `process.env`. */
  env?: Readonly<Record<string, string | undefined>>;
  temperature?: number;
  maxTokens?: number;
  /** How long to wait for the response to start (its headers). Default 120 000. */
  requestTimeoutMs?: number;
  /** How long the stream may go without a byte before the request is abandoned. Default 60 000. */
  staleStreamTimeoutMs?: number;
  /** Extra headers sent with every request. */
  headers?: Record<string, string>;
}

/** The shared options, checked and with their defaults applied. */
export interface ResolvedAdapterOptions {
  model: string;
  url: string;
  keyEnv: string;
  requestTimeoutMs: number;
  staleStreamTimeoutMs: number;
  headers: Record<string, string>;
}

/**
 * Checks the shared options of an adapter and applies the defaults (its own base URL and key
 * variable; 120 s to start, 60 s without a byte).
 *
 * @example
 * resolveAdapterOptions("openai-chat", { model: "qwen3:8b" }, { baseURL: "https://api.openai.com/v1", apiKeyEnv: "OPENAI_API_KEY" });
 */
export function resolveAdapterOptions(format: string, options: StreamingAdapterOptions, defaults: { baseURL: string; apiKeyEnv: string }): ResolvedAdapterOptions {
  return {
    model: requireModel(format, options.model),
    url: baseUrl(format, options.baseURL ?? defaults.baseURL),
    keyEnv: apiKeyEnvName(format, options.apiKeyEnv, defaults.apiKeyEnv),
    requestTimeoutMs: milliseconds(format, "requestTimeoutMs", options.requestTimeoutMs, 120_000),
    staleStreamTimeoutMs: milliseconds(format, "staleStreamTimeoutMs", options.staleStreamTimeoutMs, 60_000),
    headers: { ...options.headers },
  };
}
