/**
 * Example secrets, one per kind the detector knows, realistic in shape and obviously fake: each
 * contains `TESTONLY`. A test that puts them into a tool call can grep the log (LevelDB files
 * included) for `exampleSecrets[kind]`, or for `exampleSecretMarker`, and expect no hit.
 */
import { secretKinds } from "../../src/policy/secrets/secret-detector.js";
import type { SecretKind } from "../../src/policy/secrets/secret-detector.js";

/** The string every example secret contains, for a single grep. */
export const exampleSecretMarker = "TESTONLY";

const privateKeyBlock = [
  "-----BEGIN RSA PRIVATE KEY-----",
  "MIIEowIBAAKCAQEATESTONLYTESTONLYTESTONLYTESTONLYTESTONLYTESTONLY0a",
  "1b2c3d4e5f6a7b8c9d0e1f2a3b4c5d6e7f8a9b0c1d2e3f4a5b6c7d8e9f0a1b2c3d",
  "TESTONLYnotARealKeyTESTONLYnotARealKeyTESTONLYnotARealKeyTESTONLY==",
  "-----END RSA PRIVATE KEY-----",
].join("\n");

/** The kinds the detector finds by itself (a `known-secret` is one the host registered). */
export type DetectedSecretKind = Exclude<SecretKind, "known-secret">;
export const detectedSecretKinds = secretKinds.filter((kind): kind is DetectedSecretKind => kind !== "known-secret");
/** Formats that are hexadecimal or encoded, so their examples cannot contain the marker as it is. */
export const hexadecimalKinds: ReadonlySet<SecretKind> = new Set(["twilio-key", "encoded-secret"]);

/** A value a host registers as secret (a provider key with no known format), and a text with it. */
export const exampleKnownSecret = "TESTONLY.known.provider.value-0a1b2c";

/** The raw secret values: what must never appear in a log. */
export const exampleSecrets: Record<DetectedSecretKind, string> = {
  "private-key": privateKeyBlock,
  jwt: "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiJURVNUT05MWSIsIm5hbWUiOiJub3QgYSByZWFsIHRva2VuIn0.TESTONLY-signature-0a1b2c3d4e5f6a7b8c9d",
  "anthropic-key": "sk-ant-api03-TESTONLY0a1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8S9t0U1v2W3x4Y5z6-notarealkey_0a1b2c3d4e5f6AA",
  "openai-key": "sk-proj-TESTONLY0a1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8S9t0U1v2W3x4Y5z6",
  "github-token": "ghp_TESTONLY0a1b2C3d4E5f6G7h8I9j0K1l2M3n",
  "slack-token": "xoxb-000000000000-0000000000000-TESTONLY0a1b2c3d4e5f6g7h",
  "aws-access-key-id": "AKIATESTONLY00000000",
  "google-api-key": "AIzaSyTESTONLY-0a1b2c3d4e5f6g7h8i9j0k1l",
  "url-credentials": "deploy:TESTONLY-url-password-0a1b2c",
  "bearer-token": "TESTONLY-bearer-0a1b2c3d4e5f6a7b8c9d",
  "secret-query-param": "TESTONLY-query-token-0a1b2c3d",
  "secret-field": "TESTONLY-field-password-0a1b2c",
  "secret-assignment": "TESTONLY-env-secret-0a1b2c3d",
  "stripe-key": "sk_live_TESTONLY0a1b2C3d4E5f6G7h8I9j",
  "gitlab-token": "glpat-TESTONLY0a1b2C3d4E5f",
  "huggingface-token": "hf_TESTONLYaBcDeFgHiJkLmNoPqRsTuVwXyZab",
  "sendgrid-key": "SG.TESTONLY0a1b2c3d4e5f6g.TESTONLY0a1b2c3d4e5f6g7h8i9j0k1l2m3n4o5p6q7",
  "twilio-key": "SK0a1b2c3d4e5f60718293a4b5c6d7e8f9",
  "npm-token": "npm_TESTONLY0a1b2C3d4E5f6G7h8I9j0K1l2M3n",
  "shopify-token": "shpat_TESTONLY0a1b2c3d4e5f6a7b8c9d0e1f",
  "linear-key": "lin_api_TESTONLY0a1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p",
  "onepassword-token": `ops_eyJ${"TESTONLY0a1b2C3d4E5f6G7h8I9j".repeat(4)}fQ==`,
  "webhook-url": "T00000000/B00000000/TESTONLY0a1b2c3d4e5f6g7h",
  "azure-key": "TESTONLY0a1b2c3d4e5f6g7h8i9j0k1l2m3n4o5p6q7r8s9t0u1v2w3x4y5z6A7B8C9D+==",
  // A PyPI upload token, one of gitleaks' vendored formats; assembled so that no scanner of this
  // repository's source mistakes the file for a leak.
  "provider-token": ["gsk", "TESTONLY0a1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8S9t0U1v"].join("_"),
  // A base64'd `.env`, as `kubectl get secret -o yaml` or a CI variable holds one.
  "encoded-secret": Buffer.from("APP_NAME=demo\nDATABASE_PASSWORD=TESTONLY-encoded-0a1b2c3d\n").toString("base64"),
  "gitleaks-rule": ["pypi", "AgEIcHlwaS5vcmc" + "TESTONLY0a1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8S9t0U1v2W3x4Y5z6"].join("-"),
  "aws-secret-access-key": "TESTONLYwJalrXUtnFEMI/K7MDENG/bPxRfiCYzq",
  "command-credential": "TESTONLY-mysql-pw-0a1b",
  "high-entropy": "TESTONLYq8Zr3Xv5Lp1Wn7Ks2Dj9",
};

