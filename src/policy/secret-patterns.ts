/**
 * The text patterns of the secret detector (`secret-detector.ts`): each scanner reports the span
 * of a secret *value* in a string, overlapping spans are merged by the detector.
 *
 * Hand-written on purpose. The maintained scanners (secretlint, gitleaks rule sets) are
 * asynchronous, load rule packages and configuration, and report findings for lint output; this
 * detector must be synchronous (it runs inside the pure planning path), must give exact value spans
 * so redaction keeps the structure (`?token=[REDACTED]&page=2`, `Bearer [REDACTED]`), and must
 * understand names (`"apiKey":`, `DB_PASSWORD=`) with the same rules as the JSON-key redaction, so
 * that persistence redaction and native-replay safety can never disagree.
 *
 * Every pattern is anchored with a look-behind at the start of its token, so a scan tries each
 * token once and stays linear on long input.
 */
import type { SecretFinding, SecretKind } from "./secret-detector.js";
import { isSecretFieldName, isSecretQueryParameterName, isSecretVariableName, nameWords } from "../util/secret-names.js";

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
  for (const run of text.matchAll(/[A-Za-z0-9]+/g)) longest = Math.max(longest, run[0].length);
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
  { kind: "anthropic-key", pattern: /(?<![A-Za-z0-9_-])sk-ant-[A-Za-z0-9_-]{20,}/g, accept: hasDigit },
  {
    kind: "openai-key",
    // `sk-`, `sk-proj-`, `sk-svcacct-`…; a digit plus an upper-case letter or a long random run
    // tells a key from a kebab-case word that happens to start with `sk-`.
    pattern: /(?<![A-Za-z0-9_-])sk-(?!ant-)[A-Za-z0-9_-]{20,}/g,
    accept: (match) => hasDigit(match) && (/[A-Z]/.test(match) || longestAlphanumericRun(match) >= 16),
  },
  { kind: "github-token", pattern: /(?<![A-Za-z0-9_])(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,})(?![A-Za-z0-9_])/g },
  { kind: "slack-token", pattern: /(?<![A-Za-z0-9_-])xox[abprs]-[A-Za-z0-9-]{10,}/g, accept: hasDigit },
  { kind: "aws-access-key-id", pattern: /(?<![A-Za-z0-9])(?:AKIA|ASIA)[A-Z0-9]{16}(?![A-Za-z0-9])/g },
  { kind: "google-api-key", pattern: /(?<![A-Za-z0-9_-])AIza[A-Za-z0-9_-]{35}(?![A-Za-z0-9_-])/g },
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

/** Whether `index` starts a line, allowing indentation and a YAML list dash before it. */
function isAtLineStart(text: string, index: number): boolean {
  let cursor = index - 1;
  const skipBlanks = (): void => {
    while (cursor >= 0 && (text[cursor] === " " || text[cursor] === "\t")) cursor -= 1;
  };
  skipBlanks();
  if (cursor >= 0 && text[cursor] === "-") {
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

/** Scans for provider keys and JWTs. */
function scanFormats(text: string, report: Report): void {
  for (const rule of formatRules) {
    for (const match of text.matchAll(rule.pattern)) {
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
  for (const match of text.matchAll(authorizationLabel)) {
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
  for (const match of text.matchAll(unlabelledBearer)) {
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
  for (const match of text.matchAll(urlUserInfo)) {
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
  for (const match of text.matchAll(queryParameter)) {
    const [, name, value] = match;
    const indices = match.indices?.[2];
    if (name === undefined || value === undefined || indices === undefined) continue;
    if (isSecretQueryParameterName(name) && isWorthRedacting(value)) report("secret-query-param", indices[0], indices[1]);
  }
}

/**
 * A name followed by `=`, `:=` or `:`: `DB_PASSWORD=…`, `export API_KEY="…"`, `--password=…`,
 * `"apiKey": "…"` (JSON inside a string, or cut-off JSON), `password: …` (YAML, headers),
 * `{ token: '…' }`. The look-behind keeps the name whole and leaves `?name=` to the query scanner.
 */
const labelledValue = /(?<![A-Za-z0-9_.$\\?&/@-]|&amp;)(-{1,2})?(\\?["'])?([A-Za-z_][A-Za-z0-9_.-]*)\2[ \t]*(:=|=|:)[ \t]*/dg;

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

function scanLabelledValues(text: string, report: Report): void {
  for (const match of text.matchAll(labelledValue)) {
    const [whole, dashes, nameQuote, name, separator] = match;
    if (name === undefined || separator === undefined) continue;
    // `Authorization` values are the authorization scanner's, which knows about schemes.
    if (/^(?:proxy-)?authorization$/i.test(name)) continue;
    const nameStart = match.index + (dashes?.length ?? 0);
    const isColon = separator === ":";
    const isVariable = !isColon && dashes === undefined && nameQuote === undefined;
    if (!(isVariable ? isSecretVariableName(name) : isSecretFieldName(name))) continue;

    const valueStart = match.index + whole.length;
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

/**
 * Every candidate finding in `text`, overlapping and unordered; `findSecrets` merges them.
 *
 * @example
 * scanForSecrets("OPENAI_API_KEY=sk-proj-…"); // an `openai-key` and a `secret-assignment`, same span
 */
export function scanForSecrets(text: string): SecretFinding[] {
  const findings: SecretFinding[] = [];
  const report: Report = (kind, start, end) => {
    if (end > start) findings.push({ kind, start, end });
  };
  scanPrivateKeys(text, report);
  scanFormats(text, report);
  scanAuthorization(text, report);
  scanUrlCredentials(text, report);
  scanQueryParameters(text, report);
  scanLabelledValues(text, report);
  return findings;
}
