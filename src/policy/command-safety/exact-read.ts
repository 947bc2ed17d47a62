/**
 * Exact reads (decisions version 5; docs/security.md, "Without a sandbox"): where no
 * sandbox exists, only a command line that is plainly a read may run unasked. The classifier's
 * `safe:read-only` says what a line does once the shell has expanded it; this says that nothing in
 * the line is left for the shell, the environment or the program's own configuration to decide:
 * `GIT_CONFIG_COUNT=1 … git status`, `PATH=.:$PATH ls`, `git -c core.fsmonitor=… status`,
 * `git diff --ext-diff`, `cd sub && git status`, `rg x *` with a file named `--pre=./evil` all read
 * under the classifier and run an attacker's program in fact.
 *
 * Fail closed: anything this does not recognise — an operator, a substitution, a glob, a variable,
 * a control character — makes the line inexact, and the line asks.
 */
import { parse } from "shell-quote";
import type { ParseEntry } from "shell-quote";

/** Why a line is not an exact read, in a phrase; `undefined` when it is one. */
export type InexactReason = string;

/** Stands for a variable in the token stream: `$X` in the text, quoted or not, never in single quotes. */
const VARIABLE = "\u0000variable\u0000";

/** Operators that only join simple commands. */
const JOINS = new Set([";", "&&", "||", "|"]);

/**
 * Commands that change what a later command in the same line means (the directory it runs in,
 * its environment, what its name resolves to), or run another command: never part of an exact read,
 * whatever the classifier says of them.
 */
const CHANGES_LATER_COMMANDS = new Set([
  "cd", "pushd", "popd", "export", "declare", "typeset", "local", "readonly", "alias", "unalias", "set", "unset",
  "shopt", "hash", "enable", "source", ".", "eval", "exec", "builtin", "command", "function", "trap", "umask",
  "ulimit", "read", "mapfile", "readarray", "let", "getopts", "env", "nice", "nohup", "timeout", "xargs", "time",
  "stdbuf", "ionice", "sudo", "doas", "pkexec", "busybox", "flock", "strace", "ltrace", "script", "taskset", "chrt",
  "unbuffer", "watch", "setsid", "fc", "coproc",
]);

/** git's global options (before the subcommand) that may appear in an exact read. */
const GIT_HARMLESS_GLOBALS = new Set(["--no-pager", "-P", "--no-optional-locks", "--literal-pathspecs"]);

/**
 * Long options of a read-only git subcommand that run a program, write a file, or read another
 * repository's settings. git accepts any unambiguous abbreviation of a long option, so a word that
 * is a prefix of one of these (`--ext`, `--out=x`) counts too.
 */
const GIT_DANGEROUS_LONG = [
  "--output", "--output-directory", "--ext-diff", "--textconv", "--open-files-in-pager", "--show-signature", "--exec",
  "--upload-pack", "--receive-pack", "--config", "--config-env", "--exec-path", "--git-dir", "--work-tree",
  "--namespace", "--super-prefix", "--filters", "--attr-source",
];

/** Options, by program, that run a program or write a file in a command the classifier reads as a read. */
const DANGEROUS_OPTIONS: Readonly<Record<string, readonly string[]>> = {
  rg: ["--pre", "--pre-glob", "--search-zip", "-z"],
  sort: ["--compress-program", "--output", "-o"],
  find: ["-exec", "-execdir", "-ok", "-okdir", "-delete", "-fprint", "-fprint0", "-fprintf", "-fls"],
  printf: ["-v"],
  tree: ["-o"],
  date: ["-s", "--set"],
};

/**
 * Whether `text` is an exact read: every simple command a bare program name from the read-only
 * catalogue with literal words, joined only by `;`, `&&`, `||` and `|`, with no assignments,
 * variables, substitutions, globs, brace or process substitutions, redirections other than into
 * `/dev/null`, file-descriptor copies and `< file`, and none of the options that make a read run a
 * program or write a file. Returns why not, or `undefined` for an exact read. Only meaningful for a
 * line command safety already classified `safe:read-only` or `safe:version`.
 *
 * @example
 * inexactRead("git status --short");                       // undefined
 * inexactRead("GIT_TRACE=/tmp/x git status");              // "it assigns the variable GIT_TRACE"
 * inexactRead("git diff --ext-diff");                      // "`git` is given --ext-diff, …"
 */
