/**
 * Invariants of the secret detector (docs/policy.md#secrets): a secret planted anywhere in a JSON value, at
 * any depth, in any of the forms the detector knows, never survives redaction and always makes
 * `containsSecret` true; values made only of look-alikes come out unchanged; redaction is
 * idempotent; and no input, however odd, makes it throw.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { containsSecret, createSecretRedactor, findSecrets, redactJsonText, redactText, redactTextReference, redactValue } from "../src/policy/secrets/secret-detector.js";
import { KnownSecrets } from "../src/policy/secrets/secret-patterns.js";
import type { SecretKind } from "../src/policy/secrets/secret-detector.js";
import { exampleSecrets, nonSecretTexts, nonSecretValues } from "../test/support/secret-examples.js";

/** A secret and the text it sits in (`text` contains `raw`), or the object key that holds it. */
interface Planted {
  kind: SecretKind;
  raw: string;
  text: string;
  /** For `secret-field`: the key whose value is `raw` in a JSON value. */
  field?: string;
}

const upper = "ABCDEFGHIJKLMNOPQRSTUVWXYZ";
const lower = "abcdefghijklmnopqrstuvwxyz";
const digits = "0123456789";
const alphanumeric = upper + lower + digits;
const base64url = `${alphanumeric}_-`;

function chars(alphabet: string, minLength: number, maxLength: number): fc.Arbitrary<string> {
  return fc.string({ unit: fc.constantFrom(...alphabet), minLength, maxLength });
}

/** Random upper/lower case, so names and schemes are matched case-insensitively. */
function anyCase(word: string): fc.Arbitrary<string> {
  return fc.array(fc.boolean(), { minLength: word.length, maxLength: word.length }).map((flags) =>
    [...word].map((char, index) => (flags[index] === true ? char.toUpperCase() : char.toLowerCase())).join(""),
  );
}

/** Secret values of the contextual kinds: random, ending in a digit so they never read as a name. */
const secretValue = fc.tuple(chars(`${alphanumeric}_-`, 12, 40), fc.constantFrom(...digits)).map(([body, digit]) => `${body}${digit}`);

const plantedFormat: fc.Arbitrary<Planted> = fc.oneof(
  fc
    .tuple(fc.constantFrom("", "proj-", "svcacct-"), chars(`${alphanumeric}_-`, 20, 150))
    .map(([prefix, body]) => ({ kind: "openai-key" as const, raw: `sk-${prefix}${body}Q7` })),
  chars(`${alphanumeric}_-`, 80, 95).map((body) => ({ kind: "anthropic-key" as const, raw: `sk-ant-api03-${body}AA` })),
  fc.oneof(
    fc.tuple(fc.constantFrom("ghp_", "gho_", "ghu_", "ghs_", "ghr_"), chars(alphanumeric, 36, 36)).map(([prefix, body]) => `${prefix}${body}`),
    chars(`${alphanumeric}_`, 82, 82).map((body) => `github_pat_${body}`),
  ).map((raw) => ({ kind: "github-token" as const, raw })),
  fc
    .tuple(fc.constantFrom("xoxb", "xoxp", "xoxa", "xoxr", "xoxs"), chars(digits, 10, 13), chars(digits, 10, 13), chars(alphanumeric, 24, 32))
    .map(([prefix, team, user, secret]) => ({ kind: "slack-token" as const, raw: `${prefix}-${team}-${user}-${secret}` })),
  fc
    .tuple(fc.constantFrom("AKIA", "ASIA"), chars(upper + digits, 16, 16))
    .map(([prefix, body]) => ({ kind: "aws-access-key-id" as const, raw: `${prefix}${body}` })),
  chars(base64url, 35, 35).map((body) => ({ kind: "google-api-key" as const, raw: `AIza${body}` })),
  fc
    .tuple(fc.constantFrom("RSA ", "EC ", "OPENSSH ", "ENCRYPTED ", "DSA ", ""), fc.array(chars(`${alphanumeric}+/`, 16, 64), { minLength: 1, maxLength: 6 }))
    .map(([type, lines]) => ({
      kind: "private-key" as const,
      raw: [`-----BEGIN ${type}PRIVATE KEY-----`, ...lines, `-----END ${type}PRIVATE KEY-----`].join("\n"),
    })),
  fc
    .tuple(chars(base64url, 8, 40), chars(base64url, 2, 80), chars(base64url, 0, 43))
    .map(([header, payload, signature]) => ({ kind: "jwt" as const, raw: `eyJ${header}.${payload}.${signature}` })),
  // Issue 12's formats.
  fc
    .tuple(fc.constantFrom("sk_live_", "sk_test_", "rk_live_", "rk_test_"), chars(alphanumeric, 20, 40), fc.constantFrom(...digits))
    .map(([prefix, body, digit]) => ({ kind: "stripe-key" as const, raw: `${prefix}${body}${digit}` })),
  fc.tuple(chars(`${alphanumeric}_-`, 19, 19), fc.constantFrom(...digits)).map(([body, digit]) => ({ kind: "gitlab-token" as const, raw: `glpat-${body}${digit}` })),
  fc.tuple(chars(lower, 16, 16), chars(upper, 18, 18)).map(([small, big]) => ({ kind: "huggingface-token" as const, raw: `hf_${small}${big}` })),
  fc.tuple(chars(base64url, 22, 22), chars(base64url, 43, 43)).map(([id, secret]) => ({ kind: "sendgrid-key" as const, raw: `SG.${id}.${secret}` })),
  chars("0123456789abcdef", 32, 32).map((body) => ({ kind: "twilio-key" as const, raw: `SK${body}` })),
  chars(alphanumeric, 36, 36).map((body) => ({ kind: "npm-token" as const, raw: `npm_${body}` })),
).map((planted) => ({ ...planted, text: planted.raw }));

