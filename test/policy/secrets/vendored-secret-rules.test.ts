/**
 * gitleaks' vendored rules (docs/security.md, "Secret rules"): their provenance, the RE2 →
 * JavaScript translation that made them, how they run, and the boundaries the detector adds
 * (glued, wrapped, base64), each with its benign twin.
 */
import { describe, expect, it } from "vitest";
import { re2ToJavaScript, UntranslatableRegexError } from "../../../scripts/re2-to-javascript.js";
import vendored from "../../../src/policy/secrets/gitleaks-rules.json" with { type: "json" };
import { findSecrets, redactJsonText, redactText } from "../../../src/policy/secrets/secret-detector.js";
import { droppedVendoredRules, scanVendoredRules, vendoredRuleCount, vendoredRulesSource } from "../../../src/policy/secrets/vendored-secret-rules.js";

/** Fake values from parts, so no scanner of this repository reads a credential in the source. */
const part = (...pieces: string[]): string => pieces.join("");
const repeatTo = (seed: string, length: number): string => seed.repeat(Math.ceil(length / seed.length)).slice(0, length);

describe("provenance", () => {
  it("names the repository, the pinned commit, its date and the MIT license", () => {
    expect(vendoredRulesSource.repository).toBe("https://github.com/gitleaks/gitleaks");
    expect(vendoredRulesSource.path).toBe("config/gitleaks.toml");
    expect(vendoredRulesSource.commit).toMatch(/^[0-9a-f]{40}$/);
    expect(Number.isNaN(Date.parse(vendoredRulesSource.date))).toBe(false);
    expect(vendoredRulesSource.license).toBe("MIT");
    expect(vendored.source.licenseText).toContain("Permission is hereby granted, free of charge");
  });

  it("runs every rule it vendored, and says why for each one it left out", () => {
    expect(vendoredRuleCount).toBe(vendored.rules.length);
    expect(vendoredRuleCount).toBeGreaterThan(200);
    for (const rule of droppedVendoredRules) expect(rule.reason.length, rule.id).toBeGreaterThan(20);
    const ids = new Set(vendored.rules.map((rule) => rule.id));
    for (const rule of droppedVendoredRules) expect(ids.has(rule.id), rule.id).toBe(false);
    for (const rule of vendored.rules) expect(() => new RegExp(rule.regex.source, `${rule.regex.flags}gd`), rule.id).not.toThrow();
  });
});

describe("RE2 → JavaScript", () => {
  it("turns a leading (?i) into the i flag, and \\z, \\A into $ and ^", () => {
    expect(re2ToJavaScript("(?i)\\Akey=([a-z]{4})\\z")).toEqual({ source: "^key=([a-z]{4})$", flags: "i" });
  });

  it("spells out an inner (?i), (?i:…) and (?-i:…) without inline modifiers", () => {
    const inner = new RegExp(re2ToJavaScript("\\b(p8e-(?i)[a-z0-9]{4})").source);
    expect(inner.test("p8e-AbC9")).toBe(true);
    expect(inner.test("P8E-abc9")).toBe(false);
    const group = re2ToJavaScript("x(?i:ab)y");
    expect(group.flags).toBe("");
    expect(new RegExp(group.source).test("xAby")).toBe(true);
    expect(new RegExp(group.source).test("XAby")).toBe(false);
    const mixed = re2ToJavaScript("(?i)key(?-i:ABC)");
    expect(mixed.flags).toBe("");
    expect(new RegExp(mixed.source).test("KEYABC")).toBe(true);
    expect(new RegExp(mixed.source).test("keyabc")).toBe(false);
  });

  it("translates (?s:.), POSIX classes and (?P<name>…), and keeps a class's literal - literal", () => {
    expect(new RegExp(re2ToJavaScript("a(?s:.)b").source).test("a\nb")).toBe(true);
    expect(new RegExp(re2ToJavaScript("a.b").source).test("a\nb")).toBe(false);
    expect(new RegExp(re2ToJavaScript("^[[:alnum:]]+$").source).test("Ab9")).toBe(true);
    expect(re2ToJavaScript("(?P<key>x)").source).toBe("(?<key>x)");
    // `[a-z0-9-]` case-folded must not read `9-A` as a range.
    const folded = new RegExp(re2ToJavaScript("x(?i:[a-z0-9=-]+)").source);
    expect(folded.test("xA=-")).toBe(true);
    expect(folded.test("x>")).toBe(false);
  });

  it("refuses syntax it does not know rather than translating it wrongly", () => {
    expect(() => re2ToJavaScript("\\pL+")).toThrow(UntranslatableRegexError);
    expect(() => re2ToJavaScript("(?U)a+")).toThrow(UntranslatableRegexError);
  });
});

