/**
 * Command safety (docs/policy.md#command-safety): classify the shell text a command tool is about to run as
 * `forbidden`, `needs-approval`, `known-safe` or `unknown`, with the stable id of the rule that
 * decided. The catalogue of rules, each with a dangerous example and a benign twin, is in
 * `docs/policy.md`.
 *
 * The pipeline: normalize (NFKC, ANSI escapes, whitespace) → scan for substitutions, heredocs,
 * comments and fork bombs → tokenize with `shell-quote` → split into pipelines of simple commands
 * → look through wrappers → apply the rules → the most severe finding wins.
 */
import os from "node:os";
import path from "node:path";
import type { CommandSafetyRuleId, CommandVerdict } from "./catalogue.js";
import { severityOf, verdictOfRule } from "./catalogue.js";
import { checkReverseShellWords } from "./attacks.js";
import { checkRedirectionsOutside, readOutside } from "./containment.js";
import { findForkBomb } from "./fork-bomb.js";
import { interpreterFamily } from "./interpreters.js";
import { literalOutput, literalScriptOutput, runFedCode } from "./literal.js";
import { executedCommandText, visibleCommandText } from "./normalize.js";
import type { Pipeline, SimpleCommand } from "./parse.js";
import { WRITE_REDIRECTIONS, parsePipelines } from "./parse.js";
import type { PathContext, WorkingDirectory } from "./paths.js";
import { isHarmlessSink } from "./paths.js";
import type { Invocation, RuleHost } from "./rules/rule-host.js";
import { DOES_NOT_READ } from "./rules/credentials-and-secrets.js";
import { SQL_CLIENTS, SQL_DESTRUCTIVE } from "./rules/packages-and-infrastructure.js";
import { checkCommand } from "./rules.js";
import { checkRedirections } from "./rules/files-and-disks.js";
import type { Heredoc, ScannedScript } from "./scanner.js";
import { PLACEHOLDER, PLACEHOLDER_MARK, scanShellText } from "./scanner.js";
import { UnparsableCommandError } from "../../errors/unparsable-command-error.js";
import { unwrap } from "./wrappers.js";
import { ASSIGNMENT, brief, commandName, isDynamicName } from "./words.js";

/** Where relative and absolute paths in the command are judged from. */
export interface ClassifyCommandOptions {
  /** The workspace root; without it, relative paths that do not climb out with `..` count as inside. */
  workspaceRoot?: string;
  /** The system temporary directory; defaults to `os.tmpdir()`. `/tmp` and `/var/tmp` always count too. */
  tempDir?: string;
  /** The user's home directory, so `rm -rf /home/me` reads like `rm -rf ~`; defaults to `os.homedir()`. */
  homeDir?: string;
  /**
   * The decisions version to classify under (docs/replay.md#decision-versions); absent means the latest
   * ({@link LATEST_COMMAND_SAFETY_VERSION}). Versions 1 to 3 classify as turnlog did before version 4.
   */
  decisionsVersion?: number;
}

/** The newest decisions version command safety knows: what `classifyCommand` uses when none is given. */
export const LATEST_COMMAND_SAFETY_VERSION = 4;

/** Text longer than this is not analysed (it needs approval): bounds the work on adversarial input. */
const MAX_LENGTH = 200_000;
/** Nesting (`bash -c "$(…)"` inside …) deeper than this needs approval. */
const MAX_DEPTH = 16;
/** At most this many scripts (the text, each substitution, each `bash -c`) are analysed per call. */
const MAX_SCRIPTS = 1_000;

interface Finding {
  rule: CommandSafetyRuleId;
  reason: string;
  command?: string;
}

interface ScriptAnalysis {
  findings: Finding[];
  downloads: boolean;
  /** Its first command runs code from standard input (`sh`, `bash -s`): what `>(sh)` does. */
  runsStandardInput: boolean;
}

interface Settings {
  workspaceRoot: string | undefined;
  tempDirs: string[];
  homeDir: string | undefined;
  budget: { scripts: number };
  decisionsVersion: number;
}

