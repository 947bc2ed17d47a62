/**
 * The text patterns of the secret detector (`secret-detector.ts`): each scanner reports the span
 * of a secret *value* in a string, overlapping spans are merged by the detector.
 *
 * The maintained rule set is gitleaks' (`vendored-secret-rules.ts`, data in `gitleaks-rules.json`;
 * docs/security.md, "Secret rules"). The scanners here are what it lacks: places and names
 * (`Authorization`, URL user-info, query parameters, `"apiKey":`, `DB_PASSWORD=`, read with the same
 * rules as the JSON-key redaction, so persistence redaction and native-replay safety never
 * disagree), credentials on command lines and in `.netrc`, PuTTY and Docker config files, the
 * entropy rule, and formats gitleaks does not have. Some formats are here too because their exact
 * value spans keep the structure (`?token=[REDACTED]&page=2`, `Bearer [REDACTED]`, a webhook's
 * host): where one of these and a gitleaks rule find the same secret, this span wins. The format
 * rules marked "secretlint" are that project's recommended preset (MIT,
 * https://github.com/secretlint/secretlint, version 11.7.1), adapted to report the value span.
 * When a format is added here, add it with its benign twin to
 * `test/policy/secrets/secret-detector.test.ts` and to the corpus
 * (`test/policy/secrets/credential-corpus.ts`).
 *
 * Every pattern is anchored with a look-behind at the start of its token, so a scan tries each
 * token once and stays linear on long input.
 */
import type { SecretFinding, SecretKind } from "./secret-detector.js";
import { isSecretFieldName, isSecretQueryParameterName, isSecretVariableName, nameWords } from "../../util/secret-names.js";
import { isKeyLikeExemptName, isKeyLikeValue, shannonEntropy } from "./secret-entropy.js";
import { scanEncodedSecrets, scanWrappedSecrets } from "./secret-boundaries.js";
import { scanVendoredRules } from "./vendored-secret-rules.js";
import { matchesOf, registerPrefilteredPatterns } from "./pattern-matches.js";
import { labelledValuePattern, nextLabelledValue } from "./labelled-values.js";
import { isBase64Code, longestBase64Run } from "./base64-runs.js";

/** The replacement text; a value equal to it is already redacted and never a finding again. */
export const redactionMarker = "[REDACTED]";

type Report = (kind: SecretKind, start: number, end: number) => void;

interface FormatRule {
  kind: SecretKind;
  pattern: RegExp;
  /** Extra checks a regular expression says badly (mixed characters). */
  accept?: (match: string) => boolean;
}

const hasDigit = (text: string): boolean => /[0-9]/.test(text);
const hasLetter = (text: string): boolean => /[A-Za-z]/.test(text);
function longestAlphanumericRun(text: string): number {
  let longest = 0;
  for (const run of matchesOf(text, /[A-Za-z0-9]+/g)) longest = Math.max(longest, run[0].length);
  return longest;
}

