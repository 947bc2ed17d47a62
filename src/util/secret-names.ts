/**
 * Which *names* announce a secret: JSON keys, `NAME=value` variables, header and flag names, URL
 * query parameters. Part of the secret detector (`secret-detector.ts`); kept apart because the
 * rules are a vocabulary, not a pattern.
 *
 * The rule for field names reads a name as words (`OPENAI_API_KEY` → `openai api key`,
 * `accessToken` → `access token`) and looks at the **last word**, the head noun of the compound:
 * `max_tokens`, `tokens_used`, `token_count`, `passwordPolicy` and `password_hint` name a count,
 * a policy or a hint, not a secret, while `access_token`, `clientSecret` and `db_password` do.
 */

/**
 * Splits a name into lower-case words at `_`, `-`, `.`, spaces and camelCase boundaries.
 *
 * @example
 * nameWords("OPENAI_API_KEY"); // ["openai", "api", "key"]
 * nameWords("accessToken"); // ["access", "token"]
 */
export function nameWords(name: string): string[] {
  return name
    .replace(/([a-z0-9])([A-Z])/g, "$1 $2")
    .replace(/([A-Z]+)([A-Z][a-z])/g, "$1 $2")
    .toLowerCase()
    .split(/[^a-z0-9]+/)
    .filter((word) => word.length > 0);
}

/** Head words that always name a secret, whatever qualifies them (`old_password`, `webhookSecret`). */
const secretHeads = new Set([
  "password",
  "passwd",
  "passphrase",
  "secret",
  "secrets",
  "credential",
  "credentials",
  "creds",
  "authorization",
  // A session cookie is a bearer credential (`Cookie:`, `Set-Cookie:`, `--cookie`, `"cookies": […]`).
  "cookie",
  "cookies",
  // Compound words written as one (`apikey`, `ACCESSTOKEN`), and as a last word (`x-apikey`).
  "apikey",
  "apisecret",
  "apitoken",
  "accesstoken",
  "refreshtoken",
  "authtoken",
  "idtoken",
  "sessiontoken",
  "clientsecret",
  "privatekey",
  "secretkey",
  "accesskey",
]);

/**
 * `token` names a credential except after these words: pagination cursors (`nextPageToken`,
 * `continuation_token`) and the tokenizer vocabulary of language models (`eos_token`,
 * `pad_token`), which are text, not secrets.
 */
const nonSecretTokenQualifiers = new Set([
  "page",
  "next",
  "prev",
  "previous",
  "continuation",
  "cursor",
  "sync",
  "cancellation",
  "max",
  "min",
  "num",
  "eos",
  "bos",
  "pad",
  "unk",
  "sep",
  "mask",
  "cls",
  "stop",
  "start",
  "end",
  "special",
  "first",
  "last",
]);

/**
 * `key` alone is ordinary data (`{"key": "Enter"}`, `sortKey`, `primaryKey`, `publicKey`,
 * `cacheKey`); it names a secret only after one of these words.
 */
const secretKeyQualifiers = new Set([
  "api",
  "private",
  "secret",
  "access",
  "signing",
  "encryption",
  "decryption",
  "client",
  "master",
  "auth",
  "session",
  "license",
  "subscription",
  "hmac",
  "ssh",
  "webhook",
  "service",
]);

/**
 * Whether a field name (a JSON key at any depth, a `"name": value` pair in text, a YAML key, a
 * header, a `--flag=`) names a secret. Case and separators do not matter: `apiKey`, `api_key`,
 * `API-KEY` and `apikey` are the same name.
 *
 * Secret: `apiKey`, `token`, `accessToken`, `refresh_token`, `password`, `passwd`, `secret`,
 * `client_secret`, `credential(s)`, `authorization`, `private_key`, `AWS_SECRET_ACCESS_KEY`,
 * `x-api-key`, `DB_PASS`, `password_confirmation`.
 * Not secret: `tokens_used`, `max_tokens`, `token_count`, `token_type`, `tokenizer`, `keyboard`,
 * `key`, `sortKey`, `primaryKey`, `publicKey`, `passwordPolicy`, `password_hint`, `nextPageToken`,
 * `eos_token`, `signature` (thinking-block signatures must survive for provider replay).
 *
 * @example
 * isSecretFieldName("clientSecret"); // true
 * isSecretFieldName("max_tokens"); // false
 */
