/**
 * gitleaks' rules, run on a text (docs/security.md, "Secret rules"). The rules are data:
 * `gitleaks-rules.json`, converted from gitleaks' `config/gitleaks.toml` (MIT) at a pinned commit by
 * `scripts/update-secret-rules.ts`, which records the provenance and lists every rule it left out.
 *
 * Each rule runs as gitleaks runs it (detect/detect.go, `detectRule`): only on a text that contains
 * one of its keywords (lower-cased), then its regular expression; the secret is its `secretGroup`
 * (or the first non-empty group, or the whole match); a secret whose Shannon entropy does not
 * exceed the rule's threshold, or that a global or rule allowlist allows (a regex on the secret,
 * the match or the line; a stopword in the secret), is no finding — nor is a bare git SHA, digest
 * or UUID (`isBareDigest`), the benign twin this runtime adds to every rule. File paths and commits, which a
 * logged text does not have, are left out by the conversion.
 *
 * The keyword prefilter is one pass over the text through an automaton of all keywords, so that
 * the 200 or so rules cost one scan plus the few regular expressions whose keywords are there.
 */
import vendored from "./gitleaks-rules.json" with { type: "json" };
import { shannonEntropy } from "./secret-entropy.js";
import { buildKeywordAutomaton, scanKeywords, type KeywordAutomaton } from "./keyword-automaton.js";

/** One gitleaks finding: the secret's span and the rule that found it. */
export interface VendoredFinding {
  ruleId: string;
  start: number;
  end: number;
}

interface SerializedRegex {
  source: string;
  flags: string;
}

interface Allowlist {
  condition: "OR" | "AND";
  regexTarget: "secret" | "match" | "line";
  regexes: RegExp[];
  stopwords: string[];
}

interface Rule {
  id: string;
  regex: RegExp;
  entropy: number;
  secretGroup: number;
  allowlists: Allowlist[];
}

/** Where the rules came from: the repository, the commit and its date, and the license. */
export const vendoredRulesSource: { repository: string; path: string; commit: string; date: string; license: string } = {
  repository: vendored.source.repository,
  path: vendored.source.path,
  commit: vendored.source.commit,
  date: vendored.source.date,
  license: vendored.source.license,
};

/** The IDs of the rules gitleaks has and this detector does not run, with the reason for each. */
export const droppedVendoredRules: readonly { id: string; reason: string }[] = vendored.dropped;

function compile(regex: SerializedRegex, extraFlags = ""): RegExp {
  return new RegExp(regex.source, regex.flags + extraFlags);
}

function compileAllowlist(list: (typeof vendored.allowlists)[number]): Allowlist {
  return {
    condition: list.condition === "AND" ? "AND" : "OR",
    regexTarget: list.regexTarget === "match" || list.regexTarget === "line" ? list.regexTarget : "secret",
    regexes: list.regexes.map((regex) => compile(regex)),
    stopwords: list.stopwords,
  };
}

/** The rules, their allowlists and their keywords' automaton, ready to run. */
interface CompiledRules {
  globalAllowlists: readonly Allowlist[];
  rules: readonly Rule[];
  automaton: KeywordAutomaton;
  /** Rules without keywords run on every text. */
  keywordlessRules: readonly number[];
}

let compiled: CompiledRules | undefined;

/**
 * The rules compiled on the first scan rather than when turnlog is imported: some 200 regular
 * expressions and the automaton are a noticeable part of an import's start-up, which a process
 * that never redacts (a CLI command that only reads a log) need not pay (docs/performance.md,
 * "Start-up").
 */
function compiledRules(): CompiledRules {
  compiled ??= {
    globalAllowlists: vendored.allowlists.map(compileAllowlist),
    rules: vendored.rules.map((rule) => ({
      id: rule.id,
      // `d` for the capture groups' indices, so the finding is the secret's span and the label stays.
      regex: compile(rule.regex, "gd"),
      entropy: rule.entropy,
      secretGroup: rule.secretGroup,
      allowlists: rule.allowlists.map(compileAllowlist),
    })),
    automaton: buildKeywordAutomaton(vendored.rules.map((rule) => rule.keywords)),
    keywordlessRules: vendored.rules.flatMap((rule, index) => (rule.keywords.length === 0 ? [index] : [])),
  };
  return compiled;
}

