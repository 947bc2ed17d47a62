/**
 * Regenerates src/policy/secrets/gitleaks-rules.json, the secret detector's vendored rule set,
 * from a gitleaks checkout (docs/security.md, "Secret rules"):
 *
 *   npx tsx scripts/update-secret-rules.ts <gitleaks checkout or bare git directory> [--commit <sha>] [--out <file>]
 *
 * It reads `config/gitleaks.toml` (from the work tree, or with `git show <commit>:…` from a bare
 * repository such as the one the `fetch` tool brings), translates each rule's Go RE2 regular
 * expression to JavaScript (`scripts/re2-to-javascript.ts`), keeps its `keywords`, `entropy`,
 * `secretGroup` and allowlists, and writes the rules with their provenance (repository, commit,
 * date, license). A rule that cannot apply to a text or cannot be translated is left out and listed
 * under `dropped` with the reason. The runtime reads only the JSON; the TOML parser is a
 * devDependency of this script.
 */
import { execFileSync } from "node:child_process";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { parse } from "smol-toml";
import { re2ToJavaScript, UntranslatableRegexError, type JavaScriptRegex } from "./re2-to-javascript.js";

const repository = "https://github.com/gitleaks/gitleaks";
const configPath = "config/gitleaks.toml";

interface TomlAllowlist {
  description?: string;
  condition?: string;
  regexTarget?: string;
  regexes?: string[];
  stopwords?: string[];
  paths?: string[];
  commits?: string[];
}

interface TomlRule {
  id: string;
  description?: string;
  regex?: string;
  path?: string;
  keywords?: string[];
  entropy?: number;
  secretGroup?: number;
  skipReport?: boolean;
  requiredRules?: unknown[];
  allowlist?: TomlAllowlist;
  allowlists?: TomlAllowlist[];
}

interface TomlConfig {
  allowlist?: TomlAllowlist;
  allowlists?: TomlAllowlist[];
  rules?: TomlRule[];
}

/** An allowlist as the detector reads it: a finding it matches is no secret. */
interface VendoredAllowlist {
  /** `OR`: a regex or a stopword is enough; `AND`: every criterion present must hold. */
  condition: "OR" | "AND";
  /** What the regexes look at: the secret (default), the whole match, or the line. */
  regexTarget: "secret" | "match" | "line";
  regexes: JavaScriptRegex[];
  /** Lower-case words; a secret containing one is no secret. */
  stopwords: string[];
}

interface VendoredRule {
  id: string;
  description: string;
  regex: JavaScriptRegex;
  /** Lower-case; the rule runs only on a text that contains one of them (none: always). */
  keywords: string[];
  /** The secret's Shannon entropy must exceed this (0: no threshold). */
  entropy: number;
  /** Which capture group is the secret (0: the first non-empty group, or the whole match). */
  secretGroup: number;
  allowlists: VendoredAllowlist[];
}

function fail(message: string): never {
  console.error(`update-secret-rules: ${message}`);
  process.exit(1);
}

function git(directory: string, args: string[]): string {
  return execFileSync("git", ["-C", directory, ...args], { encoding: "utf8", maxBuffer: 64 * 1024 * 1024 });
}

function parseArguments(argv: string[]): { checkout: string; commit: string; out: string } {
  let checkout: string | undefined;
  let commit = "HEAD";
  let out = fileURLToPath(new URL("../src/policy/secrets/gitleaks-rules.json", import.meta.url));
  for (let index = 0; index < argv.length; index += 1) {
    const argument = argv[index]!;
    if (argument === "--commit") commit = argv[++index] ?? fail("--commit needs a value");
    else if (argument === "--out") out = argv[++index] ?? fail("--out needs a value");
    else if (argument.startsWith("--")) fail(`unknown option ${argument}`);
    else if (checkout === undefined) checkout = argument;
    else fail(`one checkout path, not ${argument}`);
  }
  if (checkout === undefined) fail("usage: tsx scripts/update-secret-rules.ts <gitleaks checkout> [--commit <sha>] [--out <file>]");
  return { checkout, commit, out };
}

/** The config and license at `commit`: from the work tree when it is checked out there, else from git. */
function readSources(checkout: string, commit: string): { toml: string; license: string; sha: string; date: string } {
  const sha = git(checkout, ["rev-parse", `${commit}^{commit}`]).trim();
  const date = git(checkout, ["log", "-1", "--format=%cI", sha]).trim();
  let worktreeHead: string | undefined;
  try {
    worktreeHead = existsSync(join(checkout, configPath)) ? git(checkout, ["rev-parse", "HEAD"]).trim() : undefined;
  } catch {
    worktreeHead = undefined;
  }
  if (worktreeHead === sha) {
    const dirty = git(checkout, ["status", "--porcelain", "--", configPath, "LICENSE"]).trim();
    if (dirty !== "") fail(`${configPath} or LICENSE has local changes; the provenance would be wrong`);
    return { toml: readFileSync(join(checkout, configPath), "utf8"), license: readFileSync(join(checkout, "LICENSE"), "utf8"), sha, date };
  }
  return { toml: git(checkout, ["show", `${sha}:${configPath}`]), license: git(checkout, ["show", `${sha}:LICENSE`]), sha, date };
}

