/**
 * The secret detector (docs/policy.md#secrets). One detector serves persistence redaction (what the log may
 * hold) and native-replay safety (a group with credential material in its arguments is unsafe),
 * so the two can never disagree: `containsSecret(value)` is exactly `redactValue(value).redacted`.
 *
 * What it finds, and what it leaves alone, with the reason for each decision:
 *
 * - **gitleaks' rules**, vendored as data with their provenance (`vendored-secret-rules.ts`;
 *   docs/security.md, "Secret rules"): some 150 services' formats, each with its keywords, entropy
 *   threshold and allowlists.
 * - **Boundaries** (`secret-boundaries.ts`): a format glued to a word, a key wrapped over lines or
 *   JSON `\n`, base64 that decodes to text holding a secret.
 * - **Formats**, wherever they appear: OpenAI-style keys (`sk-…`, `sk-proj-…`), Anthropic keys
 *   (`sk-ant-…`), GitHub tokens (`ghp_`, `gho_`, `ghu_`, `ghs_`, `ghr_`, `github_pat_`), Slack
 *   tokens (`xoxb-`, `xoxp-`, `xoxa-`, `xoxr-`, `xoxs-`), AWS access key IDs (`AKIA`/`ASIA`),
 *   Google API keys (`AIza…`), whole PEM private-key blocks and JWTs.
 * - **`Authorization`** values (any case; `Bearer`, `Basic`, `Token`… or no scheme): the
 *   credential after the scheme is redacted, the scheme kept (`Authorization: Bearer [REDACTED]`).
 *   A bare `Bearer <token>` counts when the token is long and has letters and digits; "use a
 *   Bearer token" does not.
 * - **URL user-info** with a password: `https://user:pass@host` → `https://[REDACTED]@host`. The
 *   user goes too, since it is often the token itself (`https://TOKEN:x-oauth-basic@…`). A URL
 *   with a user and no password (`https://user@host`, `ssh://git@host`) is no credential.
 * - **Query parameters** named `token`, `access_token`, `api_key`, `apikey`, `key`, `password`,
 *   `client_secret`, `signature`, `sig` (any case and separator, and every secret field name):
 *   `?token=[REDACTED]&page=2`.
 * - **`NAME=value`** (`secret-assignment`) where the name ends in `_KEY`, `_TOKEN`, `_SECRET`,
 *   `_PASSWORD` (also `_PASSWD`, `_PASS`, `_PASSPHRASE`), any case, or is exactly `PASSWORD`,
 *   `SECRET`, `TOKEN`; with `export `, quotes, `:=`. Values that are code, not secrets, are left
 *   alone: `os.getenv(…)`, `process.env.X`, `api_key=api_key`, `$VAR`, `${VAR}`, `<your-key>`.
 * - **Secret-named fields** (`secret-field`): JSON keys at any depth, and `"name": value`,
 *   `name: value` (YAML, headers) and `--name=value` in text, named by `isSecretFieldName`:
 *   `apiKey`, `token`, `accessToken`, `password`, `passwd`, `secret`, `client_secret`,
 *   `credential(s)`, `authorization`, `private_key`… but not `tokens_used`, `max_tokens`,
 *   `tokenizer`, `keyboard`, `key`, `sortKey`, `primaryKey`, `passwordPolicy`, `password_hint`.
 *   Such a field's value becomes `"[REDACTED]"` whatever its type — a numeric PIN is a secret —
 *   except `null`, booleans, `""`, `[]` and `{}`, which carry nothing to hide (so an
 *   `"Authorization"` key loses its whole value, scheme included). `signature` is not a secret
 *   name: thinking-block signatures must reach the provider again on replay.
 *
 * Not secrets (kept byte for byte): git SHAs, UUIDs, hex digests, base64 that is not a JWT, email
 * addresses, `sk-` alone, words containing `sk-`, declarations in source code (`apiKey: string;`).
 * The entropy rule (`secret-entropy.ts`) looks only where a credential sits (an assignment, a
 * field, a header, a flag): a random-looking string standing alone is not redacted, because hashes
 * and IDs are everywhere in a tool's output and redacting them would make every history unsafe for
 * native replay.
 *
 * Known limits: credentials passed as separate arguments (`curl -u user:pass`, `mysql -phunter2`,
 * `--password hunter2`), cookies, YAML block scalars and an AWS secret access key without its name
 * are not found. Known over-redaction, accepted because it only costs native replay of one group:
 * `SORT_KEY=…` (the `_KEY` rule of docs/policy.md#secrets), a `token` field holding text (logprobs), `Token: …` lines.
 */
