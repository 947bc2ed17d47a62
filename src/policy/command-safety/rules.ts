/**
 * The per-command rules of the catalogue (DESIGN.md §8.1): given one resolved simple command (its
 * wrappers already looked through), report what it does that is forbidden or needs approval, and
 * whether it is known to be safe.
 */
import path from "node:path";
import type { CommandSafetyRuleId } from "./catalogue.js";
import { checkAttacks } from "./attacks.js";
import { checkWritesOutside } from "./containment.js";
import { runFedCode, sourceSince4 } from "./literal.js";
import { codeSource, inlineCodeIsDangerous, interpreterFamily } from "./interpreters.js";
import type { Redirection } from "./parse.js";
import { WRITE_REDIRECTIONS } from "./parse.js";
import type { PathClass, PathContext, WorkingDirectory } from "./paths.js";
import { classifyPath, isBlockDevice, isCredentialPath, isDynamic, isSysrqTrigger } from "./paths.js";
import type { Heredoc } from "./scanner.js";
import { PLACEHOLDER_MARK } from "./scanner.js";
import { brief, firstOperand, hasLong, hasLongAbbreviated, operands, optionValues, shortLetters } from "./words.js";

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
  /** The decisions version the command is judged under (DESIGN.md §16); rules added later branch on it. */
  decisionsVersion: number;
  /** The text a `<(…)` word produces when it is a literal (`<(echo 'ls')`), else `undefined`. */
  fedText(word: string): string | undefined;
}