const plantedInContext: fc.Arbitrary<Planted> = fc.oneof(
  fc
    .tuple(
      fc.constantFrom("Authorization", "authorization", "AUTHORIZATION", "Proxy-Authorization"),
      fc.oneof(anyCase("bearer"), anyCase("basic"), anyCase("token")),
      fc.tuple(chars(`${alphanumeric}._~+/-`, 8, 60), fc.constantFrom("", "=", "==")).map(([body, padding]) => `${body}${padding}`),
      fc.constantFrom("header", "curl", "json"),
    )
    .map(([label, scheme, raw, form]) => {
      const header = `${label}: ${scheme} ${raw}`;
      const text = form === "curl" ? `curl -H '${header}' https://api.example.com` : form === "json" ? `{"${label}": "${scheme} ${raw}"}` : header;
      return { kind: "bearer-token" as const, raw, text };
    }),
  fc
    .tuple(fc.constantFrom("https", "postgres", "redis", "git+ssh"), chars(lower, 0, 8), chars(`${alphanumeric}._~-`, 12, 30))
    .map(([scheme, user, raw]) => ({ kind: "url-credentials" as const, raw, text: `${scheme}://${user}:${raw}@host.example.com:5432/path?page=2` })),
  fc
    .tuple(
      fc.constantFrom("token", "access_token", "api_key", "apikey", "key", "password", "client_secret", "signature", "sig").chain(anyCase),
      secretValue,
      fc.constantFrom("?", "?page=2&", "?a=b&amp;"),
      fc.constantFrom("", "&page=2", "#section"),
    )
    .map(([name, raw, before, after]) => ({ kind: "secret-query-param" as const, raw, text: `https://api.example.com/v1/items${before}${name}=${raw}${after}` })),
  fc
    .tuple(
      chars(upper, 1, 8),
      fc.constantFrom("_KEY", "_TOKEN", "_SECRET", "_PASSWORD", "_API_KEY"),
      secretValue,
      fc.constantFrom("", "export "),
      fc.constantFrom("", '"', "'"),
    )
    .map(([prefix, suffix, raw, exported, quote]) => ({ kind: "secret-assignment" as const, raw, text: `${exported}${prefix}${suffix}=${quote}${raw}${quote}` })),
  fc
    .tuple(fc.constantFrom("password", "apiKey", "client_secret", "accessToken", "private_key", "credentials", "token", "x-api-key"), secretValue, fc.constantFrom('"', "'"))
    .map(([field, raw, quote]) => ({ kind: "secret-field" as const, raw, field, text: `{${quote}${field}${quote}: ${quote}${raw}${quote}}` })),
);

const planted = fc.oneof(plantedFormat, plantedInContext);