interface Scope {
  settings: Settings;
  depth: number;
  scanned: ScannedScript;
  substitutions: ScriptAnalysis[];
  findings: Finding[];
  cwd: WorkingDirectory;
  variables: Map<string, string>;
  /** Variables assigned the output of a download (`a=$(curl …)`). */
  downloadedVariables: Set<string>;
  downloads: boolean;
  /** Names defined by `alias` earlier in the script (decisions version 4 on). */
  aliases: Set<string>;
}

interface StageResult {
  invocation: Invocation | undefined;
  downloads: boolean;
  runsStandardInput: boolean;
  /** Writes into `>(…)` whose command runs its input as code (`tee >(sh)`, `curl x > >(bash)`). */
  feedsInterpreter: boolean;
}

function unparsable(reason: string): Finding {
  return { rule: "approval:unparsable", reason };
}

function opaque(finding: Finding): ScriptAnalysis {
  return { findings: [finding], downloads: false, runsStandardInput: false };
}

/**
 * What a shell would still run of text it rejects is anyone's guess, so rejected text is also read
 * with its quotes and substitution brackets dropped: a dangerous command in it still shows.
 */
function repaired(text: string): string {
  return text
    .replace(/[`'"]/g, " ")
    .replace(/[$<>]\(/g, " ; ")
    .replace(/[()]/g, " ; ")
    .replace(/<</g, " ");
}

function analyzeScript(text: string, settings: Settings, depth: number): ScriptAnalysis {
  settings.budget.scripts += 1;
  if (depth > MAX_DEPTH) return opaque(unparsable(`The command nests more than ${MAX_DEPTH} levels deep.`));
  if (settings.budget.scripts > MAX_SCRIPTS) return opaque(unparsable("The command holds more nested scripts than are analysed."));

  let scanned: ScannedScript;
  const findings: Finding[] = [];
  try {
    scanned = scanShellText(text);
    const bomb = findForkBomb(scanned.syntax);
    if (bomb !== undefined) {
      findings.push({ rule: "forbidden:fork-bomb", reason: `The function ${bomb} starts two copies of itself on every call, until the machine runs out of processes.`, command: text });
    }
  } catch (error) {
    if (!(error instanceof UnparsableCommandError)) throw error;
    findings.push(unparsable(`The command has ${error.message}, so a shell would reject it.`));
    const fallback = repaired(text);
    if (fallback !== text) {
      const retry = analyzeScript(fallback, settings, depth + 1);
      return { ...retry, findings: [...findings, ...retry.findings.filter((finding) => finding.rule !== "approval:unparsable")] };
    }
    return { findings, downloads: false, runsStandardInput: false };
  }

  const substitutions = scanned.substitutions.map((substitution) => analyzeScript(substitution.body, settings, depth + 1));
  let pipelines: Pipeline[];
  try {
    pipelines = parsePipelines(scanned.text);
  } catch {
    // shell-quote rejects `${}` and similar; a shell does too ("bad substitution").
    findings.push(unparsable("The command has a malformed ${…} expansion, so a shell would reject it."));
    return { findings: [...findings, ...substitutions.flatMap((analysis) => analysis.findings)], downloads: false, runsStandardInput: false };
  }

  const scope: Scope = {
    settings,
    depth,
    scanned,
    substitutions,
    findings,
    cwd: undefined,
    variables: new Map(),
    downloadedVariables: new Set(),
    downloads: false,
    aliases: new Set(),
  };
  const first = pipelines.map((pipeline) => analyzePipeline(pipeline, scope))[0]?.[0];
  for (const analysis of substitutions) findings.push(...analysis.findings);
  return {
    findings,
    downloads: scope.downloads || substitutions.some((analysis) => analysis.downloads),
    runsStandardInput: first?.runsStandardInput === true,
  };
}

function render(word: string, scope: Scope): string {
  return word.replace(PLACEHOLDER, (_match, kind: string, number: string) => {
    if (kind === "H") return "EOF";
    const substitution = scope.scanned.substitutions[Number(number)];
    if (substitution === undefined) return "";
    switch (substitution.kind) {
      case "command":
        return `$(${substitution.body})`;
      case "backtick":
        return `\`${substitution.body}\``;
      case "process-in":
        return `<(${substitution.body})`;
      case "process-out":
        return `>(${substitution.body})`;
    }
  });
}

