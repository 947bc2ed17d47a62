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
