/**
 * What every family of command rules shares: the resolved command they judge (\`Invocation\`),
 * what they may ask of the classifier around them (\`RuleHost\`), and what they answer besides
 * their reports (\`CheckResult\`).
 */
import type { CommandSafetyRuleId } from "../catalogue.js";
import type { Redirection } from "../parse.js";
import type { PathContext, WorkingDirectory } from "../paths.js";
import type { Heredoc } from "../scanner.js";
import { hasLong, hasLongAbbreviated } from "../words.js";

/** One simple command after its wrappers: `sudo -n env X=1 rm -rf /` is `rm` with `-rf /`. */
export interface Invocation {
  name: string;
  args: string[];
  /** Run by `xargs`: more arguments arrive from standard input. */
  viaXargs: boolean;
  redirections: Redirection[];
  heredocs: Heredoc[];
  herestrings: string[];
  /** The files of `<` redirections. */
  inputFiles: string[];
}

/** What the rules need from the classifier around them. */
export interface RuleHost {
  paths: PathContext;
  report(rule: CommandSafetyRuleId, reason: string): void;
  /** Classify shell text found inside this command (`bash -c '…'`); returns whether it downloads. */
  analyzeScript(text: string): { downloads: boolean };
  /** Classify a nested simple command (`find -exec …`). */
  analyzeWords(words: string[]): void;
  /** True when the word holds a substitution whose commands download (`$(curl …)`, `<(wget …)`). */
  downloads(word: string): boolean;
  /** The word as written, with substitutions put back (`$(curl x)`), for re-analysis or messages. */
  render(word: string): string;
  /** The decisions version the command is judged under (docs/replay.md#decision-versions); rules added later branch on it. */
  decisionsVersion: number;
  /** The text a `<(…)` word produces when it is a literal (`<(echo 'ls')`), else `undefined`. */
  fedText(word: string): string | undefined;
}

/** `hasLong`, and from decisions version 4 on any GNU abbreviation of the options too (`--rec`). */
export function hasOption(host: RuleHost, args: readonly string[], ...names: string[]): boolean {
  return host.decisionsVersion >= 4 ? hasLongAbbreviated(args, ...names) : hasLong(args, ...names);
}

/** The rules that make a command known-safe. */
export type SafeRuleId = "safe:read-only" | "safe:version" | "safe:test-runner";

/** What the rules found out besides their reports. */
export interface CheckResult {
  /** The command is known-safe by this rule, unless something else about the line says otherwise. */
  safe?: SafeRuleId;
  /** The command is only a carrier for code judged on its own (`bash -c '…'`, `eval …`): no verdict of its own. */
  transparent?: boolean;
  /** The command runs code from standard input (`sh`, `bash -s`, `python -`). */
  runsStandardInput?: boolean;
  /** The command downloads (`curl`, `wget`). */
  downloads?: boolean;
  /** Where relative paths of later commands start, after `cd`. */
  cwd?: WorkingDirectory;
}