/** True when the word holds `>(…)` whose command runs its input as code (`tee >(sh)`). */
function feedsInterpreter(word: string, scope: Scope): boolean {
  for (const match of word.matchAll(PLACEHOLDER)) {
    const index = Number(match[2]);
    if (match[1] === "S" && scope.scanned.substitutions[index]?.kind === "process-out" && scope.substitutions[index]?.runsStandardInput === true) return true;
  }
  return false;
}

function downloadsIn(word: string, scope: Scope): boolean {
  for (const match of word.matchAll(PLACEHOLDER)) {
    if (match[1] === "S" && scope.substitutions[Number(match[2])]?.downloads === true) return true;
  }
  if (scope.downloadedVariables.size > 0) {
    for (const match of word.matchAll(/\$([A-Za-z_][A-Za-z0-9_]*)/g)) if (scope.downloadedVariables.has(match[1] as string)) return true;
  }
  return false;
}

function expandVariables(word: string, variables: ReadonlyMap<string, string>): string {
  if (variables.size === 0 || !word.includes("$")) return word;
  return word.replace(/\$([A-Za-z_][A-Za-z0-9_]*)/g, (match, name: string) => variables.get(name) ?? match);
}

function recordAssignment(assignment: string, scope: Scope): void {
  const equals = assignment.indexOf("=");
  const name = assignment.slice(0, equals).replace(/\+$/, "");
  const value = assignment.slice(equals + 1);
  if (downloadsIn(value, scope)) scope.downloadedVariables.add(name);
  else scope.downloadedVariables.delete(name);
  // Long values are forgotten rather than substituted: `a=$a$a` repeated would double without end.
  if (value.includes(PLACEHOLDER_MARK) || assignment[equals - 1] === "+" || value.length > 4_096) scope.variables.delete(name);
  else scope.variables.set(name, value);
}

function analyzePipeline(pipeline: Pipeline, scope: Scope): StageResult[] {
  const stages = pipeline.map((command) => analyzeSimpleCommand(command, scope));
  if (stages.some((stage) => stage.downloads)) scope.downloads = true;
  const text = pipeline.map((command) => renderCommand(command, scope)).join(" | ");

  const firstDownload = stages.findIndex((stage) => stage.downloads);
  if (firstDownload >= 0) {
    const downstream = stages.slice(firstDownload);
    const runner = downstream.find((stage, index) => index > 0 && stage.runsStandardInput);
    if (runner !== undefined || downstream.some((stage) => stage.feedsInterpreter)) {
      scope.findings.push({
        rule: "forbidden:download-to-interpreter",
        reason: `Code downloaded from the network is piped straight into ${runner?.invocation?.name ?? "an interpreter"}.`,
        command: text,
      });
    }
  }

  if (scope.settings.decisionsVersion >= 4) judgeFedText(pipeline, stages, scope);

  // `echo "DROP TABLE x" | psql`: the SQL arrives on standard input.
  const sqlClient = stages.findIndex((stage) => stage.invocation !== undefined && SQL_CLIENTS.has(stage.invocation.name));
  if (sqlClient > 0) {
    const fed = stages.slice(0, sqlClient).some((stage) => stage.invocation?.args.some((arg) => SQL_DESTRUCTIVE.test(arg)) === true);
    if (fed) scope.findings.push({ rule: "approval:sql-drop", reason: "SQL that drops or truncates data is piped into a database client.", command: text });
  }
  return stages;
}

/**
 * Decisions version 4: text printed by one stage and run by the next (`echo 'rm -rf x' | sh`,
 * `printf … | bash`, `cat <<EOF | python`) is judged as the code it is. Text that is not a literal
 * leaves the runner `unknown`, as it was.
 */