export function isSecretFieldName(name: string): boolean {
  return remembered(fieldNames, name, readSecretFieldName);
}

/**
 * Answers for names already read: tool outputs repeat the same few labels (`"id":`, `Date:`,
 * `path=`) thousands of times, and splitting each into words again was most of a scan's cost.
 * Bounded: cleared when full, since names come from untrusted text.
 */
function remembered(cache: Map<string, boolean>, name: string, read: (name: string) => boolean): boolean {
  let answer = cache.get(name);
  if (answer === undefined) {
    if (cache.size >= 4096) cache.clear();
    answer = read(name);
    cache.set(name, answer);
  }
  return answer;
}
const fieldNames = new Map<string, boolean>();
const variableNames = new Map<string, boolean>();

function readSecretFieldName(name: string): boolean {
  // Read once with camelCase boundaries (`accessToken`) and once without, so that odd casing
  // (`ToKeN`, `tokeN`) cannot split a word apart.
  return isSecretWordList(nameWords(name)) || isSecretWordList(name.toLowerCase().split(/[^a-z0-9]+/).filter((word) => word.length > 0));
}

function isSecretWordList(words: readonly string[]): boolean {
  const last = words.at(-1);
  if (last === undefined) return false;
  const previous = words.at(-2);
  if (secretHeads.has(words.join("")) || secretHeads.has(last)) return true;
  if (last === "token") return previous === undefined || !nonSecretTokenQualifiers.has(previous);
  if (last === "key") return previous !== undefined && secretKeyQualifiers.has(previous);
  // `db_pass`, `smtpPass`; a lone `pass` is as often a test verdict as a password.
  if (last === "pass") return previous !== undefined;
  if (last === "confirmation" || last === "confirm") return previous === "password" || previous === "passwd";
  return false;
}

/** `NAME=value` with a name ending in one of these after `_` (docs/policy.md#secrets)… */
const secretVariableSuffix = /_(?:KEY|TOKEN|SECRET|PASSWORD|PASSWD|PASS|PASSPHRASE)$/i;
/** …or being one of these. A bare `KEY=` or `PASS=` is too often something else. */
const secretVariableNames = new Set(["password", "passwd", "passphrase", "secret", "token"]);

/**
 * Whether the name of a `NAME=value` assignment (an environment variable, a `.env` line, a
 * keyword argument) names a secret: it ends in `_KEY`, `_TOKEN`, `_SECRET`, `_PASSWORD` (also
 * `_PASSWD`, `_PASS`, `_PASSPHRASE`), any case, or is exactly `PASSWORD`, `SECRET`, `TOKEN`,
 * or it is a secret field name (`apiKey=`). `_KEY` is taken literally (docs/policy.md#secrets), so
 * `SORT_KEY=name` is redacted too: in an environment file a `_KEY` is almost always a credential.
 *
 * @example
 * isSecretVariableName("OPENAI_API_KEY"); // true
 * isSecretVariableName("NODE_ENV"); // false
 */
export function isSecretVariableName(name: string): boolean {
  return remembered(variableNames, name, readSecretVariableName);
}

function readSecretVariableName(name: string): boolean {
  return secretVariableSuffix.test(name) || secretVariableNames.has(name.toLowerCase()) || isSecretFieldName(name);
}

/** Query parameters that carry credentials although their names are not secret field names. */
const secretQueryParameters = new Set(["key", "sig", "signature", "xamzsignature", "xamzsecuritytoken", "xgoogsignature"]);

/**
 * Whether a URL query parameter carries a credential: `token`, `access_token`, `api_key`,
 * `apikey`, `key`, `password`, `client_secret`, `signature`, `sig` (Azure SAS), the AWS and
 * Google signed-URL parameters, and every secret field name (`refresh_token`, `clientSecret`).
 * `page_token` and `max_tokens` are not.
 *
 * @example
 * isSecretQueryParameterName("access_token"); // true
 * isSecretQueryParameterName("page"); // false
 */
export function isSecretQueryParameterName(name: string): boolean {
  return secretQueryParameters.has(nameWords(name).join("")) || isSecretFieldName(name);
}