function translateAllowlist(allowlist: TomlAllowlist, where: string, notes: string[]): VendoredAllowlist | undefined {
  const condition = (allowlist.condition ?? "OR").toUpperCase() === "AND" ? "AND" : "OR";
  const hasFileCriteria = (allowlist.paths?.length ?? 0) > 0 || (allowlist.commits?.length ?? 0) > 0;
  // Paths and commits name files and commits; a logged text has neither. An AND list that needs
  // one can never hold for a text, and an OR list keeps only its regexes and stopwords.
  if (condition === "AND" && hasFileCriteria) {
    notes.push(`${where}: an AND allowlist that needs a file path or commit; never applies to a text`);
    return undefined;
  }
  const regexes: JavaScriptRegex[] = [];
  for (const pattern of allowlist.regexes ?? []) {
    try {
      regexes.push(re2ToJavaScript(pattern));
    } catch (error) {
      if (!(error instanceof UntranslatableRegexError)) throw error;
      notes.push(`${where}: allowlist regex ${JSON.stringify(pattern)} left out (${error.message}); the rule redacts more, never less`);
    }
  }
  const stopwords = (allowlist.stopwords ?? []).map((word) => word.toLowerCase());
  if (regexes.length === 0 && stopwords.length === 0) return undefined;
  const target = allowlist.regexTarget ?? "secret";
  if (target !== "secret" && target !== "match" && target !== "line") fail(`${where}: unknown regexTarget ${target}`);
  return { condition, regexTarget: target, regexes, stopwords };
}

function allowlistsOf(owner: { allowlist?: TomlAllowlist; allowlists?: TomlAllowlist[] }, where: string, notes: string[]): VendoredAllowlist[] {
  const lists = [...(owner.allowlist !== undefined ? [owner.allowlist] : []), ...(owner.allowlists ?? [])];
  return lists.flatMap((list, index) => translateAllowlist(list, `${where} allowlist ${index + 1}`, notes) ?? []);
}

/**
 * Rules that translate but that the detector does not run, with the reason; each is listed under
 * `dropped` like an untranslatable one.
 */
const notRun = new Map<string, string>([
  [
    "generic-api-key",
    "covered by the hand-written name rules (secret-field, secret-assignment, command-credential) and the entropy rule, which read names as words " +
      "(`max_tokens`, `tokenizer` are no secrets) and keep the label; its regex tries 50 characters of prefix at every position, which alone tripled " +
      "the cost of scanning a 12 000-character tool output (bench/redaction.ts)",
  ],
]);

function convert(config: TomlConfig, notes: string[]): { rules: VendoredRule[]; dropped: { id: string; reason: string }[]; allowlists: VendoredAllowlist[] } {
  const rules: VendoredRule[] = [];
  const dropped: { id: string; reason: string }[] = [];
  for (const rule of config.rules ?? []) {
    const reason = notRun.get(rule.id);
    if (reason !== undefined) {
      dropped.push({ id: rule.id, reason });
      continue;
    }
    if (rule.regex === undefined) {
      dropped.push({ id: rule.id, reason: "no regex: it matches file names (`path`), and a logged text has none" });
      continue;
    }
    if (rule.path !== undefined) {
      dropped.push({ id: rule.id, reason: `applies only to files whose path matches ${JSON.stringify(rule.path)}; a logged text has no path` });
      continue;
    }
    if (rule.skipReport === true || (rule.requiredRules?.length ?? 0) > 0) {
      dropped.push({ id: rule.id, reason: "a composite rule (requiredRules/skipReport), which needs gitleaks' multi-rule matching" });
      continue;
    }
    let regex: JavaScriptRegex;
    try {
      regex = re2ToJavaScript(rule.regex);
    } catch (error) {
      if (!(error instanceof UntranslatableRegexError)) throw error;
      dropped.push({ id: rule.id, reason: `regex not translatable: ${error.message}` });
      continue;
    }
    rules.push({
      id: rule.id,
      description: rule.description ?? "",
      regex,
      keywords: [...new Set((rule.keywords ?? []).map((keyword) => keyword.toLowerCase()))],
      entropy: rule.entropy ?? 0,
      secretGroup: rule.secretGroup ?? 0,
      allowlists: allowlistsOf(rule, rule.id, notes),
    });
  }
  return { rules, dropped, allowlists: allowlistsOf(config, "global", notes) };
}

const { checkout, commit, out } = parseArguments(process.argv.slice(2));
const sources = readSources(checkout, commit);
const config = parse(sources.toml) as unknown as TomlConfig;
const notes: string[] = [];
const { rules, dropped, allowlists } = convert(config, notes);
const vendored = {
  $comment: "Generated by scripts/update-secret-rules.ts from gitleaks' config/gitleaks.toml; do not edit by hand (docs/security.md, \"Secret rules\").",
  source: {
    repository,
    path: configPath,
    commit: sources.sha,
    date: sources.date,
    license: "MIT",
    licenseText: sources.license,
  },
  allowlists,
  rules,
  dropped,
  notes,
};
writeFileSync(out, `${JSON.stringify(vendored, null, 1)}\n`);
console.log(`${rules.length} rules written to ${out} (gitleaks ${sources.sha.slice(0, 12)}, ${sources.date}); ${dropped.length} dropped:`);
for (const rule of dropped) console.log(`  ${rule.id}: ${rule.reason}`);
for (const note of notes) console.log(`  note: ${note}`);
