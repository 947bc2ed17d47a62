import { describe, expect, it } from "vitest";
import { containsSecret, createSecretRedactor, findSecrets, redactJsonText, redactText, redactValue } from "../../../src/policy/secrets/secret-detector.js";
import { isSecretFieldName } from "../../../src/util/secret-names.js";
import { redactionMarker } from "../../../src/policy/secrets/secret-patterns.js";
import type { SecretKind } from "../../../src/policy/secrets/secret-detector.js";
import {
  detectedSecretKinds,
  exampleSecretMarker,
  exampleSecretTexts,
  exampleSecrets,
  hexadecimalKinds,
  nonSecretTexts,
  nonSecretValues,
} from "../../support/secret-examples.js";

/** The text of each finding, for assertions that read like the input. */
function foundValues(text: string): Array<[SecretKind, string]> {
  return findSecrets(text).map((finding) => [finding.kind, text.slice(finding.start, finding.end)]);
}

/** Asserts that `text` redacts to `expected`, reporting `kind`. */
function expectRedaction(text: string, expected: string, kind: SecretKind): void {
  const result = redactText(text);
  expect(result.text).toBe(expected);
  expect(result.redacted).toBe(true);
  expect(result.kinds).toContain(kind);
}

describe("secret formats (docs/policy.md#secrets)", () => {
  it("finds OpenAI keys: sk-… and sk-proj-…", () => {
    const legacy = "sk-TESTONLY0a1b2c3d4e5f6g7h8i9j0k1l2m3n4o5p6q7r8s9t";
    expect(foundValues(`key: ${legacy}`)).toEqual([["openai-key", legacy]]);
    expectRedaction(`OpenAI(api_key="${exampleSecrets["openai-key"]}")`, 'OpenAI(api_key="[REDACTED]")', "openai-key");
    expectRedaction(`use ${exampleSecrets["openai-key"]} here`, "use [REDACTED] here", "openai-key");
  });

  it("finds Anthropic keys: sk-ant-…, as Anthropic and not OpenAI", () => {
    expect(foundValues(`x-api-key ${exampleSecrets["anthropic-key"]}`)).toEqual([["anthropic-key", exampleSecrets["anthropic-key"]]]);
    expectRedaction(`client = Anthropic(${exampleSecrets["anthropic-key"]})`, "client = Anthropic([REDACTED])", "anthropic-key");
  });

  it("finds GitHub tokens: ghp_, gho_, ghu_, ghs_, ghr_ and github_pat_", () => {
    const body = "TESTONLY0a1b2C3d4E5f6G7h8I9j0K1l2M3n";
    for (const prefix of ["ghp_", "gho_", "ghu_", "ghs_", "ghr_"]) {
      expect(foundValues(`token ${prefix}${body}.`)).toEqual([["github-token", `${prefix}${body}`]]);
    }
    const fineGrained = "github_pat_11TESTONLY0a1b2C3d4E5f6G_7h8I9j0K1l2M3n4O5p6Q7r8S9t0U1v2W3x4Y5z6A7b8C9d0E1f2G3h4I5j6K7";
    expectRedaction(`GH=${fineGrained}`, "GH=[REDACTED]", "github-token");
  });

  it("finds Slack tokens: xoxb-, xoxp-, xoxa-, xoxr-, xoxs-", () => {
    for (const prefix of ["xoxb", "xoxp", "xoxa", "xoxr", "xoxs"]) {
      const token = `${prefix}-000000000000-0000000000000-TESTONLY0a1b2c3d`;
      expect(foundValues(`slack ${token}`)).toEqual([["slack-token", token]]);
    }
    expectRedaction(`SLACK=${exampleSecrets["slack-token"]}`, "SLACK=[REDACTED]", "slack-token");
  });

  it("finds AWS access key IDs: AKIA… and ASIA… with 16 upper-case characters", () => {
    expectRedaction("aws_access_key_id = AKIATESTONLY00000000\n", "aws_access_key_id = [REDACTED]\n", "aws-access-key-id");
    expect(foundValues("id ASIATESTONLY00000000")).toEqual([["aws-access-key-id", "ASIATESTONLY00000000"]]);
    // One character too many or too few is another word, not a key ID.
    expect(findSecrets("AKIATESTONLY000000000 AKIATESTONLY0000000 AKIAtestonly00000000")).toEqual([]);
  });

  it("finds Google API keys: AIza + 35 characters", () => {
    expect(exampleSecrets["google-api-key"]).toHaveLength(39);
    expectRedaction(`https://maps.example.com/js?callback=init&k=${exampleSecrets["google-api-key"]}`, "https://maps.example.com/js?callback=init&k=[REDACTED]", "google-api-key");
  });

  it("finds whole PEM private key blocks: RSA, EC, OPENSSH, ENCRYPTED, PKCS#8, PGP", () => {
    for (const type of ["RSA ", "EC ", "OPENSSH ", "ENCRYPTED ", "DSA ", ""]) {
      const block = `-----BEGIN ${type}PRIVATE KEY-----\nMIIBTESTONLY0a1b2c3d4e5f6\nAbCd+/==\n-----END ${type}PRIVATE KEY-----`;
      expectRedaction(`before\n${block}\nafter`, "before\n[REDACTED]\nafter", "private-key");
    }
    const pgp = "-----BEGIN PGP PRIVATE KEY BLOCK-----\n\nlQOYBTESTONLY\n=AbCd\n-----END PGP PRIVATE KEY BLOCK-----";
    expectRedaction(pgp, "[REDACTED]", "private-key");
    // Inside a JSON string, with escaped newlines.
    expectRedaction(JSON.stringify({ key: exampleSecrets["private-key"] }), '{"key":"[REDACTED]"}', "private-key");
    // Cut off before its END line: redacted as far as the key material goes.
    expectRedaction("-----BEGIN PRIVATE KEY-----\nMIIETESTONLY0a1b\nAbCd", "[REDACTED]", "private-key");
    // A public key or a certificate is not a secret.
    expect(findSecrets("-----BEGIN PUBLIC KEY-----\nMIIBIjAN\n-----END PUBLIC KEY-----")).toEqual([]);
  });

  it("finds JWTs: three base64url segments, the header starting eyJ", () => {
    expect(foundValues(`id_token ${exampleSecrets.jwt}`)).toEqual([["jwt", exampleSecrets.jwt]]);
    expectRedaction(`session=${exampleSecrets.jwt}; theme=dark`, "session=[REDACTED]; theme=dark", "jwt");
    // In a Cookie header the whole value goes: every cookie in it may be a session.
    expectRedaction(`Cookie: session=${exampleSecrets.jwt}; theme=dark`, "Cookie: [REDACTED]", "secret-field");
    // base64 of JSON with no dots is not a JWT.
    expect(findSecrets("eyJhIjoxfQ== eyJhbGciOiJIUzI1NiJ9")).toEqual([]);
  });

  it("finds Authorization credentials: Bearer and Basic, any case, keeping the scheme", () => {
    const token = exampleSecrets["bearer-token"];
    expectRedaction(`Authorization: Bearer ${token}`, "Authorization: Bearer [REDACTED]", "bearer-token");
    expectRedaction(`authorization: bearer ${token}\n`, "authorization: bearer [REDACTED]\n", "bearer-token");
    expectRedaction(`AUTHORIZATION: Basic ZGVwbG95OlRFU1RPTkxZLWJhc2ljLXBhc3N3b3Jk`, "AUTHORIZATION: Basic [REDACTED]", "bearer-token");
    expectRedaction(exampleSecretTexts["bearer-token"], "curl -H 'Authorization: Bearer [REDACTED]' https://api.example.com/v1/me", "bearer-token");
    expectRedaction(`{"Authorization": "Token ${token}"}`, '{"Authorization": "Token [REDACTED]"}', "bearer-token");
    expectRedaction(`Proxy-Authorization: ${token}`, "Proxy-Authorization: [REDACTED]", "bearer-token");
    // An unknown scheme keeps its name and loses its parameters.
    expectRedaction(
      `curl -H 'Authorization: Digest username="bob", response="6629fae49393a05397450978507c4ef1"' https://x`,
      "curl -H 'Authorization: Digest [REDACTED]' https://x",
      "bearer-token",
    );
    // A bare Bearer followed by something token-like.
    expectRedaction(`send Bearer ${token} with it`, "send Bearer [REDACTED] with it", "bearer-token");
  });

  it("finds credentials in URL user-info: https://user:pass@host → https://[REDACTED]@host", () => {
    expectRedaction(exampleSecretTexts["url-credentials"], "git clone https://[REDACTED]@git.example.com/team/repo.git", "url-credentials");
    expectRedaction("DATABASE_URL is postgres://app:p%40ss:w0rd@db.internal:5432/app", "DATABASE_URL is postgres://[REDACTED]@db.internal:5432/app", "url-credentials");
    expectRedaction("redis://:hunter2@cache:6379", "redis://[REDACTED]@cache:6379", "url-credentials");
    // A user without a password is no credential.
    expect(findSecrets("https://user@example.com ssh://git@github.com/x")).toEqual([]);
  });

  it("finds secret-named query parameters, keeping the rest of the URL", () => {
    expectRedaction(exampleSecretTexts["secret-query-param"], "https://api.example.com/v1/items?token=[REDACTED]&page=2", "secret-query-param");
    for (const name of ["token", "access_token", "api_key", "apikey", "key", "password", "client_secret", "signature", "sig", "ACCESS_TOKEN", "apiKey", "X-Amz-Signature"]) {
      expect(redactText(`https://x.example/p?a=1&${name}=v4lue-123#top`).text).toBe(`https://x.example/p?a=1&${name}=[REDACTED]#top`);
    }
    expectRedaction("<a href=\"/cb?state=xyz&amp;code_verifier=v&amp;token=abc123\">", '<a href="/cb?state=xyz&amp;code_verifier=v&amp;token=[REDACTED]">', "secret-query-param");
    expect(findSecrets("https://x.example/?page_token=abc&max_tokens=5&keyword=x&q=token")).toEqual([]);
  });

  it("finds secret-named JSON fields, in values and in text", () => {
    expect(redactValue({ user: "deploy", password: exampleSecrets["secret-field"] })).toEqual({
      value: { user: "deploy", password: redactionMarker },
      redacted: true,
      kinds: ["secret-field"],
    });
    expectRedaction(exampleSecretTexts["secret-field"], '{"user": "deploy", "password": "[REDACTED]"}', "secret-field");
    // JSON inside a string, escaped; Python dicts; YAML; headers; flags.
    expectRedaction('{\\"apiKey\\": \\"abc123\\"}', '{\\"apiKey\\": \\"[REDACTED]\\"}', "secret-field");
    expectRedaction("{'client_secret': 'abc123'}", "{'client_secret': '[REDACTED]'}", "secret-field");
    expectRedaction("db:\n  host: localhost\n  password: hunter2\n", "db:\n  host: localhost\n  password: [REDACTED]\n", "secret-field");
    expectRedaction('curl -H "X-Api-Key: abc123" https://x', 'curl -H "X-Api-Key: [REDACTED]" https://x', "secret-field");
    expectRedaction("mysql --password=hunter2 --host=db", "mysql --password=[REDACTED] --host=db", "secret-field");
    expectRedaction('new Client({ accessToken: "abc123" })', 'new Client({ accessToken: "[REDACTED]" })', "secret-field");
    // Cut-off JSON (truncated tool output) still hides the value.
    expectRedaction('{"token": "abc123', '{"token": "[REDACTED]', "secret-field");
  });

  it("finds NAME=value assignments whose name ends in _KEY, _TOKEN, _SECRET, _PASSWORD", () => {
    expectRedaction(exampleSecretTexts["secret-assignment"], "DATABASE_PASSWORD=[REDACTED]", "secret-assignment");
    expectRedaction("export STRIPE_SECRET=abc123\nexport GH_TOKEN='abc 123'\n", "export STRIPE_SECRET=[REDACTED]\nexport GH_TOKEN='[REDACTED]'\n", "secret-assignment");
    expectRedaction('SIGNING_KEY="abc123" node server.js', 'SIGNING_KEY="[REDACTED]" node server.js', "secret-assignment");
    expectRedaction("PASSWORD=hunter2 SECRET=abc TOKEN=xyz", "PASSWORD=[REDACTED] SECRET=[REDACTED] TOKEN=[REDACTED]", "secret-assignment");
    expectRedaction("db_password = hunter2", "db_password = [REDACTED]", "secret-assignment");
    expectRedaction("API_KEY := abc123", "API_KEY := [REDACTED]", "secret-assignment");
    expectRedaction("//registry.npmjs.org/:_authToken=npm_abc123", "//registry.npmjs.org/:_authToken=[REDACTED]", "secret-assignment");
    // References and code are not secrets.
    // `KEY=` alone is not a secret name; `SORT_KEY=` is, as docs/policy.md#secrets has it.
    expect(redactText("key=value sort_key=name").text).toBe("key=value sort_key=[REDACTED]");
    for (const code of ["API_KEY=$OPENAI_API_KEY", "TOKEN=${GH_TOKEN}", "PASSWORD=$(cat /run/secrets/db)", "api_key = os.getenv('KEY')", "token = process.env.TOKEN", "OpenAI(api_key=api_key)", "if token == expected:", "API_KEY="]) {
      expect(findSecrets(code), code).toEqual([]);
    }
  });

  it("reads source code as code: declarations and expressions under secret names are not secrets", () => {
    const source = [
      "interface Config {",
      "  apiKey: string;",
      "  token?: string;",
      "}",
      "const client = new OpenAI({",
      "  apiKey: process.env.OPENAI_API_KEY,",
      "  accessToken: getToken(),",
      "  password,",
      "});",
      "class Settings:",
      '    api_key: str = ""',
      "    password: Optional[str] = None",
      "token = request.headers.get('token')",
    ].join("\n");
    expect(findSecrets(source)).toEqual([]);
    // A literal in the same code is a secret all the same.
    expect(redactText('  apiKey: "abc123",').text).toBe('  apiKey: "[REDACTED]",');
  });

  it("has one example per kind, each found as that kind", () => {
    for (const kind of detectedSecretKinds) {
      const text = exampleSecretTexts[kind];
      expect(text).toContain(exampleSecrets[kind]);
      if (!hexadecimalKinds.has(kind)) expect(exampleSecrets[kind]).toContain(exampleSecretMarker);
      const result = redactText(text);
      expect(result.kinds, kind).toContain(kind);
      expect(result.text, kind).not.toContain(exampleSecrets[kind]);
      expect(result.text, kind).not.toContain(exampleSecretMarker);
    }
  });
});