/** `hasLong`, and from decisions version 4 on any GNU abbreviation of the options too (`--rec`). */
function hasOption(host: RuleHost, args: readonly string[], ...names: string[]): boolean {
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

// ── forbidden targets ────────────────────────────────────────────────────────────────────────

const RM_RULE: Partial<Record<PathClass, CommandSafetyRuleId>> = {
  root: "forbidden:rm-rf-root",
  home: "forbidden:rm-rf-home",
  system: "forbidden:rm-rf-system-dir",
  outside: "approval:rm-rf-outside",
  unknown: "approval:rm-rf-outside",
};

const RM_REASON: Partial<Record<PathClass, string>> = {
  root: "deletes the whole filesystem",
  home: "deletes a home directory",
  system: "deletes a system directory",
  outside: "deletes a directory outside the workspace and the temporary directory",
  unknown: "deletes a directory only known when it runs",
};

/** Marks a target that arrives at run time (from `xargs`). */
const RUN_TIME_TARGET = `${PLACEHOLDER_MARK}stdin${PLACEHOLDER_MARK}`;

function reportRecursiveDelete(host: RuleHost, targets: readonly string[], verb: string): void {
  for (const target of targets) {
    const pathClass = classifyPath(target, host.paths);
    const rule = RM_RULE[pathClass];
    if (rule === undefined) continue;
    const shown = target === RUN_TIME_TARGET ? "arguments from standard input" : brief(host.render(target));
    host.report(rule, `${verb} ${shown} ${RM_REASON[pathClass] ?? "deletes it"}.`);
  }
}

function checkRm(invocation: Invocation, host: RuleHost): void {
  const letters = shortLetters(invocation.args);
  const recursive = letters.has("r") || letters.has("R") || hasOption(host, invocation.args, "--recursive");
  if (hasOption(host, invocation.args, "--no-preserve-root")) {
    host.report("forbidden:rm-rf-root", "`rm --no-preserve-root` exists only to delete the whole filesystem.");
  }
  if (!recursive) return;
  const targets = operands(invocation.args);
  if (invocation.viaXargs) targets.push(RUN_TIME_TARGET);
  reportRecursiveDelete(host, targets, "`rm -r` of");
}

// ── find ─────────────────────────────────────────────────────────────────────────────────────

const FIND_ACTIONS = new Set(["-exec", "-execdir", "-ok", "-okdir"]);
const FIND_WRITES = new Set(["-delete", "-fprint", "-fprint0", "-fprintf", "-fls"]);
/** Expressions that do not narrow what `find` visits: with only these, `-delete` deletes everything. */
const FIND_UNFILTERED = new Set(["-delete", "-depth", "-xdev", "-mount", "-mindepth", "-maxdepth", "-print", "-ignore_readdir_race", "-noleaf", "-follow", "-d"]);

function checkFind(invocation: Invocation, host: RuleHost): CheckResult {
  const args = invocation.args;
  let firstExpression = args.findIndex((arg) => arg.startsWith("-") || arg === "(" || arg === "!" || arg === ")");
  if (firstExpression < 0) firstExpression = args.length;
  const roots = args.slice(0, firstExpression);
  if (roots.length === 0) roots.push(".");
  const expression = args.slice(firstExpression);
  const tests: string[] = [];
  for (let index = 0; index < expression.length; index += 1) {
    const arg = expression[index] as string;
    if (FIND_ACTIONS.has(arg)) {
      const end = expression.findIndex((word, at) => at > index && (word === ";" || word === "+"));
      index = end < 0 ? expression.length : end;
    } else if (arg.startsWith("-")) tests.push(arg);
  }
  const filtered = tests.some((test) => !FIND_UNFILTERED.has(test));
  // Without a filter `find ROOT -delete` and `find ROOT -exec rm -rf {} +` remove all of ROOT's
  // children; with one they remove some entries somewhere below ROOT.
  const each = (root: string): string => `${root === "/" ? "" : root.replace(/\/+$/, "")}/${filtered ? "x" : "*"}`;
  let safe = true;
  for (let index = 0; index < expression.length; index += 1) {
    const arg = expression[index] as string;
    if (FIND_WRITES.has(arg)) safe = false;
    if (arg === "-delete") {
      reportRecursiveDelete(host, roots.map(each), "`find -delete` under");
    }
    if (FIND_ACTIONS.has(arg)) {
      safe = false;
      const end = expression.findIndex((word, at) => at > index && (word === ";" || word === "+"));
      const words = expression.slice(index + 1, end < 0 ? expression.length : end);
      const expanded = words.flatMap((word) => (word === "{}" ? roots.map(each) : [word.replaceAll("{}", RUN_TIME_TARGET)]));
      if (expanded.length > 0) host.analyzeWords(expanded);
      index = end < 0 ? expression.length : end;
    }
  }
  return safe ? { safe: "safe:read-only" } : {};
}

// ── kill ─────────────────────────────────────────────────────────────────────────────────────

function checkKill(invocation: Invocation, host: RuleHost): void {
  const args = invocation.args;
  const pids: string[] = [];
  let index = 0;
  let signalSeen = false;
  while (index < args.length) {
    const arg = args[index] as string;
    if (arg === "--") {
      pids.push(...args.slice(index + 1));
      break;
    }
    if (arg === "-l" || arg === "-L" || arg === "--list" || arg === "--table") return;
    if (arg === "-s" || arg === "-n" || arg === "--signal") {
      signalSeen = true;
      index += 2;
      continue;
    }
    // The first `-X` is the signal when a PID follows it; `kill -1` alone reads as PID -1.
    if (!signalSeen && arg.startsWith("-") && index === 0 && args.length > 1) {
      signalSeen = true;
      index += 1;
      continue;
    }
    pids.push(arg);
    index += 1;
  }
  if (pids.includes("-1")) host.report("forbidden:kill-all", "`kill` with PID -1 signals every process the user may signal.");
}

function checkUserKill(invocation: Invocation, host: RuleHost): void {
  const byUser = invocation.args.some((arg) => /^-[A-Za-z0-9]*[uU]/.test(arg) || /^--(?:e?uid|user)(?:=|$)/.test(arg));
  if (byUser) host.report("forbidden:kill-all", `\`${invocation.name} -u\` kills every process of that user.`);
}

// ── permissions, moves, devices ──────────────────────────────────────────────────────────────

function isSystemTarget(target: string, host: RuleHost): boolean {
  const pathClass = classifyPath(target, host.paths);
  return pathClass === "root" || pathClass === "system";
}

function checkChmodFamily(invocation: Invocation, host: RuleHost): void {
  const args = invocation.args;
  const recursive = hasOption(host, args, "--recursive") || args.some((arg) => /^-[cfvhHLPR]*R[cfvhHLPR]*$/.test(arg));
  if (!recursive) return;
  const words = args.filter((arg) => !/^-[cfvhHLPR]+$/.test(arg) && !arg.startsWith("--"));
  const targets = hasLong(args, "--reference") ? words : words.slice(1);
  const system = targets.find((target) => isSystemTarget(target, host));
  if (system === undefined) return;
  if (invocation.name === "chmod") {
    host.report("forbidden:chmod-recursive-system", `\`chmod -R\` of ${brief(system)} changes the permissions of the whole system.`);
  } else {
    host.report("forbidden:chown-recursive-system", `\`${invocation.name} -R\` of ${brief(system)} changes the ownership of the whole system.`);
  }
}

function checkMv(invocation: Invocation, host: RuleHost): void {
  const spec = { short: "tS", long: ["--target-directory", "--suffix"] };
  const words = operands(invocation.args, spec);
  const explicitTarget = optionValues(invocation.args, ["-t"], ["--target-directory"]).length > 0;
  const sources = explicitTarget ? words : words.slice(0, -1);
  const system = sources.find((source) => isSystemTarget(source, host));
  if (system !== undefined) host.report("forbidden:mv-root", `\`mv\` of ${brief(system)} moves the system out from under itself.`);
}

/**
 * Redirections into a disk or `/proc/sysrq-trigger`, whatever the command (there may be none:
 * `> /dev/sda`).
 *
 * @example
 * checkRedirections([{ operator: ">", target: "/dev/sda" }], host) // reports forbidden:write-block-device
 */
export function checkRedirections(redirections: readonly Redirection[], host: RuleHost): void {
  for (const redirection of redirections) {
    if (redirection.target !== undefined && WRITE_REDIRECTIONS.has(redirection.operator)) {
      reportDeviceWrite(host, redirection.target, "Writing to");
    }
  }
}

function reportDeviceWrite(host: RuleHost, target: string, how: string): void {
  if (isBlockDevice(target)) host.report("forbidden:write-block-device", `${how} ${brief(target)} overwrites a disk.`);
  if (isSysrqTrigger(target)) host.report("forbidden:sysrq-trigger", `${how} /proc/sysrq-trigger can reboot or crash the machine.`);
}

function checkDd(invocation: Invocation, host: RuleHost): void {
  for (const arg of invocation.args) {
    if (!arg.startsWith("of=")) continue;
    const target = arg.slice(3);
    if (isBlockDevice(target)) host.report("forbidden:dd-disk", `\`dd of=${brief(target)}\` overwrites a disk.`);
    if (isSysrqTrigger(target)) host.report("forbidden:sysrq-trigger", "`dd` into /proc/sysrq-trigger can reboot or crash the machine.");
  }
}

// ── privileges and accounts ──────────────────────────────────────────────────────────────────

const USER_ACCOUNT_COMMANDS = new Set([
  "passwd",
  "chpasswd",
  "usermod",
  "useradd",
  "userdel",
  "adduser",
  "deluser",
  "groupadd",
  "groupdel",
  "groupmod",
  "gpasswd",
  "visudo",
  "chsh",
  "vipw",
]);

// ── git ──────────────────────────────────────────────────────────────────────────────────────

const GIT_GLOBAL = { short: "Cc", long: ["--git-dir", "--work-tree", "--namespace", "--exec-path", "--config-env", "--super-prefix"] };
/** `git -c KEY=VALUE` keys whose value git runs as a command. */
const GIT_COMMAND_KEYS = /^(?:core\.(?:pager|fsmonitor|sshcommand|editor|hookspath|askpass)|sequence\.editor|diff\.external|gpg\.program|credential\.helper|(?:diff|merge|filter)\..*\.(?:command|textconv|clean|smudge|process|driver))$/i;
const GIT_READ_ONLY = new Set(["status", "diff", "log", "show", "rev-parse", "ls-files", "blame", "ls-tree", "cat-file", "describe", "shortlog"]);
const GIT_BRANCH_WRITES = new Set(["-d", "-D", "--delete", "-m", "-M", "--move", "-c", "-C", "--copy", "-f", "--force", "-u", "--set-upstream-to", "--unset-upstream", "--edit-description", "--track", "--no-track"]);

function checkGit(invocation: Invocation, host: RuleHost): CheckResult {
  const args = invocation.args;
  const start = firstOperand(args, GIT_GLOBAL);
  const globals = args.slice(0, start);
  if (globals.includes("--version") && start >= args.length) return { safe: "safe:version" };
  let configured = false;
  for (const setting of optionValues(globals, ["-c"], [])) {
    configured = true;
    const [key = "", value = ""] = setting.split(/=(.*)/s, 2);
    if (/^alias\./i.test(key) && value.startsWith("!")) host.analyzeScript(host.render(value.slice(1)));
    else if (GIT_COMMAND_KEYS.test(key) && value !== "") host.analyzeScript(host.render(value));
  }
  if (globals.some((arg) => arg.startsWith("--config-env") || arg.startsWith("--exec-path"))) configured = true;
  const subcommand = args[start];
  const rest = args.slice(start + 1);
  switch (subcommand) {
    case "push": {
      const letters = shortLetters(rest, "o");
      const force =
        letters.has("f") ||
        hasOption(host, rest, "--force", "--force-with-lease", "--force-if-includes") ||
        operands(rest, { short: "o", long: ["--push-option", "--repo", "--receive-pack", "--exec"] }).some((word) => word.startsWith("+"));
      if (force) host.report("approval:git-force-push", "`git push --force` rewrites history others may have pulled.");
      return {};
    }
    case "reset":
      if (hasOption(host, rest, "--hard")) host.report("approval:git-reset-hard", "`git reset --hard` discards uncommitted changes for good.");
      return {};
    case "clean": {
      const letters = shortLetters(rest, "e");
      const force = letters.has("f") || hasOption(host, rest, "--force");
      const dryRun = letters.has("n") || hasLong(rest, "--dry-run");
      if (force && !dryRun) host.report("approval:git-clean", "`git clean -f` deletes untracked files, which git cannot bring back.");
      return {};
    }
    case "branch": {
      const writes = rest.some((arg) => GIT_BRANCH_WRITES.has(arg) || (/^-[a-zA-Z]*[dDmMcCfu]/.test(arg) && !arg.startsWith("--")));
      const listing = rest.some((arg) => arg === "-l" || arg === "--list");
      const names = operands(rest, { long: ["--contains", "--no-contains", "--merged", "--no-merged", "--points-at", "--sort", "--format", "--color"] });
      return !configured && !writes && (listing || names.length === 0) ? { safe: "safe:read-only" } : {};
    }
    default: {
      if (subcommand === undefined || !GIT_READ_ONLY.has(subcommand) || configured) return {};
      const writesFile =
        rest.some((arg) => arg === "--output" || arg.startsWith("--output=") || arg === "-o" || arg === "--ext-diff" || arg === "--open-files-in-pager") ||
        (host.decisionsVersion >= 4 && hasLongAbbreviated(rest, "--output", "--ext-diff", "--open-files-in-pager"));
      return writesFile ? {} : { safe: "safe:read-only" };
    }
  }
}

// ── package managers and infrastructure ──────────────────────────────────────────────────────

function checkPackageRemoval(invocation: Invocation, host: RuleHost): void {
  const { name, args } = invocation;
  const verb = args[firstOperand(args, { short: "oct", long: ["--option", "--config-file", "--target-release", "--installroot", "--releasever"] })];
  const globalInstall = hasOption(host, args, "--global") || args.includes("-g") || args.includes("--location=global");
  let removes = false;
  switch (name) {
    case "apt":
    case "apt-get":
    case "aptitude":
      removes = verb === "remove" || verb === "purge" || verb === "autoremove" || verb === "autopurge";
      break;
    case "yum":
    case "dnf":
    case "microdnf":
      removes = verb === "remove" || verb === "erase" || verb === "autoremove";
      break;
    case "zypper":
      removes = verb === "remove" || verb === "rm";
      break;
    case "pacman":
      removes = args.some((arg) => /^-R[a-z]*$/.test(arg) || arg === "--remove");
      break;
    case "apk":
      removes = verb === "del";
      break;
    case "dpkg":
      removes = args.some((arg) => /^-[rP]$/.test(arg) || arg === "--remove" || arg === "--purge");
      break;
    case "rpm":
      removes = args.some((arg) => /^-e/.test(arg) || arg === "--erase");
      break;
    case "pip":
    case "pip3":
    case "pipx":
    case "uv":
    case "gem":
    case "cargo":
    case "conda":
    case "mamba":
      removes = verb === "uninstall" || ((name === "conda" || name === "mamba") && verb === "remove") || (name === "uv" && args.includes("pip") && args.includes("uninstall"));
      break;
    case "npm":
    case "pnpm":
    case "bun":
      removes = globalInstall && ["uninstall", "un", "unlink", "remove", "rm", "r"].includes(verb ?? "");
      break;
    case "yarn":
      removes = verb === "global" && ["remove", "rm"].includes(args[firstOperand(args) + 1] ?? "");
      break;
    case "brew":
    case "port":
    case "snap":
    case "flatpak":
    case "choco":
    case "winget":
      removes = ["uninstall", "remove", "rm"].includes(verb ?? "");
      break;
  }
  if (removes) host.report("approval:package-removal", `\`${name}\` removes installed packages from the system.`);
}

const PACKAGE_MANAGERS = new Set([
  "apt", "apt-get", "aptitude", "yum", "dnf", "microdnf", "zypper", "pacman", "apk", "dpkg", "rpm",
  "pip", "pip3", "pipx", "uv", "gem", "cargo", "conda", "mamba", "npm", "pnpm", "bun", "yarn",
  "brew", "port", "snap", "flatpak", "choco", "winget",
]);

const DOCKER_GLOBAL = { short: "Hcl", long: ["--host", "--context", "--config", "--log-level", "--tlscacert", "--tlscert", "--tlskey"] };
const KUBECTL_GLOBAL = {
  short: "nsl",
  long: ["--namespace", "--context", "--kubeconfig", "--server", "--cluster", "--user", "--token", "--as", "--as-group", "--request-timeout", "--selector"],
};

function checkDocker(invocation: Invocation, host: RuleHost): void {
  const words = operands(invocation.args, DOCKER_GLOBAL);
  if (words[0] === "prune" || words[1] === "prune") {
    host.report("approval:docker-prune", `\`${invocation.name} prune\` deletes containers, images, volumes or caches for good.`);
  }
}

function checkKubectl(invocation: Invocation, host: RuleHost): void {
  if (invocation.args[firstOperand(invocation.args, KUBECTL_GLOBAL)] === "delete") {
    host.report("approval:kubectl-delete", "`kubectl delete` removes resources from a shared cluster.");
  }
}

function checkTerraform(invocation: Invocation, host: RuleHost): void {
  const args = invocation.args;
  const verb = args[firstOperand(args)];
  const destroys = verb === "destroy" || (verb === "apply" && args.some((arg) => arg === "-destroy" || arg === "--destroy"));
  if (destroys) host.report("approval:terraform-destroy", `\`${invocation.name} destroy\` tears down real infrastructure.`);
}

// ── SQL ──────────────────────────────────────────────────────────────────────────────────────

/** Database clients whose arguments, heredocs and piped input are read as SQL. */
export const SQL_CLIENTS: ReadonlySet<string> = new Set(["psql", "mysql", "mariadb", "sqlite3", "sqlite", "duckdb", "sqlcmd", "clickhouse-client", "cockroach"]);
/** SQL that destroys data wholesale: `DROP TABLE|DATABASE|SCHEMA`, `TRUNCATE`, any case. */
export const SQL_DESTRUCTIVE = /\bdrop\s+(?:table|database|schema)\b|\btruncate\b/i;

function checkSql(invocation: Invocation, host: RuleHost): void {
  const texts = [...invocation.args, ...invocation.herestrings, ...invocation.heredocs.map((heredoc) => heredoc.body)];
  if (texts.some((text) => SQL_DESTRUCTIVE.test(text))) {
    host.report("approval:sql-drop", `\`${invocation.name}\` is given SQL that drops or truncates data.`);
  }
}

// ── credentials and secrets ──────────────────────────────────────────────────────────────────

/** Commands that name files without showing their contents (listing, testing, permissions, moving, deleting). */
export const DOES_NOT_READ: ReadonlySet<string> = new Set([
  "ls", "echo", "printf", "stat", "test", "[", "[[", "touch", "mkdir", "which", "type", "basename", "dirname",
  "realpath", "readlink", "du", "tree", "wc", "file", "chmod", "chown", "chgrp", "rm", "mv", "find", "cd",
  "pushd", "ln", "tee", "ssh", "ssh-add", "ssh-keygen", "ssh-copy-id", "export", "local", "declare", "readonly",
  "unset", "trap", "true", "false", ":",
]);
const GREP_FAMILY = new Set(["grep", "egrep", "fgrep", "rg", "ag", "ack", "git-grep"]);
const COPY_FAMILY = new Set(["cp", "scp", "rsync", "install"]);

function credentialCandidates(word: string): string[] {
  const candidates = [word];
  const equals = word.indexOf("=");
  if (equals >= 0) candidates.push(word.slice(equals + 1));
  const at = word.lastIndexOf("@");
  if (at >= 0) candidates.push(word.slice(at + 1));
  const colon = word.lastIndexOf(":");
  if (colon >= 0) candidates.push(word.slice(colon + 1));
  return candidates;
}

function checkCredentialRead(invocation: Invocation, host: RuleHost): void {
  const { name, args } = invocation;
  for (const file of invocation.inputFiles) {
    if (isCredentialPath(file, host.decisionsVersion)) {
      host.report("approval:credential-read", `\`${name}\` reads ${brief(file)}, which holds credentials.`);
      return;
    }
  }
  if (DOES_NOT_READ.has(name)) return;
  let words = args;
  if (GREP_FAMILY.has(name)) {
    // The first operand of grep is its pattern, unless -e/-f gave one; a pattern is not a file.
    const patternGiven = args.some((arg) => /^-[A-Za-z]*[ef]/.test(arg) || arg.startsWith("--regexp") || arg.startsWith("--file"));
    const patterns = new Set(optionValues(args, ["-e"], ["--regexp"]));
    const files = operands(args, { short: "efmABCdDgtTjM", long: ["--regexp", "--file", "--max-count", "--glob", "--type", "--context"] });
    words = (patternGiven ? files : files.slice(1)).filter((word) => !patterns.has(word));
    words.push(...optionValues(args, ["-f"], ["--file"]));
  } else if (COPY_FAMILY.has(name)) {
    // The last operand of a copy is where it writes, not what it reads.
    words = operands(args, { short: "tSeP", long: ["--target-directory", "--suffix"] }).slice(0, -1);
  }
  const file = words.find((word) => credentialCandidates(word).some((candidate) => isCredentialPath(candidate, host.decisionsVersion)));
  if (file !== undefined) host.report("approval:credential-read", `\`${name}\` reads ${brief(file)}, which holds credentials.`);
}

/** Variable names DESIGN.md §8.2 treats as secrets (`*_KEY`, `*_TOKEN`, `*_SECRET`, `*_PASSWORD`, …). */
const SECRET_VARIABLE = /\$\{?((?:[A-Za-z_][A-Za-z0-9_]*_)?(?:KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIALS?))(?![A-Za-z0-9_])/i;

function checkEnvironmentDump(invocation: Invocation, host: RuleHost): void {
  const { name, args } = invocation;
  if (name === "echo" || name === "printf") {
    const secret = args.map((arg) => SECRET_VARIABLE.exec(arg)?.[1]).find((variable) => variable !== undefined);
    if (secret !== undefined) host.report("approval:environment-dump", `\`${name}\` prints $${secret}, a secret.`);
  }
  const dumps =
    name === "printenv" ||
    (name === "export" && (args.length === 0 || args.every((arg) => arg === "-p"))) ||
    ((name === "declare" || name === "typeset") && args.length > 0 && args.every((arg) => /^-[px]+$/.test(arg))) ||
    (name === "set" && args.length === 0);
  if (dumps) host.report("approval:environment-dump", `\`${name}\` prints environment variables, secrets included.`);
}

function checkTokenPrint(invocation: Invocation, host: RuleHost): void {
  const { name, args } = invocation;
  const words = operands(args);
  const prints =
    (name === "gh" && words[0] === "auth" && (words[1] === "token" || (words[1] === "status" && (args.includes("-t") || args.includes("--show-token"))))) ||
    (name === "gcloud" && words.some((word) => word === "print-access-token" || word === "print-identity-token")) ||
    (name === "az" && words[0] === "account" && words[1] === "get-access-token") ||
    (name === "heroku" && words[0] === "auth:token") ||
    (name === "doctl" && words[0] === "auth" && words[1] === "token");
  if (prints) host.report("approval:token-print", `\`${name}\` prints an access token.`);
}

// ── interpreters ─────────────────────────────────────────────────────────────────────────────

function checkInterpreter(invocation: Invocation, host: RuleHost): CheckResult {
  const family = interpreterFamily(invocation.name);
  if (family === undefined) return {};
  const source = codeSource(family, invocation.args);
  const result: CheckResult = {};
  const downloadInto = (word: string): boolean => {
    if (!host.downloads(word)) return false;
    host.report("forbidden:download-to-interpreter", `\`${invocation.name}\` runs code it downloads.`);
    return true;
  };
  for (const file of invocation.inputFiles) downloadInto(file);
  for (const text of invocation.herestrings) if (!downloadInto(text) && family === "shell") host.analyzeScript(host.render(text));

  switch (source.kind) {
    case "inline":
      if (downloadInto(source.code)) return result;
      if (family === "shell") {
        host.analyzeScript(host.render(source.code));
        return { transparent: true };
      }
      if (source.code.includes(PLACEHOLDER_MARK)) {
        host.report("approval:inline-code-spawn", `\`${invocation.name}\` runs inline code only known when it runs.`);
      } else if (inlineCodeIsDangerous(family, source.code)) {
        host.report("approval:inline-code-spawn", `\`${invocation.name}\` runs inline code that spawns processes or deletes files.`);
      }
      return result;
    case "file": {
      if (downloadInto(source.path)) return result;
      const fed = host.decisionsVersion >= 4 ? host.fedText(source.path) : undefined;
      if (fed !== undefined) runFedCode(family, invocation.name, fed, host);
      return result;
    }
    case "stdin":
      if (invocation.heredocs.length > 0 || invocation.herestrings.length > 0 || invocation.inputFiles.length > 0) {
        if (family === "shell") for (const heredoc of invocation.heredocs) host.analyzeScript(heredoc.body);
        else for (const heredoc of invocation.heredocs) if (inlineCodeIsDangerous(family, heredoc.body)) host.report("approval:inline-code-spawn", `\`${invocation.name}\` runs code that spawns processes or deletes files.`);
        return result;
      }
      return { runsStandardInput: true };
    case "none":
      return invocation.args.length === 1 ? { safe: "safe:version" } : result;
  }
}

// ── known-safe ───────────────────────────────────────────────────────────────────────────────

const READ_ONLY = new Set([
  "ls", "cat", "head", "tail", "wc", "grep", "egrep", "fgrep", "rg", "pwd", "echo", "printf", "true", "false",
  "date", "whoami", "id", "which", "type", "file", "stat", "du", "df", "tree", "sort", "uniq", "cut", "tr",
  "diff", "cmp", "comm", "basename", "dirname", "realpath", "readlink", "uname", "hostname", "nl", "tac",
  "md5sum", "sha1sum", "sha256sum", "sha512sum", "test", "[", "[[", "seq", "sleep", "cd", "jq", "column",
  "paste", "expr",
]);
const VERSION_TOOLS = new Set(["npm", "npx", "pnpm", "yarn", "pip", "pip3", "go", "cargo", "rustc", "tsc", "deno", "java", "make", "docker", "kubectl", "terraform", "gcc", "clang"]);
const TEST_RUNNERS = new Set(["vitest", "jest", "mocha", "pytest", "ava", "tap"]);
const PACKAGE_RUNNERS = new Set(["npm", "pnpm", "yarn", "bun"]);

function readOnlyVariant(invocation: Invocation, abbreviations: boolean): boolean {
  const { name, args } = invocation;
  switch (name) {
    case "sort":
      if (abbreviations && hasLongAbbreviated(args, "--output", "--compress-program")) return false;
      return !args.some((arg) => /^-[A-Za-z]*o/.test(arg) || arg.startsWith("--output") || arg.startsWith("--compress-program"));
    case "uniq":
      return operands(args, { short: "fsw" }).length <= 1;
    case "tree":
      return !args.some((arg) => arg === "-o" || arg.startsWith("-o"));
    case "date":
      return !args.some((arg) => arg === "-s" || arg.startsWith("--set") || (!arg.startsWith("-") && !arg.startsWith("+")));
    case "hostname":
      return args.every((arg) => arg.startsWith("-") && arg !== "-F" && !arg.startsWith("--file") && arg !== "-b" && arg !== "--boot");
    case "rg":
      return !args.some((arg) => arg.startsWith("--pre"));
    default:
      return READ_ONLY.has(name);
  }
}

function isTestRun(name: string, args: readonly string[]): boolean {
  const first = args[0];
  if (TEST_RUNNERS.has(name)) return true;
  if (PACKAGE_RUNNERS.has(name)) {
    if (first === "test" || first === "t") return true;
    if ((first === "run" || first === "run-script") && /^test(?::|$)/.test(args[1] ?? "")) return true;
    if (name === "bun" && first === "test") return true;
    if ((first === "exec" || first === "dlx" || first === "x") && args[1] !== undefined) return isTestRun(args[1], args.slice(2));
    if (name !== "npm" && first !== undefined && TEST_RUNNERS.has(first)) return true;
    return false;
  }
  if (name === "npx" || name === "pnpx" || name === "bunx") {
    const index = firstOperand(args, { short: "p", long: ["--package"] });
    const runner = args[index];
    return runner !== undefined && (TEST_RUNNERS.has(runner) || (runner === "tsc" && args.includes("--noEmit")));
  }
  if (name === "go" || name === "cargo" || name === "deno") return first === "test";
  if (name === "make") return args[firstOperand(args, { short: "CfIjlo", long: [] })] === "test";
  if (name === "tsc") return args.includes("--noEmit") && !args.some((arg) => arg === "--build" || arg === "-b" || arg === "--watch" || arg === "-w");
  if (interpreterFamily(name) === "python") return args[0] === "-m" && args[1] === "pytest";
  return false;
}

function safeRule(invocation: Invocation, decisionsVersion: number): SafeRuleId | undefined {
  const { name, args } = invocation;
  if (VERSION_TOOLS.has(name) && args.length === 1 && ["--version", "-v", "-V", "version", "-version"].includes(args[0] as string)) {
    return "safe:version";
  }
  if (isTestRun(name, args)) return "safe:test-runner";
  return readOnlyVariant(invocation, decisionsVersion >= 4) ? "safe:read-only" : undefined;
}

// ── the dispatcher ───────────────────────────────────────────────────────────────────────────

const DOWNLOADERS = new Set(["curl", "wget", "fetch", "aria2c", "http", "https", "xh"]);
const SHUTDOWN = new Set(["shutdown", "reboot", "halt", "poweroff"]);

function newWorkingDirectory(invocation: Invocation, paths: PathContext): WorkingDirectory {
  const target = operands(invocation.args)[0];
  if (invocation.name === "popd" || target === "-") return { kind: "unknown" };
  if (target === undefined) return { kind: "path", path: "~" };
  if (isDynamic(target.replace(/^\$HOME(?=\/|$)/, "~"))) return { kind: "unknown" };
  const written = target.replace(/^\$HOME(?=\/|$)/, "~");
  if (written.startsWith("/") || written.startsWith("~")) return { kind: "path", path: written };
  const current = paths.cwd;
  if (current?.kind === "unknown") return current;
  return { kind: "path", path: path.posix.join(current?.kind === "path" ? current.path : ".", written) };
}

/**
 * Apply every rule to one resolved simple command, reporting what it finds through `host`.
 *
 * @example
 * checkCommand({ name: "rm", args: ["-rf", "/"], … }, host) // host.report("forbidden:rm-rf-root", …)
 */
export function checkCommand(invocation: Invocation, host: RuleHost): CheckResult {
  const { name, args } = invocation;
  checkCredentialRead(invocation, host);
  if (host.decisionsVersion >= 4) {
    checkAttacks(invocation, host);
    checkWritesOutside(invocation, host);
  }

  if (name === "rm") checkRm(invocation, host);
  else if (name === "find") return checkFind(invocation, host);
  else if (/^mkfs(?:\..+)?$/.test(name) || name === "mke2fs" || name === "newfs") {
    host.report("forbidden:mkfs", `\`${name}\` makes a new filesystem, erasing what the device held.`);
  } else if (name === "dd") checkDd(invocation, host);
  else if (name === "tee") for (const target of operands(args)) reportDeviceWrite(host, target, "`tee` into");
  else if (name === "cp") {
    const target = operands(args, { short: "tS", long: ["--target-directory", "--suffix"] }).at(-1);
    if (target !== undefined) reportDeviceWrite(host, target, "`cp` onto");
  } else if (name === "kill") checkKill(invocation, host);
  else if (name === "pkill" || name === "killall") checkUserKill(invocation, host);
  else if (name === "killall5") host.report("forbidden:kill-all", "`killall5` signals every process on the machine.");
  else if (name === "chmod" || name === "chown" || name === "chgrp") checkChmodFamily(invocation, host);
  else if (SHUTDOWN.has(name)) host.report("forbidden:shutdown", `\`${name}\` takes the machine down.`);
  else if ((name === "init" || name === "telinit") && ["0", "6"].includes(operands(args)[0] ?? "")) {
    host.report("forbidden:shutdown", `\`${name} ${operands(args)[0] ?? ""}\` takes the machine down.`);
  } else if (name === "systemctl" || name === "loginctl") {
    const verb = operands(args).find((word) => /^(?:poweroff|reboot|halt|kexec)(?:\.target)?$/.test(word));
    if (verb !== undefined) host.report("forbidden:shutdown", `\`${name} ${verb}\` takes the machine down.`);
  } else if (name === "mv") checkMv(invocation, host);
  else if (/^ip6?tables(?:-legacy|-nft)?$/.test(name)) {
    if (args.some((arg) => arg === "--flush" || /^-[A-Za-z]*F$/.test(arg)) || (host.decisionsVersion >= 4 && hasLongAbbreviated(args, "--flush"))) {
      host.report("forbidden:firewall-flush", `\`${name} --flush\` drops every firewall rule.`);
    }
  } else if (name === "nft" && args.includes("flush")) host.report("forbidden:firewall-flush", "`nft flush` drops firewall rules.");
  else if (name === "su") {
    host.report("approval:su", "`su` switches to another user.");
    for (const script of optionValues(args, ["-c"], ["--command"])) host.analyzeScript(host.render(script));
  } else if (USER_ACCOUNT_COMMANDS.has(name)) host.report("approval:user-account", `\`${name}\` changes user accounts or their privileges.`);
  else if (name === "git") return checkGit(invocation, host);
  else if (PACKAGE_MANAGERS.has(name)) checkPackageRemoval(invocation, host);
  else if (name === "docker" || name === "podman" || name === "nerdctl") checkDocker(invocation, host);
  else if (name === "kubectl" || name === "oc") checkKubectl(invocation, host);
  else if (name === "terraform" || name === "tofu" || name === "terragrunt") checkTerraform(invocation, host);
  else if (SQL_CLIENTS.has(name)) checkSql(invocation, host);
  else if (DOWNLOADERS.has(name)) return { downloads: true };
  else if (name === "eval") {
    host.analyzeScript(args.map((arg) => host.render(arg)).join(" "));
    return { transparent: true };
  } else if (name === "source" || name === ".") {
    const file = args[0];
    if (file !== undefined && host.downloads(file)) host.report("forbidden:download-to-interpreter", `\`${name}\` runs code it downloads.`);
    const fromStdin = file === undefined || file === "/dev/stdin" || file === "-";
    if (host.decisionsVersion >= 4) return sourceSince4(invocation, fromStdin, host);
    return fromStdin ? { runsStandardInput: true } : {};
  } else if (name === "trap") {
    const action = args[0];
    if (action !== undefined && !action.startsWith("-")) host.analyzeScript(host.render(action));
  } else if (name === "cd" || name === "pushd" || name === "popd") {
    return { safe: "safe:read-only", cwd: newWorkingDirectory(invocation, host.paths) };
  } else if (interpreterFamily(name) !== undefined) {
    if (args[0] === "-m" && (args[1] === "pip" || args[1] === "pip3")) checkPackageRemoval({ ...invocation, name: "pip", args: args.slice(2) }, host);
    const result = checkInterpreter(invocation, host);
    if (result.safe === undefined && isTestRun(name, args)) result.safe = "safe:test-runner";
    return result;
  }

  checkEnvironmentDump(invocation, host);
  checkTokenPrint(invocation, host);

  const rule = safeRule(invocation, host.decisionsVersion);
  return rule === undefined ? {} : { safe: rule };
}