import { isSecretFieldName } from "../../util/secret-names.js";
import { isKeyLikeExemptName, isKeyLikeValue } from "./secret-entropy.js";
import { isWorthRedacting, KnownSecrets, redactionMarker, scanForSecrets } from "./secret-patterns.js";

/**
 * The kinds of secret, most specific first: when two findings cover the same span, the earlier
 * kind names it.
 */
export const secretKinds = [
  "private-key",
  "jwt",
  "anthropic-key",
  "openai-key",
  "github-token",
  "slack-token",
  "aws-access-key-id",
  "google-api-key",
  "stripe-key",
  "gitlab-token",
  "huggingface-token",
  "sendgrid-key",
  "twilio-key",
  "npm-token",
  "shopify-token",
  "linear-key",
  "onepassword-token",
  /** A format gitleaks and secretlint lack or find only near a word (Groq, xAI, Replicate, Google OAuth, Supabase, Tencent, Telegram, Discord, Figma, Facebook, Twitter, Mapbox). */
  "provider-token",
  /** Base64 that decodes to text holding a secret (kubeconfig `client-key-data`, a base64'd `.env`, Docker `auths`). */
  "encoded-secret",
  /** A format one of gitleaks' vendored rules found (`vendored-secret-rules.ts`); `rule` names it. */
  "gitleaks-rule",
  "aws-secret-access-key",
  "url-credentials",
  "webhook-url",
  "azure-key",
  "command-credential",
  "bearer-token",
  "secret-query-param",
  "secret-field",
  "secret-assignment",
  "high-entropy",
  /** A value the host registered (`createRuntime({ secrets })`), found literally. */
  "known-secret",
] as const;

/** What a secret is: a provider format, or the place that makes a value a secret. */
export type SecretKind = (typeof secretKinds)[number];

/** A secret in a text: the span `[start, end)` of its *value* (the label around it is kept). */
export interface SecretFinding {
  kind: SecretKind;
  start: number;
  end: number;
}

/** A text with its secrets replaced by `[REDACTED]`, and which kinds there were. */
export interface RedactedText {
  text: string;
  redacted: boolean;
  kinds: SecretKind[];
}

/** A JSON-like value with its secrets replaced by `"[REDACTED]"`, and which kinds there were. */
export interface RedactedValue {
  value: unknown;
  redacted: boolean;
  kinds: SecretKind[];
}

const kindOrder = new Map<SecretKind, number>(secretKinds.map((kind, index) => [kind, index]));
const orderOf = (kind: SecretKind): number => kindOrder.get(kind) ?? secretKinds.length;

/**
 * The secrets in `text`, in order, never overlapping: overlapping candidates are merged into one
 * finding covering them all (redacting less could leave part of a secret), named after the longest
 * candidate, or the most specific kind on a tie (`OPENAI_API_KEY=sk-…` is an `openai-key`).
 *
 * @example
 * findSecrets("curl -H 'Authorization: Bearer abcdef0123456789'");
 * // [{ kind: "bearer-token", start: 31, end: 47 }]
 */