/** Each rule of issue 12's list: `[name, dangerous text, its redaction, kind, benign twins]`. */
const issue12Rules: [string, string, string, SecretKind, string[]][] = [
  [
    "Stripe secret and restricted keys, live and test",
    "stripe.api_key = 'sk_live_4eC39HqLyjWDarjtT1zdp7dc'; rk = rk_test_51HxYzAbCdEf0123456789",
    "stripe.api_key = '[REDACTED]'; rk = [REDACTED]",
    "stripe-key",
    ["pk_live_4eC39HqLyjWDarjtT1zdp7dc is the publishable key", "sk_live_mode is on", "mask_test_results_only"],
  ],
  ["GitLab personal access tokens", "git clone https://oauth2@gitlab.com -c http.extraHeader=glpat-Ab3dEfGh1jKlMnOpQrSt", "git clone https://oauth2@gitlab.com -c http.extraHeader=[REDACTED]", "gitlab-token", ["glpat-xxxxxxxxxxxxxxxxxxxx", "the glpat- prefix"]],
  ["Hugging Face tokens", "HF=hf_AbCdEfGhIjKlMnOpQrStUvWxYzAbCdEfGh", "HF=[REDACTED]", "huggingface-token", ["from huggingface_hub import hf_hub_download", "hf_transfer_enabled_for_all_downloads"]],
  [
    "SendGrid keys",
    "sg = SendGridAPIClient('SG.abcdefghijklmnopqrstuv.abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQ')",
    "sg = SendGridAPIClient('[REDACTED]')",
    "sendgrid-key",
    ["SG.example.com", "see SG.section.two"],
  ],
  [
    "a Twilio account SID with its auth token, and API keys",
    "client = Client('AC0123456789abcdef0123456789abcdef', 'fedcba9876543210fedcba9876543210') # SK0123456789abcdef0123456789abcdef",
    "client = Client('[REDACTED]', '[REDACTED]') # [REDACTED]",
    "twilio-key",
    ["account AC0123456789abcdef0123456789abcdef has 3 numbers", "md5 0123456789abcdef0123456789abcdef"],
  ],
  [
    "Slack webhook URLs",
    "curl -X POST https://hooks.slack.com/services/T01ABCDEF/B01ABCDEF/abcdefghijklmnopqrstuvwx",
    "curl -X POST https://hooks.slack.com/services/[REDACTED]",
    "webhook-url",
    ["see https://api.slack.com/messaging/webhooks", "https://hooks.slack.com/"],
  ],
  [
    "Azure connection strings",
    "DefaultEndpointsProtocol=https;AccountName=a;AccountKey=Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==;EndpointSuffix=core.windows.net",
    "DefaultEndpointsProtocol=https;AccountName=a;AccountKey=[REDACTED];EndpointSuffix=core.windows.net",
    "azure-key",
    ["UseDevelopmentStorage=true", "AccountName=devstoreaccount1;AccountKey=<key>"],
  ],
  ["mysql -p<password>", "mysql -u root -phunter2 app < dump.sql", "mysql -u root -p[REDACTED] app < dump.sql", "command-credential", ["mysql -u root -p app", "mysql -P 3306 -h db", "npm run build -p"]],
  ["--password with its value as the next word", "mysql --password hunter2 app", "mysql --password [REDACTED] app", "command-credential", ["mysql --password-file ./pw.txt", "tool --token-limit 100", "mysql --password $DB_PASSWORD"]],
  ["curl -u user:pass", "curl -u admin:s3cret https://x.example.com && curl --user 'bob:pw d' https://y", "curl -u [REDACTED] https://x.example.com && curl --user '[REDACTED]' https://y", "command-credential", ["curl -u admin https://x.example.com", "ps -u root"]],
  ["Cookie and Set-Cookie headers", "curl -H 'Cookie: sid=abc123; theme=dark' https://x\n< Set-Cookie: sid=xyz789; Path=/; HttpOnly", "curl -H 'Cookie: [REDACTED]' https://x\n< Set-Cookie: [REDACTED]", "secret-field", ["cookie_consent: true", "the cookie jar is empty"]],
  [
    "an AWS secret access key without its name",
    "aws configure set aws_access_key_id AKIAIOSFODNN7EXAMPLE; echo wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    "aws configure set aws_access_key_id [REDACTED]; echo [REDACTED]",
    "aws-secret-access-key",
    ["commit 3f786850e387550fdab836ed7e6dc881de23001b", "aGVsbG8gd29ybGQgdGhpcyBpcyBzb21lIHRleHQh", "src/history/token-estimator.test.ts"],
  ],
  [
    "high-entropy values in assignment and header context",
    'X_SESSION=Q6psUXPD+wWrYWpE6xmKVdBW4G70hGyEoJrM6CBF\nX-Upstream-Auth: Q6psUXPDwWrYWpE6xmKVdBW4G70h\n{"value": "q8Zr3Xv5Lp1Wn7Ks2Dj9Tb4"}\ndeploy --signing q8Zr3Xv5Lp1Wn7Ks2Dj9Tb4',
    'X_SESSION=[REDACTED]\nX-Upstream-Auth: [REDACTED]\n{"value": "[REDACTED]"}\ndeploy --signing [REDACTED]',
    "high-entropy",
    [
      '{"id": "call_9a8b7c6d5e4f3a2b1c0d9e8f", "callId": "toolu_01A09q90qw90lq917835lq9", "fingerprint": "8cf5f101e6554264239d9d4b4b4bf0a4f391c79a7a1934f5c7000a7b0ea1f644"}',
      "hash=3f786850e387550fdab836ed7e6dc881de23001b\nuuid=9f89416f-5441-4430-9d9f-a419b1a132d8",
      "TEST=token-estimator.test.ts\nFILE=src/history/token-estimator.test.ts",
      "the value: Q6psUXPDwWrYWpE6xmKVdBW4G70h in prose",
      "ENCODED=aGVsbG8gd29ybGQgdGhpcyBpcyBzb21lIHRleHQh",
      '{"nextPageToken": "CgwIARoIMTIzNDU2Nzg5MGFiY2RlZg", "integrity": "sha512-Q6psUXPDwWrYWpE6xmKVdBW4G70h"}',
      "git log --oneline\n3f78685 fix: keep results paired\n8cf5f10 docs: policy",
      "NAME=my_very_long_identifier_name",
    ],
  ],
];