function judgeFedText(pipeline: Pipeline, stages: readonly StageResult[], scope: Scope): void {
  for (let index = 1; index < stages.length; index += 1) {
    const runner = stages[index]?.invocation;
    const feeder = stages[index - 1]?.invocation;
    if (runner === undefined || feeder === undefined || stages[index]?.runsStandardInput !== true) continue;
    const text = literalOutput(feeder);
    if (text === undefined) continue;
    const family = runner.name === "source" || runner.name === "." ? "shell" : interpreterFamily(runner.name);
    if (family === undefined) continue;
    const command = renderCommand(pipeline[index] as SimpleCommand, scope);
    runFedCode(family, runner.name, text, {
      report: (rule, reason) => scope.findings.push({ rule, reason, command }),
      analyzeScript: (code) => {
        const analysis = analyzeScript(code, scope.settings, scope.depth + 1);
        scope.findings.push(...analysis.findings);
        return analysis;
      },
    });
  }
}

function renderCommand(command: SimpleCommand, scope: Scope): string {
  const parts = command.words.map((word) => render(word, scope));
  for (const redirection of command.redirections) parts.push(`${redirection.operator} ${render(redirection.target ?? "", scope)}`.trim());
  return parts.join(" ");
}

function pathContext(scope: Scope): PathContext {
  return {
    workspaceRoot: scope.settings.workspaceRoot,
    tempDirs: scope.settings.tempDirs,
    homeDir: scope.settings.homeDir,
    cwd: scope.cwd,
  };
}

/** Commands whose arguments are not read as files, so a substitution among them changes nothing. */
const ARGUMENTS_NOT_READ = new Set(["echo", "printf", "test", "[", "[[", "true", "false", "sleep", "seq", "expr", "basename", "dirname", "date"]);