export function findSecrets(text: string, known?: KnownSecrets): SecretFinding[] {
  const candidates = scanForSecrets(text, known).sort((left, right) => left.start - right.start || right.end - left.end);
  const merged: SecretFinding[] = [];
  let current: { finding: SecretFinding; kindLength: number } | undefined;
  for (const candidate of candidates) {
    const length = candidate.end - candidate.start;
    if (current !== undefined && candidate.start < current.finding.end) {
      current.finding.end = Math.max(current.finding.end, candidate.end);
      if (length > current.kindLength || (length === current.kindLength && orderOf(candidate.kind) < orderOf(current.finding.kind))) {
        current.finding.kind = candidate.kind;
        current.kindLength = length;
      }
      continue;
    }
    if (current !== undefined) merged.push(current.finding);
    current = { finding: { ...candidate }, kindLength: length };
  }
  if (current !== undefined) merged.push(current.finding);
  return merged.filter((finding) => text.slice(finding.start, finding.end) !== redactionMarker);
}

/** Replaces each finding's span with the marker. */
function replaceFindings(text: string, findings: readonly SecretFinding[]): string {
  let result = "";
  let cursor = 0;
  for (const finding of findings) {
    result += text.slice(cursor, finding.start) + redactionMarker;
    cursor = finding.end;
  }
  return result + text.slice(cursor);
}

/**
 * Redacting can put a secret in a new light (a key that followed a PEM block's dashes now follows
 * `]`), so it runs until nothing is found; that is what makes it idempotent. Real text settles in
 * one pass; one that has not settled after a few is replaced whole rather than kept half-redacted.
 */
const maxRedactionPasses = 4;

/**
 * Short texts already found clean, per set of known secrets: the same labels, tool names and values
 * (`"path"`, `"read_file"`, `"utf8"`) come again in every call's arguments, and a scan costs a few
 * microseconds whatever the length, since every rule is tried. Only clean texts are kept, so no
 * secret stays in memory through the memo; bounded and cleared when full, since the texts come from
 * a model. The scan itself is pure, so a kept answer is the answer (`redactTextReference` scans
 * every time; property-tests/secret-redaction.test.ts compares the two).
 */
const cleanTexts = new WeakMap<object, Set<string>>();
const withoutKnownSecrets = {};
const longestRememberedText = 128;
const rememberedTexts = 4096;

function cleanTextsOf(known: KnownSecrets | undefined): Set<string> {
  const key = known ?? withoutKnownSecrets;
  let texts = cleanTexts.get(key);
  if (texts === undefined) {
    texts = new Set();
    cleanTexts.set(key, texts);
  }
  return texts;
}

function redactTextInto(text: string, kinds: Set<SecretKind>, known: KnownSecrets | undefined): string {
  if (text.length > longestRememberedText) return redactTextScanned(text, kinds, known);
  const clean = cleanTextsOf(known);
  if (clean.has(text)) return text;
  const before = kinds.size;
  const result = redactTextScanned(text, kinds, known);
  if (result === text && kinds.size === before) {
    if (clean.size >= rememberedTexts) clean.clear();
    clean.add(text);
  }
  return result;
}

function redactTextScanned(text: string, kinds: Set<SecretKind>, known: KnownSecrets | undefined): string {
  let current = text;
  for (let pass = 0; pass < maxRedactionPasses; pass += 1) {
    const findings = findSecrets(current, known);
    if (findings.length === 0) return current;
    for (const finding of findings) kinds.add(finding.kind);
    current = replaceFindings(current, findings);
  }
  return findSecrets(current, known).length === 0 ? current : redactionMarker;
}

function sortedKinds(kinds: ReadonlySet<SecretKind>): SecretKind[] {
  return [...kinds].sort((left, right) => orderOf(left) - orderOf(right));
}

/**
 * Replaces every secret value in `text` with `[REDACTED]`, keeping the structure around it.
 *
 * @example
 * redactText("https://api.example.com/items?token=abc123&page=2").text;
 * // "https://api.example.com/items?token=[REDACTED]&page=2"
 * redactText("export OPENAI_API_KEY=sk-proj-…").text; // "export OPENAI_API_KEY=[REDACTED]"
 */
export function redactText(text: string): RedactedText {
  return redactTextWith(text, undefined);
}