/** The number of gitleaks rules the detector runs. */
export const vendoredRuleCount = vendored.rules.length;

/** The rules whose keywords `text` contains (case-insensitively, as gitleaks looks), in rule order. */
function rulesToRun(text: string, { automaton, keywordlessRules }: CompiledRules): number[] {
  const selected = new Set<number>(keywordlessRules);
  scanKeywords(automaton, text, (rule) => selected.add(rule));
  return [...selected].sort((left, right) => left - right);
}

/** The line(s) a match is on, for allowlists whose target is the line. */
function lineOf(text: string, start: number, end: number): string {
  const lineStart = text.lastIndexOf("\n", start - 1) + 1;
  const newline = text.indexOf("\n", end);
  return text.slice(lineStart, newline < 0 ? text.length : newline);
}

function isAllowed(lists: readonly Allowlist[], secret: string, match: string, line: () => string): boolean {
  for (const list of lists) {
    const target = list.regexTarget === "match" ? match : list.regexTarget === "line" ? line() : secret;
    const regexAllowed = target !== "" && list.regexes.some((regex) => regex.test(target));
    const lower = secret.toLowerCase();
    const stopworded = secret !== "" && list.stopwords.some((word) => lower.includes(word));
    // AND lists that needed a path or a commit were left out by the conversion; what is left of an
    // AND list needs each of its criteria.
    const allowed =
      list.condition === "AND" ? (list.regexes.length === 0 || regexAllowed) && (list.stopwords.length === 0 || stopworded) : regexAllowed || stopworded;
    if (allowed) return true;
  }
  return false;
}

/** A git SHA (40 or 64 hex), a sha256 digest or a UUID. */
const digestShaped = /^(?:[0-9a-fA-F]{40}|[0-9a-fA-F]{64}|[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12})$/;

/**
 * The benign twin of every rule: a value shaped like a git SHA, a digest or a UUID that stands
 * alone — the match holds nothing but the value and punctuation, no name — is that, not a key.
 * gitleaks' `sourcegraph-access-token` takes any 40 hex characters once "sourcegraph" is somewhere
 * in the text, which would redact every commit SHA of a tool output that mentions it. A hex value
 * a rule finds after a name (`discord_token = …`, `heroku_api_key: <uuid>`) is still found.
 */
function isBareDigest(secret: string, matchText: string): boolean {
  return digestShaped.test(secret) && !/[A-Za-z0-9]/.test(matchText.replace(secret, ""));
}

/**
 * Every gitleaks finding in `text`: keyword prefilter, regular expression, entropy threshold,
 * global and rule allowlists.
 *
 * @example
 * scanVendoredRules("export DIGITALOCEAN_TOKEN=dop_v1_<64 hex>");
 * // [{ ruleId: "digitalocean-pat", start: 26, end: 97 }]
 */
export function scanVendoredRules(text: string): VendoredFinding[] {
  const findings: VendoredFinding[] = [];
  const ready = compiledRules();
  const { rules, globalAllowlists } = ready;
  for (const index of rulesToRun(text, ready)) {
    const rule = rules[index]!;
    const regex = rule.regex;
    regex.lastIndex = 0;
    for (let match = regex.exec(text); match !== null; match = regex.exec(text)) {
      if (match[0].length === 0) {
        regex.lastIndex += 1;
        continue;
      }
      let group = rule.secretGroup;
      if (group === 0) group = match.findIndex((value, position) => position > 0 && value !== undefined && value.length > 0);
      const span = group > 0 ? match.indices?.[group] : match.indices?.[0];
      if (span === undefined) continue;
      let [start, end] = span;
      // gitleaks trims newlines from the match (detect.go: `strings.Trim(…, "\n")`).
      while (end > start && text[end - 1] === "\n") end -= 1;
      while (start < end && text[start] === "\n") start += 1;
      const secret = text.slice(start, end);
      if (secret.length === 0) continue;
      if (rule.entropy !== 0 && shannonEntropy(secret) <= rule.entropy) continue;
      const matchText = match[0];
      if (isBareDigest(secret, matchText)) continue;
      const line = (): string => lineOf(text, match.index, match.index + matchText.length);
      if (isAllowed(globalAllowlists, secret, matchText, line) || isAllowed(rule.allowlists, secret, matchText, line)) continue;
      findings.push({ ruleId: rule.id, start, end });
    }
  }
  return findings;
}