function analyzeSimpleCommand(command: SimpleCommand, scope: Scope): StageResult {
  const local: Finding[] = [];
  const text = renderCommand(command, scope);
  const report = (rule: CommandSafetyRuleId, reason: string): void => {
    local.push({ rule, reason, command: text });
  };
  const expand = (word: string): string => expandVariables(word, scope.variables);
  const words = command.words.map(expand);

  const heredocs: Heredoc[] = [];
  const herestrings: string[] = [];
  const inputFiles: string[] = [];
  const redirections = command.redirections.map((redirection) => ({
    operator: redirection.operator,
    target: redirection.target === undefined ? undefined : expand(redirection.target),
  }));
  let writes = false;
  for (const { operator, target } of redirections) {
    if (target === undefined) continue;
    if (operator === "<<" || operator === "<<-") {
      const marker = /^\u0000H(\d+)\u0000$/.exec(target);
      const heredoc = marker ? scope.scanned.heredocs[Number(marker[1])] : undefined;
      if (heredoc !== undefined) heredocs.push(heredoc);
    } else if (operator === "<<<") herestrings.push(target);
    else if (operator === "<") inputFiles.push(target);
    else if (WRITE_REDIRECTIONS.has(operator)) {
      const duplicate = operator === ">&" && /^(?:\d+-?|-)$/.test(target);
      if (!duplicate && !isHarmlessSink(target)) writes = true;
    }
  }

  let nestedDownloads = false;
  const host: RuleHost = {
    paths: pathContext(scope),
    report,
    analyzeScript: (script) => {
      const analysis = analyzeScript(script, scope.settings, scope.depth + 1);
      local.push(...analysis.findings);
      if (analysis.downloads) nestedDownloads = true;
      return analysis;
    },
    analyzeWords: (nested) => {
      const stage = analyzeSimpleCommand({ words: nested, redirections: [] }, scope);
      if (stage.downloads) nestedDownloads = true;
    },
    downloads: (word) => downloadsIn(word, scope),
    render: (word) => render(word, scope),
    decisionsVersion: scope.settings.decisionsVersion,
    fedText: (word) => fedText(word, scope),
  };
  checkRedirections(redirections, host);
  const since4 = scope.settings.decisionsVersion >= 4;
  if (since4) {
    checkRedirectionsOutside(redirections, host);
    checkReverseShellWords([...words, ...redirections.map((redirection) => redirection.target ?? "")], host);
  }

  const unwrapped = unwrap(words, report, scope.settings.decisionsVersion);
  for (const script of unwrapped.scripts) host.analyzeScript(render(script, scope));
  for (const assignment of unwrapped.assignments) recordAssignment(assignment, scope);
  const wordsDownload = [...words, ...inputFiles, ...herestrings].some((word) => downloadsIn(word, scope));
  const finish = (result: Omit<StageResult, "downloads" | "feedsInterpreter"> & { downloads?: boolean; feedsInterpreter?: boolean }): StageResult => {
    scope.findings.push(...local);
    return { ...result, downloads: result.downloads === true || nestedDownloads || wordsDownload, feedsInterpreter: result.feedsInterpreter === true };
  };
  const primary = (rule: CommandSafetyRuleId, reason: string): void => {
    if (!local.some((finding) => severityOf(verdictOfRule(finding.rule)) >= severityOf("needs-approval"))) report(rule, reason);
  };

  if (unwrapped.lookupOnly) {
    primary(writes ? "unknown" : "safe:read-only", writes ? "It writes a file through a redirection; the tool's risk class decides." : "`command -v` only looks a command up.");
    return finish({ invocation: undefined, runsStandardInput: false });
  }
  const head = unwrapped.words[0];
  if (head === undefined) {
    primary("unknown", "There is no command here, only assignments or redirections; the tool's risk class decides.");
    return finish({ invocation: undefined, runsStandardInput: false });
  }
  if (isDynamicName(head) && downloadsIn(head, scope)) report("forbidden:download-to-interpreter", "The command to run is the output of a download.");
  if (since4) {
    const dynamic = dynamicCommand(command.words, words, unwrapped.words, scope);
    if (dynamic !== undefined) {
      report("contain:dynamic-command", dynamic.reason);
      if (dynamic.resolved !== undefined) host.analyzeWords(dynamic.resolved);
      if (dynamic.final) return finish({ invocation: undefined, runsStandardInput: false });
    }
  } else if (isDynamicName(head)) {
    report("approval:dynamic-command", `The command name ${brief(render(head, scope))} is only known when it runs.`);
    return finish({ invocation: undefined, runsStandardInput: false });
  }

  const invocation: Invocation = {
    name: commandName(head),
    args: unwrapped.words.slice(1),
    viaXargs: unwrapped.viaXargs,
    redirections,
    heredocs,
    herestrings,
    inputFiles,
  };
  if (since4 && invocation.name === "alias") defineAliases(invocation.args, host, scope);
  const result = checkCommand(invocation, host);
  if (result.cwd !== undefined) scope.cwd = result.cwd;
  if (["export", "declare", "typeset", "local", "readonly"].includes(invocation.name)) {
    for (const arg of invocation.args) if (ASSIGNMENT.test(arg)) recordAssignment(arg, scope);
  }

  if (!result.transparent || writes) {
    const shownName = brief(invocation.name);
    let safe = result.safe;
    let reason = `\`${shownName}\` is not in the catalogue; the tool's risk class decides.`;
    if (safe !== undefined && writes) {
      safe = undefined;
      reason = `\`${shownName}\` writes a file through a redirection; the tool's risk class decides.`;
    } else if (safe !== undefined && unwrapped.viaXargs) {
      safe = undefined;
      reason = `\`${shownName}\` gets its arguments from xargs, which cannot be checked; the tool's risk class decides.`;
    } else if (safe === "safe:read-only" && !ARGUMENTS_NOT_READ.has(invocation.name) && !DOES_NOT_READ.has(invocation.name) && invocation.args.some((arg) => arg.includes(PLACEHOLDER_MARK))) {
      safe = undefined;
      reason = `\`${shownName}\` reads files named only when it runs; the tool's risk class decides.`;
    } else if (invocation.name === "rm" || (invocation.name === "find" && invocation.args.includes("-delete"))) {
      reason = `\`${shownName}\` deletes nothing outside the workspace and the temporary directory; the tool's risk class decides.`;
    }
    const outside = since4 && safe === "safe:read-only" ? readOutside(invocation, host.paths) : undefined;
    if (outside !== undefined) primary("contain:read-outside", `\`${shownName}\` reads ${brief(render(outside, scope))}, outside the workspace and the temporary directory; it is not known-safe.`);
    else if (safe === "safe:read-only") primary(safe, `\`${shownName}\` only reads.`);
    else if (safe === "safe:version") primary(safe, `\`${shownName}\` only prints its version.`);
    else if (safe === "safe:test-runner") primary(safe, `\`${shownName}\` runs the project's tests.`);
    else primary("unknown", reason);
  }
  const feeds = [...invocation.args, ...redirections.map((redirection) => redirection.target ?? "")].some((word) => feedsInterpreter(word, scope));
  return finish({ invocation, downloads: result.downloads === true, runsStandardInput: result.runsStandardInput === true, feedsInterpreter: feeds });
}