describe("issue 12's formats, each with its benign twins", () => {
  it.each(issue12Rules)("%s", (_name, dangerous, redacted, kind, twins) => {
    expectRedaction(dangerous, redacted, kind);
    for (const twin of twins) expect(redactText(twin).text, twin).toBe(twin);
  });

  it("redacts a key-like value under any plain JSON key, but not under an identifier's or a digest's", () => {
    const value = { session: "Q6psUXPDwWrYWpE6xmKVdBW4G70h", id: "Q6psUXPDwWrYWpE6xmKVdBW4G70h", tool_call_id: "Q6psUXPDwWrYWpE6xmKVdBW4G70h", hash: "Q6psUXPDwWrYWpE6xmKVdBW4G70h", path: "src/token-estimator.test.ts" };
    expect(redactValue(value)).toEqual({ value: { ...value, session: "[REDACTED]" }, redacted: true, kinds: ["high-entropy"] });
  });
});

describe("createSecretRedactor: values the host knows", () => {
  const key = "opaque.value+with(regex)*chars?";
  const redactor = createSecretRedactor({ secrets: [key] });

  it("redacts them literally wherever they appear, also JSON-escaped and URL-encoded", () => {
    expect(redactor.redactText(`the model says ${key}!`).text).toBe("the model says [REDACTED]!");
    expect(redactor.redactJsonText(JSON.stringify({ note: `key=${key}` })).text).toBe('{"note":"key=[REDACTED]"}');
    expect(redactor.redactText(`GET /x?q=${encodeURIComponent(key)}`).text).toBe("GET /x?q=[REDACTED]");
    expect(redactor.containsSecret({ deep: [key] })).toBe(true);
    expect(redactor.findSecrets(key)).toEqual([{ kind: "known-secret", start: 0, end: key.length }]);
  });

  it("matches literally, never as a pattern, and leaves other text alone", () => {
    // As a regular expression the value would match "opaque.valueeee…"; literally it does not.
    expect(redactor.redactText("opaqueXvalue+with(regex)*chars?").text).toBe("opaqueXvalue+with(regex)*chars?");
    expect(redactor.redactText("an ordinary line").redacted).toBe(false);
    // The module functions know no host values.
    expect(redactText(`the model says ${key}`).redacted).toBe(false);
  });

  it("refuses values too short to redact safely, and non-strings", () => {
    expect(() => createSecretRedactor({ secrets: ["ollama"] })).toThrow(TypeError);
    expect(() => createSecretRedactor({ secrets: [42 as unknown as string] })).toThrow(TypeError);
  });
});