function redactTextWith(text: string, known: KnownSecrets | undefined): RedactedText {
  const kinds = new Set<SecretKind>();
  const result = redactTextInto(text, kinds, known);
  return { text: result, redacted: kinds.size > 0, kinds: sortedKinds(kinds) };
}

/**
 * `redactText` without the memo of clean short texts: every text scanned. The reference the memo
 * is checked against (docs/design.md#14-speed-ups-and-their-references).
 */
export function redactTextReference(text: string, known?: KnownSecrets): RedactedText {
  const kinds = new Set<SecretKind>();
  const result = redactTextScanned(text, kinds, known);
  return { text: result, redacted: kinds.size > 0, kinds: sortedKinds(kinds) };
}

/** Whether a secret field's value carries nothing to hide, and is kept as it is. */
function isEmptyValue(value: unknown): boolean {
  if (value === null || value === undefined || typeof value === "boolean") return true;
  if (typeof value === "string") return !isWorthRedacting(value);
  if (Array.isArray(value)) return value.length === 0;
  if (typeof value === "object") return Object.keys(value).length === 0 && typeof (value as { toJSON?: unknown }).toJSON !== "function";
  return typeof value === "function" || typeof value === "symbol";
}

/** A key not yet in `target`: two keys that both redact to `[REDACTED]` must not overwrite each other. */
function freeKey(target: object, key: string): string {
  if (!Object.hasOwn(target, key)) return key;
  let suffix = 2;
  while (Object.hasOwn(target, `${key} #${suffix}`)) suffix += 1;
  return `${key} #${suffix}`;
}

/** Replaces a circular reference, which JSON cannot hold, instead of recursing forever. */
const circularMarker = "[Circular]";

function redactNode(value: unknown, kinds: Set<SecretKind>, ancestors: Set<object>, known: KnownSecrets | undefined): unknown {
  if (typeof value === "string") return redactTextInto(value, kinds, known);
  if (typeof value !== "object" || value === null) return value;
  if (ancestors.has(value)) return circularMarker;
  ancestors.add(value);
  try {
    if (Array.isArray(value)) return Array.from(value, (item: unknown) => redactNode(item, kinds, ancestors, known));
    // Seen as JSON would see it: a Date becomes its ISO string, as it would in the log.
    const toJson = (value as { toJSON?: unknown }).toJSON;
    if (typeof toJson === "function") return redactNode(toJson.call(value), kinds, ancestors, known);
    // Defined, not assigned: `__proto__`, `constructor` and `prototype` stay ordinary own keys and
    // never reach a prototype.
    const result: Record<string, unknown> = {};
    for (const key of Object.keys(value)) {
      const child = (value as Record<string, unknown>)[key];
      const resultKey = freeKey(result, redactTextInto(key, kinds, known));
      let resultChild: unknown;
      if (isSecretFieldName(resultKey)) {
        resultChild = redactSecretField(child, kinds, known);
      } else if (typeof child === "string" && !isKeyLikeExemptName(resultKey) && isKeyLikeValue(child)) {
        // `"x": "<random token>"`: the entropy rule, as for a `"x": "…"` pair in text.
        kinds.add("high-entropy");
        resultChild = redactionMarker;
      } else {
        resultChild = redactNode(child, kinds, ancestors, known);
      }
      Object.defineProperty(result, resultKey, { value: resultChild, enumerable: true, writable: true, configurable: true });
    }
    return result;
  } finally {
    ancestors.delete(value);
  }
}

/** The value of a secret-named field: the marker, unless there is nothing to hide. */
function redactSecretField(value: unknown, kinds: Set<SecretKind>, known: KnownSecrets | undefined): unknown {
  if (isEmptyValue(value)) return Array.isArray(value) ? [] : typeof value === "object" && value !== null ? {} : value;
  // The formats inside are reported too, so `kinds` says what kind of credential it was.
  if (typeof value === "string") for (const finding of findSecrets(value, known)) kinds.add(finding.kind);
  kinds.add("secret-field");
  return redactionMarker;
}