/** The text a `<(…)` word produces when its command prints a literal (`<(echo 'ls')`). */
function fedText(word: string, scope: Scope): string | undefined {
  const match = /^\u0000S(\d+)\u0000$/.exec(word);
  const substitution = match === null ? undefined : scope.scanned.substitutions[Number(match[1])];
  return substitution?.kind === "process-in" ? literalScriptOutput(substitution.body) : undefined;
}

/** A `$(…)` or backtick word with each substitution replaced by the literal it prints, or `undefined`. */
function resolvedSubstitutions(word: string, scope: Scope): string | undefined {
  const resolved = word.replace(PLACEHOLDER, (match, kind: string, number: string) => {
    const substitution = kind === "S" ? scope.scanned.substitutions[Number(number)] : undefined;
    if (substitution?.kind !== "command" && substitution?.kind !== "backtick") return match;
    return literalScriptOutput(substitution.body)?.trim() ?? match;
  });
  return resolved.includes(PLACEHOLDER_MARK) || resolved.includes("$") ? undefined : resolved;
}

interface DynamicCommand {
  reason: string;
  /** The words the command resolves to, to be judged in its place. */
  resolved?: string[];
  /** Nothing more can be said about the command itself. */
  final: boolean;
}

/**
 * Decisions version 4 (docs/security.md#containment-the-classifier-decides-what-may-run-outside-the-sandbox): a command name only known at run time, from a variable or
 * an alias, is not known-safe (`contain:dynamic-command`), and what it can be seen to resolve to is
 * judged too: `IFS=,; c=rm,-rf,x; $c` runs `rm -rf x`, `$(echo rm) -rf x` runs `rm -rf x`.
 */
function dynamicCommand(written: readonly string[], expanded: readonly string[], unwrapped: readonly string[], scope: Scope): DynamicCommand | undefined {
  const [head = "", ...rest] = unwrapped;
  const shown = brief(render(head, scope));
  if (isDynamicName(head)) {
    const resolved = resolvedSubstitutions(head, scope);
    const reason = `The command name ${shown} is only known when it runs.`;
    return { reason, final: true, ...(resolved === undefined ? {} : { resolved: [...resolved.split(/\s+/).filter(Boolean), ...rest] }) };
  }
  if (scope.aliases.has(head)) return { reason: `\`${shown}\` is an alias, defined earlier in the command.`, final: true };
  const offset = expanded.length - unwrapped.length;
  const fromVariable = offset >= 0 && unwrapped.every((word, index) => word === expanded[offset + index]) && written[offset] !== head;
  if (!fromVariable) return undefined;
  const separators = scope.variables.get("IFS") ?? " \t\n";
  const parts = [...head].map((character) => (separators.includes(character) ? " " : character)).join("").split(" ").filter(Boolean);
  const reason = `The command name ${shown} comes from a variable.`;
  return parts.length > 1 ? { reason, resolved: [...parts, ...rest], final: true } : { reason, final: false };
}

/** `alias NAME='VALUE'`: the value is judged as a script, and later uses of NAME as dynamic commands. */
function defineAliases(args: readonly string[], host: RuleHost, scope: Scope): void {
  for (const arg of args) {
    const equals = arg.indexOf("=");
    if (equals <= 0) continue;
    scope.aliases.add(arg.slice(0, equals));
    host.analyzeScript(render(arg.slice(equals + 1), scope));
  }
}

