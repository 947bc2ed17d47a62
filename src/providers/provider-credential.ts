/**
 * An API key as a real provider adapter holds it for one request: read from the environment at
 * call time (so a rotated key is picked up and the provider object never carries it), and able to
 * scrub itself out of any text that might end up in an error message or the log.
 */
export interface ProviderCredential {
  /** The NAME of the environment variable the key comes from, e.g. `OPENAI_API_KEY`. */
  readonly envName: string;
  /** The key to send: the variable's value, or the placeholder when it is unset or empty. */
  readonly value: string;
  /** Whether the variable was set; `false` means the placeholder is sent. */
  readonly fromEnvironment: boolean;
  /** `text` with the key and anything shaped like a credential header value replaced. */
  scrub(text: string): string;
}

/** Keys shorter than this are not searched for verbatim: a placeholder like `x` would shred text. */
const minimumScrubbedLength = 8;

// `Bearer <token>` and `x-api-key: <token>` as a server might echo them back in an error body.
const bearerToken = /\b(bearer)(\s+)(?!\[redacted\])[^\s"',;}\]]+/gi;
const apiKeyHeader = /\b(x-api-key|api[-_]?key)(["']?\s*[:=]\s*["']?)(?!\[redacted\])[^\s"',;}\]]+/gi;

/** What is sent when the key's variable is unset: keyless local servers (Ollama, llama.cpp, LM Studio) ignore it. */
export const placeholderKey = "turnlog-no-key";

/**
 * Reads the key for one request from `env[envName]` (`process.env` unless the caller hands its own
 * environment, as an embedder of the CLI does). When the variable is unset or empty
 * the placeholder is used, so keyless local servers (Ollama, llama.cpp, LM Studio) work; a real
 * endpoint answers 401, which the adapter reports together with the variable's name.
 *
 * @example
 * const credential = readProviderCredential("OPENAI_API_KEY");
 * new OpenAI({ apiKey: credential.value });
 * credential.scrub(`bad key ${credential.value}`); // "bad key [redacted]"
 */
export function readProviderCredential(envName: string, placeholder: string = placeholderKey, env: Readonly<Record<string, string | undefined>> = process.env): ProviderCredential {
  const configured = env[envName];
  const fromEnvironment = configured !== undefined && configured !== "";
  const value = fromEnvironment ? configured : placeholder;
  return {
    envName,
    value,
    fromEnvironment,
    scrub(text) {
      let scrubbed = text;
      if (value.length >= minimumScrubbedLength) scrubbed = scrubbed.split(value).join("[redacted]");
      return scrubbed.replace(bearerToken, "$1$2[redacted]").replace(apiKeyHeader, "$1$2[redacted]");
    },
  };
}