/** Provider keys and token formats that are secrets wherever they appear. */
const formatRules: readonly FormatRule[] = [
  {
    kind: "jwt",
    // header.payload.signature in base64url, the header a JSON object (`{"` → `eyJ`); five
    // segments for an encrypted JWE. The signature may be empty (`alg: none`).
    pattern:
      /(?<![A-Za-z0-9_-])eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{2,}\.[A-Za-z0-9_-]*(?:\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+)?(?![A-Za-z0-9_-])/g,
  },
  // A key glued to a word by `-` or `_` (`backup-sk-proj-…`, `old_ghp_…`, `bot_xoxb-…`) is still a
  // key: the look-behinds of the prefixed formats refuse only a letter or digit before the prefix
  // (`task-…`, `disk-…`), and AWS's only a capital or digit (`keyAKIA…`).
  { kind: "anthropic-key", pattern: /(?<![A-Za-z0-9])sk-ant-[A-Za-z0-9_-]{20,}/g, accept: hasDigit },
  {
    kind: "openai-key",
    // `sk-`, `sk-proj-`, `sk-svcacct-`…; a digit plus an upper-case letter or a long random run
    // tells a key from a kebab-case word that happens to start with `sk-`.
    pattern: /(?<![A-Za-z0-9])sk-(?!ant-)[A-Za-z0-9_-]{20,}/g,
    accept: (match) => hasDigit(match) && (/[A-Z]/.test(match) || longestAlphanumericRun(match) >= 16),
  },
  // secretlint: github (36 characters; shorter test tokens are kept as before).
  { kind: "github-token", pattern: /(?<![A-Za-z0-9])(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,})(?![A-Za-z0-9_])/g },
  // secretlint: slack (`xapp-` and `xoxo-` added to the earlier `xox[abprs]-`).
  { kind: "slack-token", pattern: /(?<![A-Za-z0-9])(?:xox[abposr]|xapp)-[A-Za-z0-9-]{10,}/g, accept: hasDigit },
  // secretlint: aws, the key-ID prefixes only (`AIDA`, `AROA`… are user and role IDs, printed by
  // every `aws iam` command, and no credential).
  { kind: "aws-access-key-id", pattern: /(?<![A-Z0-9])(?:AKIA|ASIA|A3T[A-Z0-9])[A-Z0-9]{16}(?![A-Za-z0-9])/g },
  { kind: "google-api-key", pattern: /(?<![A-Za-z0-9_-])AIza[A-Za-z0-9_-]{35}(?![A-Za-z0-9_-])/g },
  // gitleaks: stripe-access-token (`pk_` keys are publishable, no secret). Webhook signing secrets too.
  { kind: "stripe-key", pattern: /(?<![A-Za-z0-9_])(?:(?:sk|rk)_(?:live|test|prod)_[A-Za-z0-9]{16,}|whsec_[A-Za-z0-9]{24,})(?![A-Za-z0-9_])/g, accept: hasDigit },
  // gitleaks: gitlab-pat and the other GitLab token prefixes; a digit or capital tells a token from `glpat-example-…`.
  {
    kind: "gitlab-token",
    pattern: /(?<![A-Za-z0-9_-])gl(?:pat|dt|ptt|rt|soat|cbt|ft|imt|agent|oas)-[A-Za-z0-9_-]{20,}(?![A-Za-z0-9_-])/g,
    accept: (match) => /[0-9A-Z]/.test(match.slice(match.indexOf("-") + 1)),
  },
  // gitleaks: huggingface-access-token; mixed case tells it from `hf_hub_download`-like names.
  { kind: "huggingface-token", pattern: /(?<![A-Za-z0-9_])hf_[A-Za-z0-9]{30,}(?![A-Za-z0-9_])/g, accept: (match) => /[A-Z]/.test(match) && /[a-z]/.test(match.slice(3)) },
  // secretlint: sendgrid (`SG.` + 22 + `.` + 43 characters).
  { kind: "sendgrid-key", pattern: /(?<![A-Za-z0-9_.-])SG\.[A-Za-z0-9_-]{16,}\.[A-Za-z0-9_-]{16,}(?![A-Za-z0-9_-])/g },
  // gitleaks: twilio-api-key (`SK` + 32 hex). The account SID with its auth token: scanTwilio.
  { kind: "twilio-key", pattern: /(?<![A-Za-z0-9])SK[0-9a-fA-F]{32}(?![A-Za-z0-9])/g },
  // secretlint: npm, shopify, linear, 1password.
  { kind: "npm-token", pattern: /(?<![A-Za-z0-9_])npm_[A-Za-z0-9]{36}(?![A-Za-z0-9_])/g },
  { kind: "shopify-token", pattern: /(?<![A-Za-z0-9_])shp(?:pa|ca|at|ss)_[A-Za-z0-9]{32,64}(?![A-Za-z0-9_])/g },
  { kind: "linear-key", pattern: /(?<![A-Za-z0-9_])lin_api_[A-Za-z0-9_]{32,128}(?![A-Za-z0-9_])/g },
  { kind: "onepassword-token", pattern: /(?<![A-Za-z0-9_])ops_eyJ[A-Za-z0-9+/=]{100,1280}(?![A-Za-z0-9+/=])/g },
  // Formats gitleaks (at the vendored commit) and secretlint lack, or find only near a word: Groq `gsk_`, xAI `xai-`,
  // Replicate `r8_`, Google OAuth client secrets `GOCSPX-`, access tokens `ya29.` and refresh tokens
  // `1//0…`, Supabase `sbp_` and `sb_secret_`, Tencent Cloud SecretIds `AKID`, and a Telegram bot
  // token without the word "telegram" near it (gitleaks' rule needs that word).
  { kind: "provider-token", pattern: /(?<![A-Za-z0-9])gsk_[A-Za-z0-9]{48,60}(?![A-Za-z0-9])/g, accept: hasDigit },
  { kind: "provider-token", pattern: /(?<![A-Za-z0-9])xai-[A-Za-z0-9]{70,90}(?![A-Za-z0-9])/g, accept: hasDigit },
  { kind: "provider-token", pattern: /(?<![A-Za-z0-9])r8_[A-Za-z0-9]{37}(?![A-Za-z0-9])/g, accept: (match) => hasDigit(match.slice(3)) && /[A-Z]/.test(match) },
  { kind: "provider-token", pattern: /(?<![A-Za-z0-9])GOCSPX-[A-Za-z0-9_-]{28}(?![A-Za-z0-9_-])/g },
  { kind: "provider-token", pattern: /(?<![A-Za-z0-9])ya29\.[A-Za-z0-9_-]{30,}/g, accept: hasDigit },
  { kind: "provider-token", pattern: /(?<![A-Za-z0-9/:])1\/\/0[A-Za-z0-9_-]{40,}/g, accept: (match) => /[A-Z]/.test(match) && /[a-z]/.test(match) },
  { kind: "provider-token", pattern: /(?<![A-Za-z0-9])(?:sbp_[a-f0-9]{40}|sb_secret_[A-Za-z0-9_-]{20,})(?![A-Za-z0-9])/g, accept: hasDigit },
  { kind: "provider-token", pattern: /(?<![A-Za-z0-9])AKID[A-Za-z0-9]{32}(?![A-Za-z0-9])/g, accept: (match) => hasDigit(match.slice(4)) && /[a-z]/.test(match) },
  { kind: "provider-token", pattern: /(?<![A-Za-z0-9:])[0-9]{8,10}:AA[A-Za-z0-9_-]{33}(?![A-Za-z0-9_-])/g },
  // A Discord bot token (base64 of the bot's ID, a timestamp, an HMAC), a Figma personal access
  // token (and a Mapbox secret token, next), a Facebook user or app access token (gitleaks knows only page tokens, `EAAM`/`EAAC`), a
  // Twitter/X app bearer token (22 `A`s first; gitleaks needs the word "twitter" near it).
  {
    kind: "provider-token",
    pattern: /(?<![A-Za-z0-9_.-])[MN][A-Za-z0-9_-]{23,27}\.[A-Za-z0-9_-]{6}\.[A-Za-z0-9_-]{27,40}(?![A-Za-z0-9_.-])/g,
    accept: (match) => hasDigit(match) && /[a-z]/.test(match),
  },
  { kind: "provider-token", pattern: /(?<![A-Za-z0-9])figd_[A-Za-z0-9_-]{40,}/g, accept: hasDigit },
  // A Mapbox secret token (`sk.` + a JWT-like body; gitleaks has only the public `pk.` one).
  { kind: "provider-token", pattern: /(?<![A-Za-z0-9.])sk\.eyJ[A-Za-z0-9_-]{20,}\.[A-Za-z0-9_-]{20,}(?![A-Za-z0-9_-])/g },
  { kind: "provider-token", pattern: /(?<![A-Za-z0-9])EAA[BCDGIMU][A-Za-z0-9]{80,}/g, accept: (match) => hasDigit(match) && /[a-z]/.test(match) },
  { kind: "provider-token", pattern: /(?<![A-Za-z0-9])A{22}[A-Za-z0-9%]{60,}/g, accept: (match) => hasDigit(match) && /[a-z]/.test(match) },
];