describe("findSecrets", () => {
  it("reports value spans in order, without overlaps, naming a shared span by its most specific kind", () => {
    const text = `OPENAI_API_KEY=${exampleSecrets["openai-key"]}\nAuthorization: Bearer ${exampleSecrets.jwt}`;
    const findings = findSecrets(text);
    expect(findings.map((finding) => finding.kind)).toEqual(["openai-key", "jwt"]);
    expect(text.slice(findings[0]?.start, findings[0]?.end)).toBe(exampleSecrets["openai-key"]);
    for (const [index, finding] of findings.entries()) {
      expect(finding.end).toBeGreaterThan(finding.start);
      expect(finding.start).toBeGreaterThanOrEqual(findings[index - 1]?.end ?? 0);
    }
  });

  it("merges overlapping findings into one covering them, named by the longest", () => {
    const text = `https://deploy:${exampleSecrets["openai-key"]}@example.com`;
    expect(foundValues(text)).toEqual([["url-credentials", `deploy:${exampleSecrets["openai-key"]}`]]);
  });

  it("handles long adversarial input and never overflows the stack (its time per character is measured in bench/redaction.ts)", () => {
    const inputs = [
      "a".repeat(1_000_000),
      "-----BEGIN PRIVATE KEY-----!".repeat(20_000),
      "Authorization: x ".repeat(50_000),
      `sk-${"a-".repeat(300_000)}1`,
      '"password": 1 '.repeat(50_000),
      "password: abc\n".repeat(50_000),
      "https://a:b@c ".repeat(50_000),
      "?token=a&".repeat(50_000),
      `${"eyJ".padEnd(100, "a")}.`.repeat(10_000),
    ];
    for (const text of inputs) expect(() => redactText(text)).not.toThrow();
    // And it still answers: a long run of one letter is left as it is, a long run of fields is redacted.
    expect(redactText(inputs[0]!)).toEqual({ text: inputs[0], redacted: false, kinds: [] });
    const fields = redactText(inputs[5]!);
    expect(fields.redacted).toBe(true);
    expect(fields.kinds).toEqual(["secret-field"]);
    expect(fields.text).not.toContain("abc");
  });
});