/** Every string in a JSON value, keys included. */
function stringsOf(value: unknown): string[] {
  if (typeof value === "string") return [value];
  if (Array.isArray(value)) return value.flatMap(stringsOf);
  if (typeof value === "object" && value !== null) return Object.entries(value).flatMap(([key, child]) => [key, ...stringsOf(child)]);
  return [];
}

function occurrences(haystack: string, needle: string): number {
  return haystack.split(needle).length - 1;
}

function withKey(target: Record<string, unknown>, key: string, value: unknown): Record<string, unknown> {
  const copy: Record<string, unknown> = {};
  for (const [existingKey, existing] of Object.entries(target)) Object.defineProperty(copy, existingKey, { value: existing, enumerable: true, writable: true, configurable: true });
  Object.defineProperty(copy, key, { value, enumerable: true, writable: true, configurable: true });
  return copy;
}

/** How a secret goes into a value: in a string, as a field's value, or as an object key. */
type Placement = { how: "text"; prefix: string; separator: string; suffix: string } | { how: "field" } | { how: "key" };

/** What a placement puts at the chosen spot, given what was there. */
function plantHere(existing: unknown, secret: Planted, placement: Placement): unknown {
  if (placement.how === "text") {
    const text = `${placement.prefix}${placement.separator}${secret.text}${placement.separator}${placement.suffix}`;
    return typeof existing === "string" ? `${existing}${placement.separator}${text}` : text;
  }
  const base = typeof existing === "object" && existing !== null && !Array.isArray(existing) ? (existing as Record<string, unknown>) : {};
  if (placement.how === "field" && secret.field !== undefined) return withKey(base, secret.field, secret.raw);
  return withKey(base, secret.text, existing ?? null);
}

/** Follows `path` into `value` (each step picks a child, or stops) and plants the secret there. */
function plant(value: unknown, path: readonly number[], secret: Planted, placement: Placement): unknown {
  const [step, ...rest] = path;
  if (step === undefined) return plantHere(value, secret, placement);
  if (Array.isArray(value)) {
    const index = step % (value.length + 1);
    const copy = [...(value as unknown[])];
    if (index === value.length) copy.push(plant(undefined, rest, secret, placement));
    else copy[index] = plant(copy[index], rest, secret, placement);
    return copy;
  }
  if (typeof value === "object" && value !== null) {
    const keys = Object.keys(value);
    const index = step % (keys.length + 1);
    const key = keys[index] ?? `slot${step}`;
    return withKey(value as Record<string, unknown>, key, plant((value as Record<string, unknown>)[key], rest, secret, placement));
  }
  return plantHere(value, secret, placement);
}

const noise = fc.string({ maxLength: 20 });
const placement: fc.Arbitrary<Placement> = fc.oneof(
  fc.record({ how: fc.constant("text" as const), prefix: noise, separator: fc.constantFrom(" ", "\n", "\t"), suffix: noise }),
  fc.record({ how: fc.constant("field" as const) }),
  fc.record({ how: fc.constant("key" as const) }),
);

const plantedValue = fc
  .tuple(fc.jsonValue({ maxDepth: 4 }), fc.array(fc.nat(), { maxLength: 6 }), planted, placement)
  .filter(([, , secret, where]) => where.how === "text" || (where.how === "field" ? secret.field !== undefined : secret.text === secret.raw))
  .map(([base, path, secret, where]) => ({ value: plant(base, path, secret, where), secret }));