/** Values that are a reference or a placeholder, not a secret: `$TOKEN`, `${DB_PASSWORD}`, `%KEY%`, `<your-key>`. */
function isReferenceOrPlaceholder(value: string): boolean {
  return /^(?:\$\{?[A-Za-z_][A-Za-z0-9_]*\}?|%[A-Za-z_][A-Za-z0-9_]*%|<[^<>]*>)$/.test(value);
}

/**
 * Whether a value has something to hide: not empty, not redacted already, not a reference or
 * placeholder.
 *
 * @example
 * isWorthRedacting("hunter2"); // true
 * isWorthRedacting("${DB_PASSWORD}"); // false
 */
export function isWorthRedacting(value: string): boolean {
  return value.trim().length > 0 && value !== redactionMarker && !isReferenceOrPlaceholder(value);
}

/**
 * Whether `index` starts a line, allowing indentation and a YAML list dash before it, or the `> `
 * and `< ` that mark request and response headers in `curl -v` output.
 */
function isAtLineStart(text: string, index: number): boolean {
  let cursor = index - 1;
  const skipBlanks = (): void => {
    while (cursor >= 0 && (text[cursor] === " " || text[cursor] === "\t")) cursor -= 1;
  };
  skipBlanks();
  if (cursor >= 0 && (text[cursor] === "-" || ((text[cursor] === ">" || text[cursor] === "<") && cursor + 1 < index))) {
    cursor -= 1;
    skipBlanks();
  }
  return cursor < 0 || text[cursor] === "\n" || text[cursor] === "\r";
}

/**
 * The run of characters that `pattern` (a sticky regular expression) matches at `index`. Sticky
 * matching reads only the run itself, never the rest of a long line, so a scan stays linear.
 */
function runAt(text: string, index: number, pattern: RegExp): string {
  pattern.lastIndex = index;
  return pattern.exec(text)?.[0] ?? "";
}