describe("non-secrets survive untouched", () => {
  it.each(nonSecretTexts.map((text) => [text]))("%s", (text) => {
    expect(findSecrets(text)).toEqual([]);
    expect(redactText(text)).toEqual({ text, redacted: false, kinds: [] });
    expect(redactJsonText(text).text).toBe(text);
  });

  it.each(nonSecretValues.map((value) => [JSON.stringify(value), value]))("%s", (_name, value) => {
    expect(redactValue(value)).toEqual({ value, redacted: false, kinds: [] });
    expect(containsSecret(value)).toBe(false);
  });

  it("decides names by their head word: counts, policies and hints are not secrets", () => {
    for (const name of ["apiKey", "api_key", "APIKEY", "x-api-key", "token", "accessToken", "access_token", "refreshToken", "password", "passwd", "secret", "client_secret", "clientSecret", "credential", "credentials", "authorization", "private_key", "privateKey", "AWS_SECRET_ACCESS_KEY", "db_pass", "password_confirmation"]) {
      expect(isSecretFieldName(name), name).toBe(true);
    }
    for (const name of ["tokens_used", "max_tokens", "tokenizer", "token_count", "token_type", "keyboard", "key", "sortKey", "primaryKey", "publicKey", "passwordPolicy", "password_hint", "nextPageToken", "eos_token", "signature", "pass", "__proto__"]) {
      expect(isSecretFieldName(name), name).toBe(false);
    }
  });
});