export function inexactRead(text: string): InexactReason | undefined {
  if (typeof text !== "string") return "it is not text";
  // Newlines separate commands to a shell but not to the tokenizer; control and format characters
  // (bidirectional overrides, zero-width joiners) make what a person sees differ from what runs.
  if (/[\p{C}]/u.test(text.replace(/\t/g, " "))) return "it holds a line break or a control or invisible character";
  if (text.normalize("NFKC") !== text) return "it holds characters a shell could read otherwise than shown";
  if (text.includes("`")) return "it holds a backtick (command substitution)";
  let entries: ParseEntry[];
  try {
    entries = parse(text, (name: string) => `${VARIABLE}${name}`);
  } catch {
    return "it cannot be tokenized";
  }
  const commands: string[][] = [[]];
  for (let index = 0; index < entries.length; index += 1) {
    const entry = entries[index] as ParseEntry;
    const current = commands[commands.length - 1] as string[];
    if (typeof entry === "string") {
      if (entry.includes(VARIABLE)) return "it expands a variable or a substitution";
      // `{a,b}` and `{1..3}` expand in bash, `{` and `}` alone group; `HEAD@{1}` is a word.
      if (entry === "{" || entry === "}" || /\{[^{}]*(?:,|\.\.)[^{}]*\}/.test(entry)) return "it holds a brace a shell may expand or group with";
      current.push(entry);
      continue;
    }
    // shell-quote starts a comment at a `#` inside a word (`a#b; GIT_TRACE=… git status`) and runs
    // it past a line break; a shell does neither. No comment is part of an exact read.
    if ("comment" in entry) return "it holds a `#`, which the shell and the tokenizer may read differently";
    if (entry.op === "glob") return "it holds a glob, which may expand to options";
    if (JOINS.has(entry.op)) {
      if (current.length === 0) return `it has \`${entry.op}\` with no command before it`;
      commands.push([]);
      continue;
    }
    const target = entries[index + 1];
    if (typeof target !== "string" || target.includes(VARIABLE)) return `it has the operator \`${entry.op}\``;
    if (/^\d+$/.test(current.at(-1) ?? "") && (entry.op === ">" || entry.op === ">>" || entry.op === ">&" || entry.op === "<")) current.pop(); // `2>`: the descriptor, not an argument
    const harmless = ((entry.op === ">" || entry.op === ">>" || entry.op === "&>" || entry.op === "&>>") && target === "/dev/null") || (entry.op === ">&" && /^\d$/.test(target)) || entry.op === "<";
    if (!harmless) return `it redirects with \`${entry.op} ${target}\``;
    index += 1;
  }
  if ((commands[commands.length - 1] as string[]).length === 0) return commands.length === 1 ? "there is no command" : "it ends with an operator";
  for (const words of commands) {
    const reason = inexactSimpleCommand(words);
    if (reason !== undefined) return reason;
  }
  return undefined;
}

function inexactSimpleCommand(words: readonly string[]): InexactReason | undefined {
  const [name = "", ...args] = words;
  if (/^[A-Za-z_][A-Za-z0-9_]*\+?=/.test(name)) return `it assigns the variable ${name.slice(0, name.indexOf("=")).replace(/\+$/, "")}`;
  if (name.includes("/")) return `the program \`${name}\` is named by a path, not looked up on PATH`;
  if (!/^[A-Za-z0-9_.[-]+$/.test(name) || name === "[[") return `\`${name}\` is not a plain program name`;
  if (CHANGES_LATER_COMMANDS.has(name)) return `\`${name}\` changes what later commands mean, or runs another command`;
  if (name === "git") return inexactGit(args);
  const dangerous = DANGEROUS_OPTIONS[name] ?? [];
  const found = args.find((arg) => dangerous.some((option) => arg === option || arg.startsWith(`${option}=`) || (option.startsWith("--") && arg.startsWith("--") && arg.length > 3 && option.startsWith(arg.split("=")[0] as string)) || (/^-[A-Za-z]$/.test(option) && /^-[A-Za-z]+$/.test(arg) && arg.includes(option[1] as string))));
  return found === undefined ? undefined : `\`${name}\` is given ${found}, which runs a program or writes a file`;
}

function inexactGit(args: readonly string[]): InexactReason | undefined {
  let index = 0;
  while (index < args.length && (args[index] as string).startsWith("-")) {
    const arg = args[index] as string;
    if (arg === "--version" && index === args.length - 1) return undefined;
    if (!GIT_HARMLESS_GLOBALS.has(arg)) return `\`git\` is given the global option ${arg} (-c, -C, --config-env, --exec-path, --git-dir, --work-tree, … change which settings and programs it uses)`;
    index += 1;
  }
  for (const arg of args.slice(index + 1)) {
    if (arg === "--") break;
    if (!arg.startsWith("--") || arg.length < 4) continue;
    const written = arg.split("=")[0] as string;
    const option = GIT_DANGEROUS_LONG.find((candidate) => candidate.startsWith(written));
    if (option !== undefined) return `\`git\` is given ${arg} (${option}), which runs a program, writes a file or reads other settings`;
  }
  return undefined;
}