/**
 * Redacts a JSON-like value deeply and returns a **new** value; the input is never changed (the
 * handler runs with the real one). Secret-named keys at any depth get `"[REDACTED]"` as their value,
 * every other string is redacted as text, and keys are redacted as text too. Keys such as
 * `__proto__` are kept as ordinary own keys.
 *
 * @example
 * redactValue({ apiKey: "abc", max_tokens: 1024, url: "https://x.dev/?token=t0k3n" }).value;
 * // { apiKey: "[REDACTED]", max_tokens: 1024, url: "https://x.dev/?token=[REDACTED]" }
 */
export function redactValue(value: unknown): RedactedValue {
  return redactValueWith(value, undefined);
}

function redactValueWith(value: unknown, known: KnownSecrets | undefined): RedactedValue {
  const kinds = new Set<SecretKind>();
  const result = redactNode(value, kinds, new Set(), known);
  return { value: result, redacted: kinds.size > 0, kinds: sortedKinds(kinds) };
}

/**
 * Redacts a tool call's argument text. JSON is parsed, redacted as a value and serialized again
 * with `JSON.stringify` (key order kept); text without secrets is returned exactly as it was, so
 * its formatting survives. Text that is not JSON (a model's malformed arguments) is redacted as
 * text.
 *
 * @example
 * redactJsonText('{"path": "a.txt", "password": "hunter2"}').text;
 * // '{"path":"a.txt","password":"[REDACTED]"}'
 */
export function redactJsonText(text: string): RedactedText {
  return redactJsonTextWith(text, undefined);
}

function redactJsonTextWith(text: string, known: KnownSecrets | undefined): RedactedText {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return redactTextWith(text, known);
  }
  const result = redactValueWith(parsed, known);
  return result.redacted ? { text: JSON.stringify(result.value), redacted: true, kinds: result.kinds } : { text, redacted: false, kinds: [] };
}

/**
 * Whether `value` holds a secret: exactly when `redactValue(value)` would change it. This is what
 * marks a call `argumentsRedacted` and its group unsafe for native replay.
 *
 * @example
 * containsSecret({ headers: { Authorization: "Bearer abc" } }); // true
 * containsSecret({ tokens_used: 3 }); // false
 */
export function containsSecret(value: unknown): boolean {
  return redactValue(value).redacted;
}

/**
 * The detector with values the host knows to be secret (a provider key, a deploy token): they
 * are redacted wherever they appear, matched literally, besides everything the detector finds
 * by itself. Every function is the module function of the same name with those values added.
 */
export interface SecretRedactor {
  redactText(text: string): RedactedText;
  redactValue(value: unknown): RedactedValue;
  redactJsonText(text: string): RedactedText;
  containsSecret(value: unknown): boolean;
  findSecrets(text: string): SecretFinding[];
}

/**
 * Makes a redactor that also redacts `secrets`, literal values of at least 8 characters (their
 * JSON-escaped and URL-encoded forms too). `createRuntime({ secrets })` makes one for everything
 * the runtime logs; `turnlog run` registers the provider key it reads.
 *
 * @example
 * const redactor = createSecretRedactor({ secrets: [process.env.LLM_AUTH ?? ""].filter(Boolean) });
 * redactor.redactText(`the key is ${process.env.LLM_AUTH}`).text; // "the key is [REDACTED]"
 */
export function createSecretRedactor(options: { secrets?: readonly string[] } = {}): SecretRedactor {
  const values = options.secrets ?? [];
  if (!Array.isArray(values)) throw new TypeError("secrets is an array of strings");
  const known = values.length === 0 ? undefined : new KnownSecrets(values);
  return {
    redactText: (text) => redactTextWith(text, known),
    redactValue: (value) => redactValueWith(value, known),
    redactJsonText: (text) => redactJsonTextWith(text, known),
    containsSecret: (value) => redactValueWith(value, known).redacted,
    findSecrets: (text) => findSecrets(text, known),
  };
}

/** The redactor without host secrets: what the module functions use. */
export const defaultSecretRedactor: SecretRedactor = createSecretRedactor();