describe("secret redaction (property)", () => {
  it("a planted secret is found where it sits: a finding covers all of it", () => {
    fc.assert(
      fc.property(planted, noise, noise, (secret, prefix, suffix) => {
        const text = `${prefix} ${secret.text}\n${suffix}`;
        const at = text.indexOf(secret.raw);
        const covering = findSecrets(text).filter((finding) => finding.start <= at && finding.end >= at + secret.raw.length);
        expect(covering).toHaveLength(1);
        expect(redactText(text).kinds).toContain(secret.kind);
      }),
      { numRuns: 500 },
    );
  });

  it("a secret planted at any depth never survives redaction, and containsSecret sees it", () => {
    fc.assert(
      fc.property(plantedValue, ({ value, secret }) => {
        fc.pre(occurrences(stringsOf(value).join("\u0000"), secret.raw) === 1);
        const result = redactValue(value);
        expect(stringsOf(result.value).join("\u0000")).not.toContain(secret.raw);
        expect(result.redacted).toBe(true);
        expect(result.kinds).toContain(secret.kind);
        expect(containsSecret(value)).toBe(true);
        const json = redactJsonText(JSON.stringify(value));
        expect(json.redacted).toBe(true);
        expect(stringsOf(JSON.parse(json.text)).join("\u0000")).not.toContain(secret.raw);
      }),
      { numRuns: 500 },
    );
  });

  const nonSecretKeys = ["tokens_used", "max_tokens", "keyboard", "path", "tokenizer", "token_count", "sortKey", "primaryKey", "key", "passwordPolicy", "password_hint", "name", "id", "page", "nextPageToken", "__proto__", "constructor"];
  const nonSecretLeaf = fc.oneof(fc.constantFrom(...nonSecretTexts), fc.integer(), fc.double({ noNaN: true, noDefaultInfinity: true }), fc.boolean(), fc.constant(null), fc.constantFrom(...nonSecretValues));
  const { value: nonSecretValue } = fc.letrec<{ value: unknown }>((tie) => ({
    value: fc.oneof(
      { depthSize: "small", withCrossShrink: true },
      nonSecretLeaf,
      fc.array(tie("value"), { maxLength: 4 }),
      fc.array(fc.tuple(fc.constantFrom(...nonSecretKeys), tie("value")), { maxLength: 4 }).map((entries) =>
        entries.reduce<Record<string, unknown>>((object, [key, child]) => withKey(object, key, child), {}),
      ),
    ),
  }));

  it("a value made only of look-alikes comes out unchanged", () => {
    fc.assert(
      fc.property(nonSecretValue, (value) => {
        const result = redactValue(value);
        expect(result).toEqual({ value, redacted: false, kinds: [] });
        expect(containsSecret(value)).toBe(false);
        const text = JSON.stringify(value);
        expect(redactJsonText(text).text).toBe(text);
      }),
      { numRuns: 300 },
    );
  });

  /** Pieces of every syntax the detector reads, to make text that nearly means something. */
  const fragments = [
    ...Object.values(exampleSecrets),
    "sk-", "sk-ant-", "ghp_", "AKIA", "AIza", "xoxb-", "eyJ", ".", "=", ":=", ":", '"', "'", '\\"', "`", "?", "&", "&amp;", ";", "@", "://",
    "https", "Authorization", "authorization: ", "Bearer ", "Basic ", "password", "PASSWORD", "_KEY", "_TOKEN", "token", "api_key", "apiKey",
    "-----BEGIN RSA PRIVATE KEY-----", "-----END RSA PRIVATE KEY-----", "[REDACTED]", "\n", " ", "\t", "--", "-", "$", "{", "}", "(", ")", "[", "]",
    "0123456789abcdef", "ABCDEFGHIJKLMNOP", "export ", "user", "\\", ",", "#", "/",
  ];
  const soup = fc.array(fc.constantFrom(...fragments), { maxLength: 40 }).map((parts) => parts.join(""));
  const anyText = fc.oneof(soup, fc.string(), fc.string({ unit: "binary" }), fc.string({ unit: "grapheme" }));
  const anyValue = fc.oneof(fc.jsonValue(), plantedValue.map(({ value }) => value), nonSecretValue, fc.array(soup), fc.dictionary(soup, soup));

  it("redaction is idempotent: redacting twice is redacting once", () => {
    fc.assert(
      fc.property(anyText, (text) => {
        const once = redactText(text).text;
        expect(redactText(once)).toEqual({ text: once, redacted: false, kinds: [] });
      }),
      { numRuns: 1000 },
    );
    fc.assert(
      fc.property(anyValue, (value) => {
        const once = redactValue(value).value;
        expect(redactValue(once)).toEqual({ value: once, redacted: false, kinds: [] });
        const jsonOnce = redactJsonText(JSON.stringify(value)).text;
        expect(redactJsonText(jsonOnce).text).toBe(jsonOnce);
      }),
      { numRuns: 500 },
    );
  });

  it("never throws, reports ordered, disjoint, in-bounds findings, and containsSecret agrees with redactValue", () => {
    fc.assert(
      fc.property(anyText, (text) => {
        let previousEnd = 0;
        for (const finding of findSecrets(text)) {
          expect(finding.start).toBeGreaterThanOrEqual(previousEnd);
          expect(finding.end).toBeGreaterThan(finding.start);
          expect(finding.end).toBeLessThanOrEqual(text.length);
          previousEnd = finding.end;
        }
        const result = redactText(text);
        expect(result.redacted).toBe(findSecrets(text).length > 0);
        expect(result.redacted).toBe(result.text !== text);
        redactJsonText(text);
        expect(containsSecret(text)).toBe(result.redacted);
      }),
      { numRuns: 1000 },
    );
    fc.assert(
      fc.property(anyValue, (value) => {
        const snapshot = JSON.stringify(value);
        const result = redactValue(value);
        expect(JSON.stringify(value)).toBe(snapshot);
        expect(containsSecret(value)).toBe(result.redacted);
        expect(result.redacted).toBe(JSON.stringify(result.value) !== snapshot);
      }),
      { numRuns: 500 },
    );
  });

  /** Values a host registers: some look like nothing, some contain what the rules look for, or the marker's pieces. */
  const knownValue = fc.oneof(
    chars(`${alphanumeric}.+*?()[]{}|^$\\-`, 8, 40),
    fc.constantFrom("sk_live_4eC39HqLyjWDarjtT1zdp7dc", "EDACTED]abc", "password=hunter2", "[REDACTED][REDACTED]x"),
  );
  const withKnown = fc.tuple(fc.array(knownValue, { minLength: 1, maxLength: 3 }), fc.array(fc.oneof(fc.constantFrom(...fragments), knownValue), { maxLength: 30 }));

  it("with host secrets too: redaction is idempotent, and its output holds no secret, known or found", () => {
    fc.assert(
      fc.property(withKnown, ([secrets, parts]) => {
        fc.pre(secrets.every((secret) => secret.length >= 8));
        const redactor = createSecretRedactor({ secrets });
        const text = parts.join("");
        const once = redactor.redactText(text);
        // Never grows a secret back: nothing in the output is a secret, so a second pass is a no-op.
        expect(redactor.findSecrets(once.text)).toEqual([]);
        expect(redactor.redactText(once.text)).toEqual({ text: once.text, redacted: false, kinds: [] });
        for (const secret of secrets) expect(once.text).not.toContain(secret);
        const value = { note: text, [text.slice(0, 12)]: parts };
        const valueOnce = redactor.redactValue(value).value;
        expect(redactor.redactValue(valueOnce)).toEqual({ value: valueOnce, redacted: false, kinds: [] });
        for (const secret of secrets) expect(JSON.stringify(valueOnce)).not.toContain(JSON.stringify(secret).slice(1, -1));
      }),
      { numRuns: 500 },
    );
  });

  it("redacting text that is already redacted changes nothing", () => {
    fc.assert(
      fc.property(fc.array(fc.constantFrom(...fragments, "[REDACTED]", "=[REDACTED]", '"[REDACTED]"', "Bearer [REDACTED]"), { maxLength: 30 }), (parts) => {
        const redacted = redactText(parts.join("")).text;
        expect(redactText(redacted).text).toBe(redacted);
        const json = redactJsonText(JSON.stringify({ text: parts.join("") })).text;
        expect(redactJsonText(json).text).toBe(json);
      }),
      { numRuns: 500 },
    );
  });
  it("the memo of clean short texts answers as a scan does: the same text and kinds, asked once or again", () => {
    const shortText = fc.array(fc.constantFrom(...fragments), { maxLength: 4 }).map((parts) => parts.join(""));
    fc.assert(
      fc.property(fc.array(knownValue, { maxLength: 2 }), fc.array(fc.oneof(shortText, fc.string({ maxLength: 140 })), { minLength: 1, maxLength: 20 }), (secrets, texts) => {
        fc.pre(secrets.every((secret) => secret.length >= 8));
        const redactor = createSecretRedactor({ secrets });
        const known = secrets.length === 0 ? undefined : new KnownSecrets(secrets);
        // Twice over, so that the second pass meets every clean text in the memo.
        for (const text of [...texts, ...texts]) {
          const reference = redactTextReference(text, known);
          expect(redactor.redactText(text)).toEqual(reference);
          if (known === undefined) expect(redactText(text)).toEqual(reference);
          // A value's strings go through the memo one by one: the same text inside a value is redacted alike.
          expect(redactor.redactValue([text]).value).toEqual([reference.text]);
        }
      }),
      { numRuns: 500 },
    );
  });
});