describe("redactValue", () => {
  const nested = {
    model: "gpt-test",
    max_tokens: 1024,
    messages: [
      { role: "user", content: `my key is ${exampleSecrets["openai-key"]}` },
      { role: "tool", content: [{ type: "text", text: exampleSecretTexts["secret-query-param"] }] },
    ],
    config: { deep: { deeper: { deepest: { clientSecret: { nested: "object" }, pin: 1234, db_password: 4321, retries: 3 } } } },
  };

  it("redacts secret-named keys and secret text at any depth, in arrays too, keeping everything else", () => {
    const result = redactValue(nested);
    expect(result.value).toEqual({
      model: "gpt-test",
      max_tokens: 1024,
      messages: [
        { role: "user", content: "my key is [REDACTED]" },
        { role: "tool", content: [{ type: "text", text: "https://api.example.com/v1/items?token=[REDACTED]&page=2" }] },
      ],
      config: { deep: { deeper: { deepest: { clientSecret: "[REDACTED]", pin: 1234, db_password: "[REDACTED]", retries: 3 } } } },
    });
    expect(result.kinds).toEqual(["openai-key", "secret-query-param", "secret-field"]);
    expect(redactValue([[["a", { token: "t" }]], exampleSecrets["github-token"]]).value).toEqual([[["a", { token: "[REDACTED]" }]], "[REDACTED]"]);
  });

  it("replaces a secret field's value whatever its type, but keeps null, booleans and empty values", () => {
    const result = redactValue({ password: 123456, token: ["a"], secret: { a: 1 }, apiKey: null, credentials: true, private_key: "", accessToken: {} });
    expect(result.value).toEqual({ password: "[REDACTED]", token: "[REDACTED]", secret: "[REDACTED]", apiKey: null, credentials: true, private_key: "", accessToken: {} });
    expect(redactValue({ apiKey: exampleSecrets["openai-key"] }).kinds).toEqual(["openai-key", "secret-field"]);
  });

  it("returns a new value and never changes its input", () => {
    const input = structuredClone(nested);
    const frozen = structuredClone(nested);
    const result = redactValue(input);
    expect(input).toEqual(frozen);
    expect(result.value).not.toBe(input);
    const unchanged = redactValue({ a: [1, { b: "c" }] });
    expect(unchanged.value).toEqual({ a: [1, { b: "c" }] });
    expect(unchanged.redacted).toBe(false);
  });

  it("treats __proto__, constructor and prototype as ordinary keys", () => {
    const input = JSON.parse('{"__proto__": {"polluted": true, "token": "abc"}, "constructor": {"prototype": {"password": "x"}}, "prototype": 1}') as unknown;
    const result = redactValue(input);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect(Object.prototype).not.toHaveProperty("polluted");
    const value = result.value as Record<string, unknown>;
    expect(Object.getPrototypeOf(value)).toBe(Object.prototype);
    expect(Object.keys(value)).toEqual(["__proto__", "constructor", "prototype"]);
    expect(Object.getOwnPropertyDescriptor(value, "__proto__")?.value).toEqual({ polluted: true, token: "[REDACTED]" });
    expect(JSON.stringify(value)).toBe('{"__proto__":{"polluted":true,"token":"[REDACTED]"},"constructor":{"prototype":{"password":"[REDACTED]"}},"prototype":1}');
  });

  it("redacts secrets used as keys, without two keys overwriting each other", () => {
    const result = redactValue({ [exampleSecrets["github-token"]]: 1, [exampleSecrets["openai-key"]]: 2, "[REDACTED]": 3 });
    expect(result.value).toEqual({ "[REDACTED]": 1, "[REDACTED] #2": 2, "[REDACTED] #3": 3 });
    expect(JSON.stringify(result.value)).not.toContain(exampleSecretMarker);
  });

  it("survives values JSON would not hold: cycles, dates, undefined", () => {
    const cyclic: Record<string, unknown> = { token: "abc", when: new Date(0), missing: undefined };
    cyclic.self = cyclic;
    expect(redactValue(cyclic).value).toEqual({ token: "[REDACTED]", when: "1970-01-01T00:00:00.000Z", missing: undefined, self: "[Circular]" });
  });
});