/** Up to the end of the line, or the quote that closes a `-H '…'` argument. */
const headerValueRun = /[^"'`\r\n]*/y;
/**
 * An `Authorization` value with an unknown scheme, whose parameters may be quoted
 * (`Digest username="bob", response="…"`): a quote ends it only when a blank or the line's end
 * follows, as after a `-H '…'` argument. Bounded, so that many labels on one long line do not each
 * read the rest of it; no such header is anywhere near this long.
 */
const headerParametersRun = /(?:[^"'`\r\n]|["'`](?=[^\s"'`])){0,4096}/y;
/** An authentication scheme and the blanks after it. */
const schemeRun = /[A-Za-z][A-Za-z0-9-]*[ \t]+/y;
/** A token68 credential (RFC 9110 §11.4). */
const token68Run = /[A-Za-z0-9._~+/-]+=*/y;
/** An unquoted value after a quoted name (`"password": 12345`). */
const jsonScalarRun = /[^\s,}\]]*/y;
/** An unquoted value: shell syntax, brackets and list separators end it. */
const unquotedValueRun = /[^\s"'`;&|<>()[\]{},]*/y;

/** A quote that opens a value at `index`: `"`, `'`, or the escaped `\"` of JSON inside a string. */
function openingQuote(text: string, index: number): string | undefined {
  const char = text[index];
  if (char === '"' || char === "'") return char;
  if (char === "\\" && (text[index + 1] === '"' || text[index + 1] === "'")) return text.slice(index, index + 2);
  return undefined;
}

/**
 * The content span of a quoted value whose opening quote ends at `start`. An unterminated quote
 * (truncated output) runs to the end of the line: redacting too much beats leaking.
 */
function quotedSpan(text: string, start: number, quote: string): { start: number; end: number } {
  for (let cursor = start; cursor < text.length; cursor += 1) {
    const char = text[cursor];
    if (char === "\n" || char === "\r") return { start, end: cursor };
    if (quote.length === 1) {
      if (char === "\\") cursor += 1;
      else if (char === quote) return { start, end: cursor };
    } else if (text.startsWith(quote, cursor) && text[cursor - 1] !== "\\") {
      return { start, end: cursor };
    }
  }
  return { start, end: text.length };
}

const pemBegin = /-----BEGIN[ A-Z0-9]*PRIVATE KEY(?: BLOCK)?-----/g;
const pemEnd = /-----END[ A-Z0-9]*PRIVATE KEY(?: BLOCK)?-----/g;
/** The key material of a block cut off before its END line: base64, headers, escaped newlines. */
const pemBodyRun = /[A-Za-z0-9+/=\s\\:,.-]*/y;

/**
 * Whole PEM private-key blocks, RSA/EC/DSA/OPENSSH/ENCRYPTED/PKCS#8/PGP alike, from BEGIN to END.
 * A block cut off before its END line (truncated output, a partial paste) is redacted as far as
 * its key material goes. The END search is remembered, so many BEGINs cost one pass, not one each.
 */
function scanPrivateKeys(text: string, report: Report): void {
  let nextEnd: { start: number; end: number } | null | undefined;
  pemBegin.lastIndex = 0;
  for (let begin = pemBegin.exec(text); begin !== null; begin = pemBegin.exec(text)) {
    const bodyStart = begin.index + begin[0].length;
    if (nextEnd !== null && (nextEnd === undefined || nextEnd.start < bodyStart)) {
      pemEnd.lastIndex = bodyStart;
      const end = pemEnd.exec(text);
      nextEnd = end === null ? null : { start: end.index, end: end.index + end[0].length };
    }
    const blockEnd = nextEnd === null ? bodyStart + runAt(text, bodyStart, pemBodyRun).length : nextEnd.end;
    report("private-key", begin.index, blockEnd);
    pemBegin.lastIndex = Math.max(blockEnd, pemBegin.lastIndex);
  }
}

/**
 * URLs and connection strings whose credential follows a fixed label: a Slack webhook's path
 * (secretlint: slack) and Discord's, an Azure connection string's `AccountKey=` or
 * `SharedAccessKey=`. Matched from the label, never with a look-behind at every position: that
 * costs more than all the other rules together on a long output.
 */
const labelledCredentials: readonly { kind: SecretKind; hint: RegExp; pattern: RegExp }[] = [
  {
    kind: "webhook-url",
    hint: /hooks\.slack\.com|\/api\/webhooks\//i,
    pattern: /https:\/\/(?:hooks\.slack\.com\/(?:services|workflows|triggers)|(?:ptb\.|canary\.)?discord(?:app)?\.com\/api\/webhooks)\/([A-Za-z0-9_/+-]{20,})/dgi,
  },
  { kind: "azure-key", hint: /(?:account|access)key=/i, pattern: /(?<![A-Za-z0-9])(?:AccountKey|SharedAccessKey)=([A-Za-z0-9+/]{20,}={0,2})/dgi },
];

function scanLabelledCredentials(text: string, report: Report): void {
  for (const rule of labelledCredentials) {
    if (!rule.hint.test(text)) continue;
    for (const match of matchesOf(text, rule.pattern)) {
      const indices = match.indices?.[1];
      if (indices !== undefined) report(rule.kind, indices[0], indices[1]);
    }
  }
}

/** Scans for provider keys and JWTs. */
function scanFormats(text: string, report: Report): void {
  for (const rule of formatRules) {
    for (const match of matchesOf(text, rule.pattern)) {
      if (rule.accept === undefined || rule.accept(match[0])) report(rule.kind, match.index, match.index + match[0].length);
    }
  }
}

/** Authentication schemes whose credential is one token68 word (RFC 9110 §11.4). */
const token68Schemes = new Set(["bearer", "basic", "token", "bot", "apikey", "api-key", "key", "sso-key", "jwt", "pat", "oauth2"]);

const authorizationLabel = /(?<![A-Za-z0-9_-])(?:proxy-)?authorization(?:\\?["'])?[ \t]*[:=][ \t]*/gi;
const unlabelledBearer = /(?<![A-Za-z0-9_-])bearer[ \t]+([A-Za-z0-9._~+/-]{16,}=*)(?![A-Za-z0-9._~+/=-])/dgi;

/**
 * `Authorization: Bearer <token>` (any case, as a header line, a curl `-H`, a JSON or dict entry):
 * the credential after the scheme, or the whole value when there is no scheme. Also a bare
 * `Bearer <token>` when the token looks like one (long, letters and digits), so that prose such
 * as "use a Bearer token" is left alone.
 */
function scanAuthorization(text: string, report: Report): void {
  for (const match of matchesOf(text, authorizationLabel)) {
    const valueStart = match.index + match[0].length;
    const quote = openingQuote(text, valueStart);
    const contentStart = valueStart + (quote?.length ?? 0);
    const scheme = runAt(text, contentStart, schemeRun);
    const schemeName = scheme.trimEnd().toLowerCase();
    const credentialStart = contentStart + scheme.length;
    let credential: string;
    if (scheme !== "" && token68Schemes.has(schemeName)) {
      credential = runAt(text, credentialStart, token68Run);
    } else {
      const contentEnd =
        quote !== undefined ? quotedSpan(text, contentStart, quote).end : contentStart + runAt(text, contentStart, headerParametersRun).length;
      const content = text.slice(credentialStart, contentEnd);
      // An unknown scheme (`Digest …`, `AWS4-HMAC-SHA256 …`) keeps its name; its parameters go.
      credential = scheme !== "" ? content.trimEnd() : (/^\S*/.exec(content)?.[0] ?? "");
      // A quoted parameter at the end (`response="…"`) takes its closing quote along.
      const next = text[credentialStart + credential.length];
      if (quote === undefined && next !== undefined && /["']/.test(next) && (credential.split(next).length - 1) % 2 === 1) credential += next;
      if (scheme === "" && token68Schemes.has(credential.toLowerCase())) continue;
    }
    // Three characters are no credential; they are a code fragment (`f"Bearer {token}"`).
    if (credential.length >= 4 && isWorthRedacting(credential)) {
      report("bearer-token", credentialStart, credentialStart + credential.length);
    }
  }
  for (const match of matchesOf(text, unlabelledBearer)) {
    const token = match[1];
    const indices = match.indices?.[1];
    if (token === undefined || indices === undefined) continue;
    if (hasDigit(token) && hasLetter(token)) report("bearer-token", indices[0], indices[1]);
  }
}

/**
 * User-info in a URL: `scheme://user:password@host`. The whole `user:password` is the finding,
 * because the user part is often the token itself (`https://x-access-token:…@`,
 * `https://TOKEN:x-oauth-basic@`). A URL with a user and no password (`https://user@host`,
 * `ssh://git@host`) carries no credential and is left alone.
 */
const urlUserInfo = /(?<![A-Za-z0-9+.-])[A-Za-z][A-Za-z0-9+.-]*:\/\/([^\s/?#"'`<>[\]\\]*)@/dg;

function scanUrlCredentials(text: string, report: Report): void {
  for (const match of matchesOf(text, urlUserInfo)) {
    const userInfo = match[1];
    const indices = match.indices?.[1];
    if (userInfo === undefined || indices === undefined) continue;
    const colon = userInfo.indexOf(":");
    if (colon < 0) continue;
    const password = userInfo.slice(colon + 1);
    if (isWorthRedacting(password)) report("url-credentials", indices[0], indices[1]);
  }
}

const queryParameter = /(?<=[?&#]|&amp;)([A-Za-z][A-Za-z0-9_.-]*)=([^&#;\s"'`<>]*)/dg;

/** `?token=…&page=2`: the value of a secret-named query parameter (also after `&amp;`, and in a fragment: `#access_token=…`). */
function scanQueryParameters(text: string, report: Report): void {
  for (const match of matchesOf(text, queryParameter)) {
    const [, name, value] = match;
    const indices = match.indices?.[2];
    if (name === undefined || value === undefined || indices === undefined) continue;
    if (isSecretQueryParameterName(name) && isWorthRedacting(value)) report("secret-query-param", indices[0], indices[1]);
  }
}


/** Literals that are no secret even under a secret name. */
const nonSecretLiterals = new Set(["null", "none", "nil", "undefined", "true", "false"]);

/**
 * Type names: `apiKey: string;` in a TypeScript interface or `api_key: str = ""` in a Python
 * dataclass is a declaration read from source code, not a YAML key with a secret value.
 */
const typeNames = new Set(["string", "number", "boolean", "bigint", "any", "unknown", "object", "str", "int", "float", "bool", "bytes", "String", "Optional", "Option", "SecretStr"]);

/**
 * Whether an unquoted value is a piece of code rather than a secret: a call or index
 * (`os.getenv(`, `os.environ[`), a member path (`process.env.OPENAI_API_KEY`, `self.api_key`), a
 * variable passed through (`api_key=api_key`), a shell expansion (`$VAR`, `${VAR}`, `$(cat …)`), a
 * literal, or a comparison or arrow (`token == x`).
 */
function looksLikeCode(value: string, next: string | undefined): boolean {
  if (next === "(" || next === "[" || value.startsWith("$")) return true;
  if (value.startsWith("=") || value.startsWith(">")) return true;
  if (nonSecretLiterals.has(value.toLowerCase())) return true;
  if (/^[A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)+$/.test(value)) return true;
  return /^[A-Za-z_$][\w$]*$/.test(value) && (isSecretVariableName(value) || nameWords(value).at(-1) === "key");
}

/**
 * A name followed by `=`, `:=` or `:` (`labelled-values.ts`): `DB_PASSWORD=…`, `export API_KEY="…"`,
 * `--password=…`, `"apiKey": "…"` (JSON inside a string, or cut-off JSON), `password: …` (YAML,
 * headers), `{ token: '…' }`.
 */
function scanLabelledValues(text: string, report: Report): void {
  for (let match = nextLabelledValue(text, 0); match !== undefined; match = nextLabelledValue(text, match.end)) {
    const { dashes, nameQuote, name, separator } = match;
    // `Authorization` values are the authorization scanner's, which knows about schemes.
    if (/^(?:proxy-)?authorization$/i.test(name)) continue;
    const nameStart = match.index + (dashes?.length ?? 0);
    const isColon = separator === ":";
    const isVariable = !isColon && dashes === undefined && nameQuote === undefined;
    if (!(isVariable ? isSecretVariableName(name) : isSecretFieldName(name))) {
      scanKeyLikeValue(text, match.end, name, isColon && nameQuote === undefined && !isAtLineStart(text, nameStart) && !isQuotedAt(text, nameStart), report);
      continue;
    }

    const valueStart = match.end;
    const quote = openingQuote(text, valueStart);
    let span: { start: number; end: number };
    if (quote !== undefined) {
      span = quotedSpan(text, valueStart + quote.length, quote);
    } else if (isColon) {
      // `name: value` unquoted only where it is a YAML key or a header: at a line start, or as the
      // whole of a quoted argument (`-H "X-Api-Key: …"`); elsewhere a colon is too common in prose.
      const insideQuotes = nameQuote === undefined && (text[nameStart - 1] === '"' || text[nameStart - 1] === "'");
      if (nameQuote === undefined && !insideQuotes && !isAtLineStart(text, nameStart)) continue;
      const firstWord = runAt(text, valueStart, unquotedValueRun);
      if (nameQuote === undefined && (typeNames.has(firstWord.replace(/\?$/, "")) || looksLikeCode(firstWord, text[valueStart + firstWord.length]))) continue;
      const trimmed = runAt(text, valueStart, nameQuote === undefined ? headerValueRun : jsonScalarRun).trimEnd();
      // YAML block scalars, anchors, nested mappings and flow collections are not the value itself.
      if (/^[|>&*{[]/.test(trimmed) || nonSecretLiterals.has(trimmed.toLowerCase())) continue;
      span = { start: valueStart, end: valueStart + trimmed.length };
    } else {
      const value = runAt(text, valueStart, unquotedValueRun);
      if (looksLikeCode(value, text[valueStart + value.length])) continue;
      span = { start: valueStart, end: valueStart + value.length };
    }
    if (isWorthRedacting(text.slice(span.start, span.end))) {
      report(isVariable ? "secret-assignment" : "secret-field", span.start, span.end);
    }
  }
}

/** Whether the name at `index` opens a quoted argument (`-H "X-Thing: …"`). */
function isQuotedAt(text: string, index: number): boolean {
  return text[index - 1] === '"' || text[index - 1] === "'";
}

/** One token after a label: quoted, or up to a blank, quote or shell punctuation. */
const keyLikeRun = /[A-Za-z0-9+/_.~-]*={0,2}/y;

/**
 * The entropy rule in text: the value after a label that is not a secret name (`X=`, `"x": "`,
 * a header at a line start) when it is one key-like token (`secret-entropy.ts`). `inProse` is a
 * `name: value` in running text, which is no assignment.
 */
function scanKeyLikeValue(text: string, valueStart: number, name: string, inProse: boolean, report: Report): void {
  if (inProse || isKeyLikeExemptName(name)) return;
  const quote = openingQuote(text, valueStart);
  const start = valueStart + (quote?.length ?? 0);
  const value = runAt(text, start, keyLikeRun);
  const next = text[start + value.length];
  // The token must be the whole value: `x=abc def` or `x=<path>/` is something else.
  const ends = quote !== undefined ? text.startsWith(quote, start + value.length) : next === undefined || /[\s,;&|)}\]]/.test(next);
  if (ends && isKeyLikeValue(value)) report("high-entropy", start, start + value.length);
}

/**
 * An AWS secret access key without its name: 40 characters of base64 standing alone, with upper
 * and lower case and digits, near-random (a git SHA is 40 hex characters, lower case; a path has
 * words), and not base64 of readable text.
 */
function scanUnlabelledAwsSecrets(text: string, report: Report): void {
  // A key is a whole run of exactly 40: a text whose longest run is shorter has none.
  if (longestBase64Run(text) < 40) return;
  // Maximal runs found by hand, each character read once: a regular expression for a bounded run
  // with look-arounds is retried at every position of every long word, the costliest rule of all.
  let runStart = -1;
  for (let index = 0; index <= text.length; index += 1) {
    if (index < text.length && isBase64Code(text.charCodeAt(index))) {
      if (runStart < 0) runStart = index;
      continue;
    }
    if (runStart < 0) continue;
    const start = runStart;
    runStart = -1;
    if (index - start !== 40) continue;
    const before = text[start - 1];
    const after = text[index];
    if (before !== undefined && /[=_.-]/.test(before)) continue;
    if (after !== undefined && (/[=_-]/.test(after) || (after === "." && /[A-Za-z0-9]/.test(text[index + 1] ?? "")))) continue;
    const value = text.slice(start, index);
    if (!/[A-Z]/.test(value) || !/[a-z]/.test(value) || !/[0-9]/.test(value)) continue;
    if (shannonEntropy(value) / Math.log2(40) < 0.8 || !isKeyLikeValue(value)) continue;
    report("aws-secret-access-key", start, index);
  }
}

/** A Twilio account SID, and on the same line, the 32-hex auth token that goes with it. */
const twilioAccountSid = /AC[0-9a-f]{32}(?![A-Za-z0-9])/g;
const twilioAuthToken = /(?<![A-Za-z0-9])[0-9a-f]{32}(?![A-Za-z0-9])/;

function scanTwilio(text: string, report: Report): void {
  for (const match of matchesOf(text, twilioAccountSid)) {
    if (/[A-Za-z0-9]/.test(text[match.index - 1] ?? "")) continue;
    const lineEnd = text.indexOf("\n", match.index);
    const after = text.slice(match.index + match[0].length, Math.min(lineEnd < 0 ? text.length : lineEnd, match.index + match[0].length + 120));
    const token = twilioAuthToken.exec(after);
    if (token === null) continue;
    const tokenStart = match.index + match[0].length + token.index;
    report("twilio-key", match.index, match.index + match[0].length);
    report("twilio-key", tokenStart, tokenStart + token[0].length);
  }
}

/** One shell word as a value: quoted, or up to a blank or shell punctuation. */
function shellWordSpan(text: string, start: number): { start: number; end: number } {
  const quote = text[start];
  if (quote === '"' || quote === "'") {
    const close = text.indexOf(quote, start + 1);
    const lineEnd = text.indexOf("\n", start);
    const end = close < 0 || (lineEnd >= 0 && lineEnd < close) ? (lineEnd < 0 ? text.length : lineEnd) : close;
    return { start: start + 1, end };
  }
  return { start, end: start + runAt(text, start, unquotedValueRun).length };
}

/** A command line, to the end of its simple command. */
const mysqlCommand = /(?<![A-Za-z0-9_.\/-])(?:mysql|mysqldump|mysqladmin|mysqlimport|mysqlcheck|mysqlshow|mysqlsh|mariadb(?:-dump|-admin)?)(?![A-Za-z0-9_.-])[^\n;|&]*/g;
const mysqlPassword = /(?<=\s)-p(?=[^\s])/g;
const curlCommand = /(?<![A-Za-z0-9_.\/-])curl(?![A-Za-z0-9_.-])[^\n;|&]*/g;
const curlUser = /(?<=\s)(?:-u|-U|--user|--proxy-user)(?:[ \t]+|=)?(?=[^\s-])/g;
/**
 * Commands whose `-p` is a password, glued or as the next word: `sshpass -p …`, and the registry
 * logins `docker login -p …`, `podman login -p …`, `helm registry login -p …`, `buildah login`.
 */
const passwordFlagCommand = /(?<![A-Za-z0-9_.\/-])(?:sshpass|(?:docker|podman|buildah|nerdctl|skopeo|oras)[ \t]+login|helm[ \t]+registry[ \t]+login)(?![A-Za-z0-9_.-])[^\n;|&]*/g;
const passwordFlag = /(?<=\s)-p(?:[ \t]+|(?=[^\s]))/g;
/** openssl's `-passin pass:…`, `-passout pass:…`, `-pass pass:…` (`env:`, `file:`, `fd:` and `stdin` name no secret). */
const opensslPassword = /(?<=\s)-pass(?:in|out)?[ \t]+(?:["']?)pass:/g;
/** `--password hunter2`: a flag with a secret name and its value as the next word. */
const separateFlagValue = /--([A-Za-z][A-Za-z0-9_-]*)[ \t]+(?=[^\s-])/g;

/**
 * Credentials passed on a command line: `mysql -p<password>` (glued to `-p`; `-p` alone asks),
 * `curl -u user:password` (the whole `user:password`, since the user is often the token itself),
 * and `--password hunter2`, `--token …`, `--cookie …` (a secret-named flag and the next word); a
 * flag whose name is not secret gets the entropy rule for its value.
 */
function scanCommandCredentials(text: string, report: Report): void {
  if (text.includes("login") || text.includes("sshpass")) {
    for (const command of matchesOf(text, passwordFlagCommand)) {
      for (const flag of matchesOf(command[0], passwordFlag)) {
        const span = shellWordSpan(text, command.index + flag.index + flag[0].length);
        const value = text.slice(span.start, span.end);
        if (isWorthRedacting(value) && !value.startsWith("-")) report("command-credential", span.start, span.end);
      }
    }
  }
  if (text.includes("pass:")) {
    for (const flag of matchesOf(text, opensslPassword)) {
      const valueStart = flag.index + flag[0].length;
      const quote = flag[0].includes('"') ? '"' : flag[0].includes("'") ? "'" : undefined;
      const span = quote !== undefined ? quotedSpan(text, valueStart, quote) : shellWordSpan(text, valueStart);
      if (isWorthRedacting(text.slice(span.start, span.end))) report("command-credential", span.start, span.end);
    }
  }
  if (text.includes("-p")) {
    for (const command of matchesOf(text, mysqlCommand)) {
      for (const flag of matchesOf(command[0], mysqlPassword)) {
        const span = shellWordSpan(text, command.index + flag.index + 2);
        if (isWorthRedacting(text.slice(span.start, span.end))) report("command-credential", span.start, span.end);
      }
    }
  }
  if (text.includes("curl")) {
    for (const command of matchesOf(text, curlCommand)) {
      for (const flag of matchesOf(command[0], curlUser)) {
        const span = shellWordSpan(text, command.index + flag.index + flag[0].length);
        const value = text.slice(span.start, span.end);
        if (value.includes(":") && isWorthRedacting(value)) report("command-credential", span.start, span.end);
      }
    }
  }
  if (text.includes("--")) {
    for (const flag of matchesOf(text, separateFlagValue)) {
      const name = flag[1];
      // A flag starts a word (after a blank or an opening quote): `a--b c` is no flag.
      if (name === undefined || !/^$|[\s"']/.test(text[flag.index - 1] ?? "")) continue;
      const valueStart = flag.index + flag[0].length;
      if (isSecretFieldName(name)) {
        const span = shellWordSpan(text, valueStart);
        const value = text.slice(span.start, span.end);
        if (isWorthRedacting(value) && !looksLikeCode(value, text[span.end])) report("command-credential", span.start, span.end);
      } else {
        scanKeyLikeValue(text, valueStart, name, false, report);
      }
    }
  }
}

/** A `.netrc` entry: `machine <host>` (or `default`) and its `login`, `password`, `account` tokens. */
const netrcEntry = /(?<![A-Za-z0-9_-])(?:machine[ \t]+\S+|default(?=\s+(?:login|password)\b))/g;
const netrcToken = /\s+(\S+)/y;

/**
 * `.netrc` lines (`machine api.example.com login bob password hunter2`, one line or several): the
 * value after `password` or `account` in the tokens that follow a `machine` or `default` entry, up
 * to the next entry. Prose with "password" in it has no `machine <host>` before it.
 */
function scanNetrc(text: string, report: Report): void {
  if (!text.includes("machine") && !text.includes("default")) return;
  for (const entry of matchesOf(text, netrcEntry)) {
    let cursor = entry.index + entry[0].length;
    // A netrc entry has at most login, password, account and macdef: eight tokens.
    for (let pair = 0; pair < 4; pair += 1) {
      netrcToken.lastIndex = cursor;
      const keyword = netrcToken.exec(text);
      if (keyword === null) break;
      const name = keyword[1]!;
      if (name !== "login" && name !== "password" && name !== "account") break;
      netrcToken.lastIndex = keyword.index + keyword[0].length;
      const value = netrcToken.exec(text);
      if (value === null) break;
      const valueEnd = value.index + value[0].length;
      if (name !== "login" && isWorthRedacting(value[1]!)) report("secret-field", valueEnd - value[1]!.length, valueEnd);
      cursor = valueEnd;
    }
  }
}

/** A PuTTY key file's private part: the base64 lines after `Private-Lines: N`, and its MAC. */
const puttyPrivateLines = /Private-Lines:[ \t]*(\d+)[ \t]*(?:\r?\n|\\n)/g;
const puttyMac = /Private-(?:MAC|Hash):[ \t]*([0-9a-fA-F]{20,})/dg;

function scanPuttyKeys(text: string, report: Report): void {
  if (!text.includes("Private-")) return;
  for (const match of matchesOf(text, puttyPrivateLines)) {
    const start = match.index + match[0].length;
    // Its N lines of base64, separated by newlines or, inside JSON, by `\n`.
    const body = new RegExp(`(?:[A-Za-z0-9+/=]+(?:\\r?\\n|\\\\n|$)){1,${Math.min(Number(match[1]), 200)}}`, "y");
    body.lastIndex = start;
    const lines = body.exec(text);
    if (lines !== null) report("private-key", start, start + lines[0].replace(/(?:\r?\n|\\n)$/, "").length);
  }
  for (const match of matchesOf(text, puttyMac)) {
    const indices = match.indices?.[1];
    if (indices !== undefined) report("private-key", indices[0], indices[1]);
  }
}

/**
 * A Docker config's `"auth": "<base64 of user:password>"` (`~/.docker/config.json`'s `auths`): the
 * value, when it decodes to `user:password`. `auth` alone is too common a name to be a secret.
 */
const dockerAuth = /(\\?)"auth\1"[ \t]*:[ \t]*\1"([A-Za-z0-9+/]{8,}={0,2})\1"/dg;

function scanDockerAuths(text: string, report: Report): void {
  if (!text.includes('"auth')) return;
  for (const match of matchesOf(text, dockerAuth)) {
    const indices = match.indices?.[2];
    if (indices === undefined) continue;
    const decoded = Buffer.from(match[2]!, "base64").toString("utf8");
    if (/^[^\s:]+:\S+$/.test(decoded)) report("encoded-secret", indices[0], indices[1]);
  }
}

/**
 * Values the host registered as secrets (`createRuntime({ secrets })`), matched literally — never
 * as a pattern — and also in the forms a value takes inside JSON text and URLs.
 */
export class KnownSecrets {
  readonly #forms: readonly string[];

  /** @param values the secret values; each must be a string of at least 8 characters. */
  constructor(values: readonly string[]) {
    const forms = new Set<string>();
    for (const value of values) {
      if (typeof value !== "string") throw new TypeError("a known secret is a string");
      if (value.length < KnownSecrets.minimumLength) throw new TypeError(`a known secret has at least ${KnownSecrets.minimumLength} characters: a shorter one would redact ordinary text`);
      forms.add(value);
      forms.add(JSON.stringify(value).slice(1, -1));
      forms.add(encodeURIComponent(value));
    }
    // Longest first, so a value that contains another is found whole.
    this.#forms = [...forms].sort((left, right) => right.length - left.length);
  }

  /** Shorter values would redact ordinary text: "ollama", "none", "dummy". */
  static readonly minimumLength = 8;

  get size(): number {
    return this.#forms.length;
  }

  /** Reports each occurrence of each form as a `known-secret` finding. */
  scan(text: string, report: Report): void {
    for (const form of this.#forms) {
      for (let index = text.indexOf(form); index >= 0; index = text.indexOf(form, index + 1)) report("known-secret", index, index + form.length);
    }
  }
}

/**
 * Every candidate finding in `text`, overlapping and unordered; `findSecrets` merges them.
 *
 * @example
 * scanForSecrets("OPENAI_API_KEY=sk-proj-…"); // an `openai-key` and a `secret-assignment`, same span
 */
export function scanForSecrets(text: string, known?: KnownSecrets): SecretFinding[] {
  const findings = scanLine(text);
  const report: Report = (kind, start, end) => {
    if (end > start) findings.push({ kind, start, end });
  };
  scanEncodedSecrets(text, scanLine, (start, end) => report("encoded-secret", start, end));
  scanWrappedSecrets(text, scanLineAndEncoded, (finding) => report(finding.kind, finding.start, finding.end));
  known?.scan(text, report);
  return findings;
}

/** Every rule that reads the text as it is. */
function scanLine(text: string): SecretFinding[] {
  const findings: SecretFinding[] = [];
  const report: Report = (kind, start, end) => {
    if (end > start) findings.push({ kind, start, end });
  };
  scanPrivateKeys(text, report);
  scanFormats(text, report);
  scanLabelledCredentials(text, report);
  scanAuthorization(text, report);
  scanUrlCredentials(text, report);
  scanQueryParameters(text, report);
  scanLabelledValues(text, report);
  scanCommandCredentials(text, report);
  scanTwilio(text, report);
  scanNetrc(text, report);
  scanPuttyKeys(text, report);
  scanDockerAuths(text, report);
  scanUnlabelledAwsSecrets(text, report);
  addVendoredFindings(text, findings);
  return findings;
}

/** What a wrapped key's joined lines are scanned with: a wrapped base64 blob is decoded too. */
function scanLineAndEncoded(text: string): SecretFinding[] {
  const findings = scanLine(text);
  scanEncodedSecrets(text, scanLine, (start, end) => findings.push({ kind: "encoded-secret", start, end }));
  return findings;
}

/**
 * gitleaks' findings (`vendored-secret-rules.ts`) where no hand-written rule found anything: where
 * one did, its span wins, because it keeps the structure as the detector always has (a Slack
 * webhook keeps `https://hooks.slack.com/services/`, `curl --user '…'` its quotes, `Bearer` its
 * scheme), while gitleaks' span is whatever its regular expression's group holds.
 */
function addVendoredFindings(text: string, findings: SecretFinding[]): void {
  const vendoredFindings = scanVendoredRules(text);
  if (vendoredFindings.length === 0) return;
  // The hand-written spans, merged and sorted, for a binary search per vendored finding.
  const covered: { start: number; end: number }[] = [];
  for (const finding of [...findings].sort((left, right) => left.start - right.start)) {
    const last = covered.at(-1);
    if (last !== undefined && finding.start <= last.end) last.end = Math.max(last.end, finding.end);
    else covered.push({ start: finding.start, end: finding.end });
  }
  for (const finding of vendoredFindings) {
    let low = 0;
    let high = covered.length;
    // The first covered span that ends after this finding starts.
    while (low < high) {
      const middle = (low + high) >> 1;
      if (covered[middle]!.end <= finding.start) low = middle + 1;
      else high = middle;
    }
    const next = covered[low];
    if (next !== undefined && next.start < finding.end) continue;
    findings.push({ kind: "gitleaks-rule", start: finding.start, end: finding.end });
  }
}

/**
 * Every pattern the rules above run with `matchesOf` over a text, for the test that the required-literal
 * prefilter finds what running each pattern finds (property-tests/secret-pattern-prefilter.test.ts).
 */
export const scannedPatterns: readonly RegExp[] = [
  /[A-Za-z0-9]+/g,
  ...formatRules.map((rule) => rule.pattern),
  ...labelledCredentials.map((rule) => rule.pattern),
  authorizationLabel,
  unlabelledBearer,
  urlUserInfo,
  queryParameter,
  labelledValuePattern,
  twilioAccountSid,
  passwordFlagCommand,
  passwordFlag,
  opensslPassword,
  mysqlCommand,
  mysqlPassword,
  curlCommand,
  curlUser,
  separateFlagValue,
  netrcEntry,
  puttyPrivateLines,
  puttyMac,
  dockerAuth,
];

registerPrefilteredPatterns(scannedPatterns);