describe("running gitleaks' rules", () => {
  it("finds the secret group of a keyword-prefiltered rule, above its entropy threshold", () => {
    const token = part("dop", "_v1_", repeatTo("0f1e2d3c4b5a6978", 64));
    const text = `export DIGITALOCEAN_ACCESS=${token}`;
    expect(scanVendoredRules(text).map((finding) => [finding.ruleId, text.slice(finding.start, finding.end)])).toContainEqual(["digitalocean-pat", token]);
    // The same shape with no entropy (one repeated character) is below the threshold.
    expect(scanVendoredRules(`x ${part("dop", "_v1_", "a".repeat(64))}`)).toEqual([]);
  });

  it("applies the global allowlist: a placeholder is no secret", () => {
    expect(scanVendoredRules("adafruit_key = ${ADAFRUIT_IO_KEY}")).toEqual([]);
  });

  it("keeps the hand-written span where both find a secret: the structure stays", () => {
    const hook = part("T0", "1ABCDEFG/B0", "1ABCDEFG/", "aB3dE5fG7hI9jK1lM3nO5pQ7");
    expect(redactText(`curl -X POST https://hooks.slack.com/services/${hook}`).text).toBe("curl -X POST https://hooks.slack.com/services/[REDACTED]");
  });
});

describe("boundaries, each with its benign twin", () => {
  const githubToken = part("gh", "p_", "aB3dE5fG7hI9jK1lM3nO5pQ7rS9tU1vW3xY5");
  const awsKeyId = part("AK", "IA", "QW3ER5TY7UI2OP4A");
  const openaiKey = part("sk", "-proj-", "Ab3dEf5gHi7jKl9mNo1pQr3sTu5vWx7yZa9bCd1eFg3hIj");
  const slackToken = part("xo", "xb-", "123456789012-1234567890123-", "aB3dE5fG7hI9jK1lM3nO5pQ7");

  it("finds a key glued to a word, and keeps the word", () => {
    expect(redactText(`backup-${openaiKey}`).text).toBe("backup-[REDACTED]");
    expect(redactText(`old_${githubToken}`).text).toBe("old_[REDACTED]");
    expect(redactText(`bot_${slackToken}`).text).toBe("bot_[REDACTED]");
    expect(redactText(`key${awsKeyId} rotated`).text).toBe("key[REDACTED] rotated");
    for (const twin of ["task-list-generator-for-the-whole-project-2025", "disk-usage-report", "mask_test_results_only", "AKIA is how AWS access key IDs start", "sketch-book"]) {
      expect(redactText(twin).text, twin).toBe(twin);
    }
  });

  it("finds a key wrapped at 64 or 76 columns or split by JSON \\n, as one redaction", () => {
    const key = part("sk-ant-", "api03-", repeatTo("Ab3dEf5gHi7jKl9mNo1pQr3sTu5vWx7yZ_-", 93), "AA");
    for (const width of [64, 76]) {
      const wrapped = `key:\n${key.match(new RegExp(`.{1,${width}}`, "g"))!.join("\n")}\ndone`;
      expect(redactText(wrapped).text, `${width}`).toBe("key:\n[REDACTED]\ndone");
    }
    const inJson = JSON.stringify({ note: key.match(/.{1,64}/g)!.join("\n") });
    const redacted = redactJsonText(inJson).text;
    for (const line of key.match(/.{1,64}/g)!) expect(redacted).not.toContain(line);
    // Twins: SHAs one per line, and a wrapped base64 image.
    const shas = ["3f786850e387550fdab836ed7e6dc881de23001b", "89e6c98d92887913cadf06b2adb97f26cde4849b", "2b66fd261ee5c6cfc8de7fa466bab600bcfe4f69"].join("\n");
    expect(redactText(shas).text).toBe(shas);
    const image = Buffer.from(Array.from({ length: 300 }, (_, index) => (index * 151 + 7) % 256)).toString("base64");
    const wrappedImage = image.match(/.{1,76}/g)!.join("\n");
    expect(redactText(wrappedImage).text).toBe(wrappedImage);
  });

  it("finds a secret inside base64: kubeconfig client-key-data, a base64'd .env, Docker auths", () => {
    const pem = ["-----BEGIN RSA PRIVATE KEY-----", repeatTo("MIIEowIBAAKCAQEAq7BFUpkGp3+LQmlQYx2eqzDV+xeG8kx", 64), "-----END RSA PRIVATE KEY-----"].join("\n");
    const clientKeyData = Buffer.from(pem).toString("base64");
    expect(redactText(`    client-key-data: ${clientKeyData}`).text).toBe("    client-key-data: [REDACTED]");
    const env = Buffer.from(`NODE_ENV=production\nDB_PASSWORD=${part("hunter", "2-", "Xy9Zq")}\n`).toString("base64");
    expect(redactText(`data:\n  env: ${env}`).text).toBe("data:\n  env: [REDACTED]");
    const auth = Buffer.from(`bob:${part("s3", "cret-", "Xy9Zq")}`).toString("base64");
    expect(redactText(`{"auths": {"r.example.com": {"auth": "${auth}"}}}`).text).toBe('{"auths": {"r.example.com": {"auth": "[REDACTED]"}}}');
    // Twins: base64 of plain text, an npm integrity string, a PNG data URL.
    for (const twin of [
      `text: ${Buffer.from("The quick brown fox jumps over the lazy dog.").toString("base64")}`,
      `"integrity": "sha512-${Buffer.from(repeatTo("\u0001\u00ff\u0080", 64), "latin1").toString("base64")}"`,
      `<img src="data:image/png;base64,${Buffer.from(Array.from({ length: 90 }, (_, index) => (index * 97) % 256)).toString("base64")}">`,
    ]) {
      expect(findSecrets(twin), twin).toEqual([]);
    }
  });

  it("finds credentials on command lines and in .netrc, keeping the command", () => {
    expect(redactText("sshpass -p hunter2pw ssh deploy@host").text).toBe("sshpass -p [REDACTED] ssh deploy@host");
    expect(redactText("docker login -u ci -p hunter2pw registry.example.com").text).toBe("docker login -u ci -p [REDACTED] registry.example.com");
    expect(redactText("openssl rsa -in k.pem -passin pass:hunter2pw -out p.pem").text).toBe("openssl rsa -in k.pem -passin pass:[REDACTED] -out p.pem");
    expect(redactText("machine api.example.com login bob password hunter2pw").text).toBe("machine api.example.com login bob password [REDACTED]");
    for (const twin of ["openssl rsa -in k.pem -passin env:KEY_PASS", "docker login registry.example.com", "the machine asks for your password again", "ssh -p 2222 host"]) {
      expect(redactText(twin).text, twin).toBe(twin);
    }
  });
});

describe("the benign twin every vendored rule keeps", () => {
  it("leaves a bare git SHA, sha256 digest or UUID alone even where a rule's keyword is in the text", () => {
    const text = [
      "cloning sourcegraph/sourcegraph",
      "HEAD is now at 3f786850e387550fdab836ed7e6dc881de23001b",
      "digest 8cf5f101e6554264239d9d4b4b4bf0a4f391c79a7a1934f5c7000a7b0ea1f644",
      "request 9f89416f-5441-4430-9d9f-a419b1a132d8",
    ].join("\n");
    expect(scanVendoredRules(text)).toEqual([]);
    expect(redactText(text).text).toBe(text);
  });

  it("still finds a hex value a rule finds after a name", () => {
    const text = `discord_token = "${"0f1e2d3c4b5a6978".repeat(4)}"`;
    expect(scanVendoredRules(text).map((finding) => finding.ruleId)).toContain("discord-api-token");
  });
});
