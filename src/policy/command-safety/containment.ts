/**
 * Containment rules of decisions version 4 (docs/security.md#containment-the-classifier-decides-what-may-run-outside-the-sandbox): what runs unasked must not reach past
 * the workspace and the temporary directories. A read-only command that reads elsewhere is no longer
 * known-safe (`contain:read-outside`); a command that writes elsewhere needs approval
 * (`approval:write-outside`).
 */
import type { Redirection } from "./parse.js";
import { WRITE_REDIRECTIONS } from "./parse.js";
import type { PathContext } from "./paths.js";
import { isBlockDevice, locate } from "./paths.js";
import type { Invocation, RuleHost } from "./rules/rule-host.js";
import type { OptionSpec } from "./words.js";
import { brief, operands, optionValues, shortLetters } from "./words.js";

// ── reads ────────────────────────────────────────────────────────────────────────────────────

/** Read-only commands whose operands are not files they read (texts, names, numbers, character sets). */
const OPERANDS_NOT_READ = new Set([
  "echo", "printf", "test", "[", "[[", "true", "false", "sleep", "seq", "expr", "basename", "dirname", "date",
  "whoami", "id", "which", "type", "uname", "hostname", "pwd", "cd", "pushd", "popd", "realpath", "tr", "df",
]);
/** Commands that read the working directory when given no file. */
const READS_WORKING_DIRECTORY = new Set(["ls", "find", "tree", "du", "rg"]);
const GREP_FAMILY = new Set(["grep", "egrep", "fgrep", "rg"]);
const GREP: OptionSpec = { short: "efmABCdDgtTjM", long: ["--regexp", "--file", "--max-count", "--glob", "--type", "--context"] };
const GIT_GLOBAL: OptionSpec = { short: "Cc", long: ["--git-dir", "--work-tree", "--namespace", "--exec-path", "--config-env", "--super-prefix"] };
/** `find` tests whose value is a pattern, not a path. */
const FIND_PATTERNS = new Set(["-name", "-iname", "-path", "-ipath", "-wholename", "-iwholename", "-regex", "-iregex", "-lname", "-ilname"]);

function grepFiles(name: string, args: readonly string[]): string[] {
  const patternGiven = args.some((arg) => /^-[A-Za-z]*[ef]/.test(arg) || arg.startsWith("--regexp") || arg.startsWith("--file"));
  const files = operands(args, GREP);
  const read = patternGiven ? files : files.slice(1);
  read.push(...optionValues(args, ["-f"], ["--file"]));
  const recursive = args.some((arg) => /^-[A-Za-z]*[rR]/.test(arg) || arg.startsWith("--recursive") || arg.startsWith("--dereference-recursive"));
  if (read.length === 0 && (recursive || name === "rg")) read.push("."); // grep without files reads standard input
  return read;
}

function findPaths(args: readonly string[]): string[] {
  let first = args.findIndex((arg) => arg.startsWith("-") || arg === "(" || arg === "!" || arg === ")");
  if (first < 0) first = args.length;
  const roots = args.slice(0, first);
  if (roots.length === 0) roots.push(".");
  for (let index = first; index < args.length - 1; index += 1) {
    const arg = args[index] as string;
    if (/^-(?:[acm]?newer|samefile|files0-from)$/.test(arg)) roots.push(args[index + 1] as string);
    if (FIND_PATTERNS.has(arg)) index += 1;
  }
  return roots;
}

function gitPaths(args: readonly string[]): string[] {
  const read = [".", ...optionValues(args, ["-C"], ["--git-dir", "--work-tree"])];
  if (args.includes("--no-index")) read.push(...operands(args).slice(1));
  return read;
}

/** Values of `--name=value` options that look like paths (`--file=/etc/passwd`). */
function pathLikeOptionValues(args: readonly string[]): string[] {
  return args
    .filter((arg) => arg.startsWith("--") && arg.includes("="))
    .map((arg) => arg.slice(arg.indexOf("=") + 1))
    .filter((value) => /^(?:\/|~|\$HOME|\.\.)/.test(value) || value.includes("/"));
}

/** The files a known-safe read-only command reads, as written. */
function filesRead(invocation: Invocation): string[] {
  const { name, args } = invocation;
  const read = [...invocation.inputFiles];
  if (name === "echo" || name === "printf") return read;
  read.push(...pathLikeOptionValues(args));
  // `date -f FILE` reads dates from a file and echoes every line it cannot parse: /etc/shadow included.
  if (name === "date") read.push(...optionValues(args, ["-f"], []), ...abbreviatedValues(args, "--file"));
  if (OPERANDS_NOT_READ.has(name)) return read;
  if (name === "git") return [...read, ...gitPaths(args)];
  if (name === "find") return [...read, ...findPaths(args)];
  if (GREP_FAMILY.has(name)) return [...read, ...grepFiles(name, args)];
  let files = operands(args);
  if (name === "jq") files = files.slice(1);
  if (files.length === 0 && READS_WORKING_DIRECTORY.has(name)) files.push(".");
  return [...read, ...files.filter((file) => file !== "-")];
}

