/**
 * What the secret detector costs on the hot path: every tool output, argument text, assistant
 * text and provider error passes it before it is logged. Prints µs per call of `redactText` on a
 * typical 12 000-character tool output (the model-visible result size, docs/log.md#large-tool-outputs) with and
 * without a secret in it, of `redactJsonText` on a 2 KB arguments JSON, and ns per character of
 * `redactText` on the adversarial inputs of test/policy/secrets/secret-detector.test.ts (linear
 * scans keep it flat; a quadratic one would take minutes on these).
 *
 *   npm run bench        (or: node --import tsx bench/redaction.ts)
 */
import { createHash } from "node:crypto";
import * as detector from "../src/policy/secrets/secret-detector.js";

const { redactJsonText, redactText } = detector;

/** A tool output as they come: `git log`, test runner lines, source code, a JSON listing. */
function typicalOutput(chars: number): string {
  const parts: string[] = [];
  for (let index = 0; parts.join("").length < chars; index += 1) {
    const sha = createHash("sha1").update(String(index)).digest("hex");
    parts.push(
      `commit ${sha}\nAuthor: Ada Lovelace <ada@example.com>\nDate:   Mon Mar 3 10:${String(index % 60).padStart(2, "0")}:00 2025 +0100\n\n    fix(history): keep tool results paired (#${100 + index})\n\n`,
      ` ✓ test/history/token-estimator.test.ts (12 tests) ${index + 3}ms\n ✓ test/policy/gate.test.ts > asks before a write outside the workspace\n`,
      `export function estimate(text: string): number {\n  const tokens = encode(text);\n  return tokens.length; // id ${createHash("sha256").update(sha).digest("hex").slice(0, 32)}\n}\n`,
      `{"id":"call_${sha.slice(0, 24)}","path":"src/runtime/session-${index}.ts","size":${index * 37},"uuid":"3f2a9c1d-8e7b-4a5f-9e3d-${sha.slice(0, 12)}"}\n`,
    );
  }
  return parts.join("").slice(0, chars);
}

function typicalArguments(chars: number): string {
  const lines: string[] = [];
  for (let index = 0; lines.join("\n").length < chars - 200; index += 1) lines.push(`  const value${index} = compute("item-${index}", ${index * 7}); // see docs/policy.md`);
  return JSON.stringify({ path: "src/tools/generated.ts", content: lines.join("\n") });
}

function microseconds(run: () => unknown, iterations: number): number {
  for (let index = 0; index < Math.min(50, iterations); index += 1) run();
  const started = process.hrtime.bigint();
  for (let index = 0; index < iterations; index += 1) run();
  return Number(process.hrtime.bigint() - started) / 1000 / iterations;
}

const output = typicalOutput(12_000);
const withSecret = `${output.slice(0, 6000)}\nexport STRIPE_KEY=sk_live_4eC39HqLyjWDarjtT1zdp7dc\n${output.slice(6000)}`.slice(0, 12_000);
const args = typicalArguments(2048);

const rows: string[][] = [["redaction", "µs per call"]];
rows.push(["redactText, 12 000-char tool output", microseconds(() => redactText(output), 400).toFixed(0)]);
rows.push(["redactText, 12 000-char output with a secret", microseconds(() => redactText(withSecret), 400).toFixed(0)]);
rows.push(["redactJsonText, 2 KB arguments JSON", microseconds(() => redactJsonText(args), 2000).toFixed(1)]);
// The test's adversarial inputs (0.3–1 M characters each): long runs that a backtracking pattern would rescan.
const adversarial = [
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
const adversarialChars = adversarial.reduce((sum, text) => sum + text.length, 0);
const adversarialMicroseconds = microseconds(() => adversarial.forEach((text) => redactText(text)), 1);
rows.push(["redactText, adversarial inputs, ns per character", ((adversarialMicroseconds * 1000) / adversarialChars).toFixed(1)]);
const width = Math.max(...rows.map((row) => row[0]!.length));
for (const [name, value] of rows) console.log(`${name!.padEnd(width)}  ${value}`);