describe("redactJsonText", () => {
  it("redacts JSON as a value and serializes it again, keeping key order", () => {
    expect(redactJsonText('{"path": "a.txt", "password": "hunter2", "nested": {"url": "https://u:p@h/x"}}')).toEqual({
      text: '{"path":"a.txt","password":"[REDACTED]","nested":{"url":"https://[REDACTED]@h/x"}}',
      redacted: true,
      kinds: ["url-credentials", "secret-field"],
    });
    // Escapes in the JSON text do not hide a key from the detector.
    expect(redactJsonText('{"cmd": "\\u0073k-proj-TESTONLY0a1b2C3d4E5f6G7h8I9j0"}').text).toBe('{"cmd":"[REDACTED]"}');
  });

  it("returns JSON without secrets exactly as it was, formatting included", () => {
    const text = '{\n  "path": "a.txt",\n  "max_tokens": 10\n}';
    expect(redactJsonText(text)).toEqual({ text, redacted: false, kinds: [] });
  });

  it("falls back to text redaction for arguments that are not JSON", () => {
    expect(redactJsonText('{"cmd": "echo", "token": "abc123"')).toEqual({ text: '{"cmd": "echo", "token": "[REDACTED]"', redacted: true, kinds: ["secret-field"] });
    expect(redactJsonText(`run with ${exampleSecrets["aws-access-key-id"]}`).text).toBe("run with [REDACTED]");
  });
});