/**
 * The first file a known-safe read-only command reads outside the workspace and the temporary
 * directories (or where only the run time knows), if any.
 *
 * @example
 * readOutside({ name: "cat", args: ["/etc/passwd"], … }, paths) // "/etc/passwd"
 * readOutside({ name: "echo", args: ["/etc/passwd"], … }, paths) // undefined
 */
export function readOutside(invocation: Invocation, paths: PathContext): string | undefined {
  return filesRead(invocation).find((file) => locate(file, paths) !== "inside");
}

// ── writes ───────────────────────────────────────────────────────────────────────────────────

const COPY: OptionSpec = { short: "tSm", long: ["--target-directory", "--suffix", "--mode", "--owner", "--group"] };

/** The value of a long option given by any GNU abbreviation (`--out=x`, `--outp x` for `--output`). */
function abbreviatedValues(args: readonly string[], name: string): string[] {
  const values: string[] = [];
  for (let index = 0; index < args.length; index += 1) {
    const arg = args[index] as string;
    if (arg === "--") break;
    if (!arg.startsWith("--") || arg.length < 4) continue;
    const [written = "", value] = arg.split(/=(.*)/s, 2);
    if (!name.startsWith(written)) continue;
    if (value !== undefined) values.push(value);
    else if (args[index + 1] !== undefined) values.push(args[index + 1] as string);
  }
  return values;
}

function sedInPlaceFiles(args: readonly string[]): string[] {
  const inPlace = args.some((arg) => (/^-[A-Za-z]*i/.test(arg) && !arg.startsWith("--")) || (arg.startsWith("--in") && "--in-place".startsWith(arg.split("=")[0] as string)));
  if (!inPlace) return [];
  const scriptGiven = args.some((arg) => /^-[A-Za-z]*[ef]/.test(arg) || arg.startsWith("--expression") || arg.startsWith("--file"));
  const files = operands(args, { short: "efl", long: ["--expression", "--file", "--line-length"] });
  return scriptGiven ? files : files.slice(1);
}

function copyTargets(name: string, args: readonly string[]): string[] {
  const explicit = optionValues(args, ["-t"], ["--target-directory"]);
  const words = operands(args, COPY);
  if (name === "install" && shortLetters(args).has("d")) return [...explicit, ...words];
  if (explicit.length > 0 || words.length < 2) return explicit;
  return [words.at(-1) as string];
}

/** Files a command writes (besides redirections), as written. */
function filesWritten(invocation: Invocation): string[] {
  const { name, args } = invocation;
  switch (name) {
    case "tee":
      return operands(args);
    case "sed":
      return sedInPlaceFiles(args);
    case "truncate":
      return operands(args, { short: "sr", long: ["--size", "--reference"] });
    case "cp":
    case "mv":
    case "install":
    case "ln":
      return copyTargets(name, args);
    case "touch":
      return operands(args, { short: "rtd", long: ["--reference", "--date"] });
    case "mkdir":
      return operands(args, { short: "m", long: ["--mode"] });
    case "dd":
      return args.filter((arg) => arg.startsWith("of=")).map((arg) => arg.slice(3));
    case "sort":
      return [...optionValues(args, ["-o"], []), ...abbreviatedValues(args, "--output")];
    case "tree":
      return optionValues(args, ["-o"], []);
    case "curl":
      return [...optionValues(args, ["-o"], []), ...abbreviatedValues(args, "--output")];
    case "wget":
      return [...optionValues(args, ["-O"], []), ...abbreviatedValues(args, "--output-document")];
    case "git":
      return [...abbreviatedValues(args, "--output"), ...(args.includes("format-patch") ? optionValues(args, ["-o"], []) : [])];
    default:
      return [];
  }
}

function reportWriteOutside(host: RuleHost, target: string, how: string): void {
  if (/^\/dev\/(?:tcp|udp)\//.test(target) || isBlockDevice(target)) return; // rules of their own
  if (locate(target, host.paths) === "outside") {
    host.report("approval:write-outside", `${how} ${brief(host.render(target))}, outside the workspace and the temporary directory.`);
  }
}

/**
 * Report a command writing outside the workspace and the temporary directories: by `tee`, `sed -i`,
 * `truncate`, `cp`/`mv`/`install`/`ln`/`touch`/`mkdir`, `dd of=`, `sort -o`, `git --output`, ….
 * A target only known at run time is not reported: the command is not known-safe anyway, so it runs
 * unasked only inside the sandbox, whose root file system is read-only.
 */
export function checkWritesOutside(invocation: Invocation, host: RuleHost): void {
  for (const target of filesWritten(invocation)) reportWriteOutside(host, target, `\`${invocation.name}\` writes`);
}

/**
 * Report write redirections outside the workspace and the temporary directories (`> /etc/passwd`,
 * `>> ~/.ssh/authorized_keys`, `&> /x`); `> /dev/null` and `2>&1` are not writes there.
 */
export function checkRedirectionsOutside(redirections: readonly Redirection[], host: RuleHost): void {
  for (const { operator, target } of redirections) {
    if (target === undefined || !WRITE_REDIRECTIONS.has(operator)) continue;
    if (operator === ">&" && /^(?:\d+-?|-)$/.test(target)) continue;
    reportWriteOutside(host, target, "A redirection writes to");
  }
}