/** Each secret where the detector finds it, as that kind: alone for formats, in context otherwise. */
export const exampleSecretTexts: Record<DetectedSecretKind, string> = {
  "private-key": `key file:\n${exampleSecrets["private-key"]}\n`,
  jwt: `session=${exampleSecrets.jwt}`,
  "anthropic-key": exampleSecrets["anthropic-key"],
  "openai-key": exampleSecrets["openai-key"],
  "github-token": exampleSecrets["github-token"],
  "slack-token": exampleSecrets["slack-token"],
  "aws-access-key-id": exampleSecrets["aws-access-key-id"],
  "google-api-key": exampleSecrets["google-api-key"],
  "url-credentials": `git clone https://${exampleSecrets["url-credentials"]}@git.example.com/team/repo.git`,
  "bearer-token": `curl -H 'Authorization: Bearer ${exampleSecrets["bearer-token"]}' https://api.example.com/v1/me`,
  "secret-query-param": `https://api.example.com/v1/items?token=${exampleSecrets["secret-query-param"]}&page=2`,
  "secret-field": `{"user": "deploy", "password": "${exampleSecrets["secret-field"]}"}`,
  "secret-assignment": `DATABASE_PASSWORD=${exampleSecrets["secret-assignment"]}`,
  "stripe-key": exampleSecrets["stripe-key"],
  "gitlab-token": exampleSecrets["gitlab-token"],
  "huggingface-token": exampleSecrets["huggingface-token"],
  "sendgrid-key": exampleSecrets["sendgrid-key"],
  "twilio-key": exampleSecrets["twilio-key"],
  "npm-token": exampleSecrets["npm-token"],
  "shopify-token": exampleSecrets["shopify-token"],
  "linear-key": exampleSecrets["linear-key"],
  "onepassword-token": exampleSecrets["onepassword-token"],
  "webhook-url": `curl -X POST https://hooks.slack.com/services/${exampleSecrets["webhook-url"]} -d '{"text":"deployed"}'`,
  "azure-key": `DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=${exampleSecrets["azure-key"]};EndpointSuffix=core.windows.net`,
  "provider-token": exampleSecrets["provider-token"],
  "encoded-secret": exampleSecrets["encoded-secret"],
  "gitleaks-rule": exampleSecrets["gitleaks-rule"],
  "aws-secret-access-key": exampleSecrets["aws-secret-access-key"],
  "command-credential": `mysql -u root -p${exampleSecrets["command-credential"]} app < dump.sql`,
  "high-entropy": `X_SESSION=${exampleSecrets["high-entropy"]}`,
};

/** Strings that look a little like secrets and are not: redaction must leave them as they are. */
export const nonSecretTexts: readonly string[] = [
  "APP_NAME=turnlog",
  "NODE_ENV=production",
  "PORT=3000",
  "src/token-estimator.ts",
  "sk-",
  "task-list",
  "sketch",
  "sk-learn is a nickname for scikit-learn",
  "3f786850e387550fdab836ed7e6dc881de23001b",
  "9f89416f-5441-4430-9d9f-a419b1a132d8",
  "8cf5f101e6554264239d9d4b4b4bf0a4f391c79a7a1934f5c7000a7b0ea1f644",
  "https://example.com/?page=2&sort=asc",
  "https://user@example.com",
  "ssh://git@github.com/team/repo.git",
  "VGhlIHF1aWNrIGJyb3duIGZveCBqdW1wcyBvdmVyIHRoZSBsYXp5IGRvZw==",
  "eyJhIjoxfQ==",
  "use a Bearer token",
  "Send the token in the Authorization header.",
  "ada.lovelace@example.com",
  "max_tokens: 1024",
  "password_hint: your pet",
  "api_key = os.environ['OPENAI_API_KEY']",
  "client = OpenAI(api_key=api_key)",
  "export OPENAI_API_KEY=$OPENAI_API_KEY",
  "AKIA is how AWS access key IDs start",
];

/** JSON values with secret-sounding keys that hold no secret: redaction must leave them as they are. */
export const nonSecretValues: readonly unknown[] = [
  { tokens_used: 3 },
  { max_tokens: 1024 },
  { keyboard: "qwerty" },
  { path: "src/token-estimator.ts" },
  { usage: { prompt_tokens: 12, completion_tokens: 30, total_tokens: 42 } },
  { tokenizer: "cl100k_base", token_count: 17, token_type: "bearer" },
  { key: "Enter", sortKey: "name", primaryKey: "id", publicKey: "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI" },
  { passwordPolicy: "min 12 characters", password_hint: "your pet" },
  { nextPageToken: "CgwIARoIMTIzNDU2Nzg", eos_token: "</s>" },
  { signature: "EqQBCkgIARABGAIiQL" },
  { password: null, secret: "", token: false, credentials: [] },
];