describe("consistency", () => {
  const secretCases: unknown[] = [
    ...Object.values(exampleSecretTexts),
    // Formats are secrets alone; the other kinds are secrets because of their context.
    ...detectedSecretKinds.slice(0, detectedSecretKinds.indexOf("url-credentials")).map((kind) => exampleSecrets[kind]),
    ...detectedSecretKinds.map((kind) => ({ args: { list: [exampleSecretTexts[kind]] } })),
    { password: "x" },
    { headers: { Authorization: "Bearer abc" } },
  ];
  const allCases: unknown[] = [...secretCases, ...nonSecretTexts, ...nonSecretValues];

  it("containsSecret agrees with redactValue(...).redacted, and with a change in the value", () => {
    for (const value of allCases) {
      const result = redactValue(value);
      expect(containsSecret(value)).toBe(result.redacted);
      expect(result.redacted).toBe(JSON.stringify(result.value) !== JSON.stringify(value));
      expect(result.redacted).toBe(result.kinds.length > 0);
    }
    for (const value of secretCases) expect(containsSecret(value), JSON.stringify(value)).toBe(true);
  });

  it("is idempotent: redacting twice is redacting once", () => {
    for (const value of allCases) {
      const once = redactValue(value);
      expect(redactValue(once.value)).toEqual({ value: once.value, redacted: false, kinds: [] });
      if (typeof value === "string") {
        const text = redactText(value).text;
        expect(redactText(text).text).toBe(text);
        const json = redactJsonText(value).text;
        expect(redactJsonText(json).text).toBe(json);
        expect(findSecrets(text)).toEqual([]);
      }
    }
  });
});