function decide(findings: readonly Finding[]): CommandVerdict {
  let decisive: Finding | undefined;
  for (const finding of findings) {
    const severity = severityOf(verdictOfRule(finding.rule));
    const current = decisive === undefined ? -1 : severityOf(verdictOfRule(decisive.rule));
    // A named rule with the plain `unknown` verdict (`contain:…`, decisions version 4) says more than `unknown`.
    const moreSpecific = severity === current && decisive?.rule === "unknown" && finding.rule !== "unknown";
    if (severity > current || moreSpecific) decisive = finding;
  }
  if (decisive === undefined) {
    return { verdict: "unknown", rule: "unknown", reason: "There is no command to classify; the tool's risk class decides." };
  }
  const verdict: CommandVerdict = { verdict: verdictOfRule(decisive.rule), rule: decisive.rule, reason: decisive.reason };
  if (decisive.command !== undefined) verdict.command = decisive.command;
  return verdict;
}

function settingsOf(options: ClassifyCommandOptions): Settings {
  const tempDirs = [options.tempDir ?? os.tmpdir(), "/tmp", "/var/tmp", "/private/tmp", "/private/var/tmp"]
    .filter((directory) => directory.startsWith("/"))
    .map((directory) => path.posix.normalize(directory).replace(/(?<=.)\/+$/, ""))
    .filter((directory) => directory !== "/");
  let homeDir: string | undefined = options.homeDir;
  if (homeDir === undefined) {
    try {
      homeDir = os.homedir();
    } catch {
      homeDir = undefined;
    }
  }
  return {
    workspaceRoot: options.workspaceRoot === undefined ? undefined : path.posix.normalize(options.workspaceRoot),
    tempDirs: [...new Set(tempDirs)],
    homeDir: homeDir !== undefined && homeDir.startsWith("/") ? path.posix.normalize(homeDir) : undefined,
    budget: { scripts: 0 },
    decisionsVersion: options.decisionsVersion ?? LATEST_COMMAND_SAFETY_VERSION,
  };
}

/**
 * Classify shell command text. Pure and deterministic for given options; throws only a
 * `TypeError` when `text` is not a string. The verdict of a line is its most severe simple
 * command's (forbidden > needs-approval > unknown > known-safe): it is known-safe only when every
 * simple command is. Text a shell would reject needs approval (`approval:unparsable`), unless
 * something in it is forbidden anyway.
 *
 * @example
 * classifyCommand("ls && rm -rf /").rule                  // "forbidden:rm-rf-root"
 * classifyCommand("git push --force origin main").verdict // "needs-approval"
 * classifyCommand("rm -rf ./build").verdict               // "unknown": the tool's class decides
 * classifyCommand("git status").verdict                   // "known-safe"
 */
export function classifyCommand(text: string, options: ClassifyCommandOptions = {}): CommandVerdict {
  if (typeof text !== "string") throw new TypeError("classifyCommand expects the command text as a string");
  const version = options.decisionsVersion;
  if (version !== undefined && !(Number.isInteger(version) && version >= 1)) {
    throw new TypeError("classifyCommand expects decisionsVersion to be a whole number from 1 on");
  }
  if (text.length > MAX_LENGTH) {
    return { verdict: "needs-approval", rule: "approval:unparsable", reason: `The command is longer than ${MAX_LENGTH} characters, more than is analysed.` };
  }
  const settings = settingsOf(options);
  try {
    const visible = visibleCommandText(text);
    const findings = analyzeScript(visible, settings, 0).findings;
    // What a shell would run can differ from what a terminal shows (see normalize.ts).
    const executed = executedCommandText(text);
    if (executed !== visible) {
      settings.budget.scripts = 0;
      findings.push(...analyzeScript(executed, settings, 0).findings);
    }
    return decide(findings);
  } catch {
    // Not reachable by any input the property tests found; if it ever is, a person decides.
    return { verdict: "needs-approval", rule: "approval:unparsable", reason: "The command could not be analysed." };
  }
}
