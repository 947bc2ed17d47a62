/**
 * Looking through wrappers (docs/policy.md#command-safety): `sudo -n -u root env FOO=1 nice -n 10 rm -rf /` runs
 * `rm -rf /`. Each wrapper's own options are skipped the way the wrapper reads them; leading
 * `NAME=value` assignments and shell keywords (`if`, `then`, `!`, `{`, …) are skipped too.
 */
import { parse } from "shell-quote";
import type { CommandSafetyRuleId } from "./catalogue.js";
import type { OptionSpec } from "./words.js";
import { ASSIGNMENT, commandName, firstOperand, optionValues } from "./words.js";

/** The command a simple command finally runs, once its wrappers are looked through. */
export interface Unwrapped {
  /** The words from the command name on, or empty when nothing runs (`env` alone, `FOO=1`, `for x in …`). */
  words: string[];
  /** Assignments that preceded the command (`FOO=1 make`), in order. */
  assignments: string[];
  /** Run by `xargs`: more arguments arrive from standard input. */
  viaXargs: boolean;
  /** `command -v x` / `command -V x`: a lookup, nothing runs. */
  lookupOnly: boolean;
  /** Shell text a wrapper runs (`flock -c '…'`, `script -c '…'`, `watch '…'`), judged as scripts of their own. */
  scripts: string[];
}

type Report = (rule: CommandSafetyRuleId, reason: string) => void;

/** Shell keywords that may start a simple command and are not the command themselves. */
const KEYWORDS = new Set(["!", "{", "}", "if", "then", "elif", "else", "do", "while", "until", "fi", "done", "esac", "coproc"]);
/** Keywords whose words are a header, not a command (`for x in a b`, `case $x in`). */
const HEADERS = new Set(["for", "select", "case", "in", "function"]);

const SUDO: OptionSpec = {
  short: "aCcDghpRrTtUu",
  long: ["--user", "--group", "--prompt", "--close-from", "--chdir", "--role", "--type", "--command-timeout", "--other-user", "--chroot", "--host", "--login-class", "--auth-type"],
};
const DOAS: OptionSpec = { short: "Cu" };
const PKEXEC: OptionSpec = { long: ["--user"] };
const ENV: OptionSpec = { short: "uCP", long: ["--unset", "--chdir"] };
const NICE: OptionSpec = { short: "n", long: ["--adjustment"] };
const TIMEOUT: OptionSpec = { short: "sk", long: ["--signal", "--kill-after"] };
// `-i`, `-e` and `-l` take optional attached values only, so they never consume the next word.
const XARGS: OptionSpec = {
  short: "EIdLnPsa",
  long: ["--arg-file", "--delimiter", "--max-lines", "--max-args", "--max-procs", "--max-chars", "--process-slot-var", "--replace", "--eof"],
};
const TIME: OptionSpec = { short: "fo", long: ["--format", "--output"] };
const STDBUF: OptionSpec = { short: "ioe", long: ["--input", "--output", "--error"] };
const IONICE: OptionSpec = { short: "cnpPu", long: ["--class", "--classdata", "--pid", "--pgid", "--uid"] };
const EXEC: OptionSpec = { short: "a" };

function splitString(text: string): string[] {
  return parse(text, (name: string) => `$${name}`).flatMap((entry) => {
    if (typeof entry === "string") return [entry];
    if ("op" in entry && entry.op === "glob") return [entry.pattern];
    return [];
  });
}

/**
 * Look through the wrappers of a simple command's words; `report` hears about the ones that need
 * approval themselves (`sudo`, `doas`, `pkexec`, `env` alone).
 *
 * @example
 * unwrap(["sudo", "-u", "root", "FOO=1", "nohup", "rm", "-rf", "/"], report).words // ["rm", "-rf", "/"]
 */
export function unwrap(words: readonly string[], report: Report, decisionsVersion = 1): Unwrapped {
  let rest = [...words];
  const assignments: string[] = [];
  const scripts: string[] = [];
  let viaXargs = false;
  const done = (remaining: string[], lookupOnly = false): Unwrapped => ({ words: remaining, assignments, viaXargs, lookupOnly, scripts });

  // A wrapper can wrap a wrapper; 64 rounds is far beyond any real command line.
  for (let round = 0; round < 64; round += 1) {
    while (rest.length > 0 && ASSIGNMENT.test(rest[0] as string)) assignments.push(rest.shift() as string);
    const head = rest[0];
    if (head === undefined) return done([]);
    if (KEYWORDS.has(head)) {
      rest = rest.slice(1);
      continue;
    }
    if (head === "function") {
      rest = rest.slice(2);
      continue;
    }
    if (HEADERS.has(head)) return done([]);
    const args = rest.slice(1);
    if (decisionsVersion >= 4) {
      const through = lookThrough(commandName(head), args);
      if (through !== undefined) {
        scripts.push(...through.scripts);
        if (through.words.length === 0) return done([]);
        rest = through.words;
        continue;
      }
    }
    switch (commandName(head)) {
      case "sudo":
      case "sudoedit":
        report("approval:sudo", "`sudo` runs a command as another user, usually root.");
        rest = args.slice(firstOperand(args, SUDO));
        continue;
      case "doas":
        report("approval:sudo", "`doas` runs a command as another user, usually root.");
        rest = args.slice(firstOperand(args, DOAS));
        continue;
      case "pkexec":
        report("approval:sudo", "`pkexec` runs a command as another user, usually root.");
        rest = args.slice(firstOperand(args, PKEXEC));
        continue;
      case "command": {
        const start = firstOperand(args);
        if (args.slice(0, start).some((arg) => /^-[A-Za-z]*[vV]/.test(arg))) return done([], true);
        rest = args.slice(start);
        continue;
      }
      case "builtin":
      case "nohup":
      case "setsid":
        rest = args.slice(firstOperand(args));
        continue;
      case "exec":
        rest = args.slice(firstOperand(args, EXEC));
        continue;
      case "env": {
        const split = optionValues(args, ["-S"], ["--split-string"]);
        const start = firstOperand(args, { ...ENV, short: `${ENV.short ?? ""}S`, long: [...(ENV.long ?? []), "--split-string"] });
        rest = [...split.flatMap(splitString), ...args.slice(start)];
        if (rest.every((word) => ASSIGNMENT.test(word))) {
          report("approval:environment-dump", "`env` with no command prints every environment variable, secrets included.");
          assignments.push(...rest);
          return done([]);
        }
        continue;
      }
      case "nice":
        rest = args.slice(firstOperand(args, NICE));
        continue;
      case "timeout":
        rest = args.slice(firstOperand(args, TIMEOUT) + 1); // the operand after the options is the duration
        continue;
      case "xargs":
        viaXargs = true;
        rest = args.slice(firstOperand(args, XARGS));
        if (rest.length === 0) rest = ["echo"];
        continue;
      case "time":
        rest = args.slice(firstOperand(args, TIME));
        continue;
      case "stdbuf":
        rest = args.slice(firstOperand(args, STDBUF));
        continue;
      case "ionice":
        if (args.some((arg) => arg === "-p" || arg === "-P" || arg === "--pid" || arg === "--pgid")) return done([]);
        rest = args.slice(firstOperand(args, IONICE));
        continue;
      default:
        return done(rest);
    }
  }
  return done(rest);
}

// ── wrappers looked through from decisions version 4 on ──────────────────────────────────────

const FLOCK: OptionSpec = { short: "wEc", long: ["--timeout", "--wait", "--conflict-exit-code", "--command"] };
const STRACE: OptionSpec = {
  short: "abeEFIlnoOpPsSuUXA",
  long: ["--output", "--trace", "--signal", "--status", "--string-limit", "--user", "--env", "--attach", "--trace-path", "--columns", "--expr", "--decode-fds", "--library", "--execute"],
};
const SCRIPT: OptionSpec = { short: "cEIOBTm", long: ["--command", "--echo", "--log-in", "--log-out", "--log-io", "--log-timing", "--logging-format"] };
const CHRT: OptionSpec = { short: "TPD", long: ["--sched-runtime", "--sched-period", "--sched-deadline"] };
const WATCH: OptionSpec = { short: "nq", long: ["--interval", "--equexit"] };
const PACKAGE_EXECUTOR: OptionSpec = { short: "pc", long: ["--package", "--call"] };

/** What a wrapper runs: the command's words, and shell text it hands to a shell. */
interface LookedThrough {
  words: string[];
  scripts: string[];
}

function commandAfter(args: readonly string[], spec: OptionSpec, skipOperands = 0): LookedThrough {
  return { words: args.slice(firstOperand(args, spec) + skipOperands), scripts: [] };
}

/** `flock [opts] FILE CMD…` or `flock [opts] FILE -c 'SCRIPT'`. */
function flock(args: readonly string[]): LookedThrough {
  const start = firstOperand(args, FLOCK);
  const scripts = optionValues(args.slice(0, start), ["-c"], ["--command"]);
  const after = args.slice(start + 1);
  if (after[0] === "-c" || after[0] === "--command") return { words: [], scripts: [...scripts, after[1] ?? ""] };
  return { words: after[0] === "--" ? after.slice(1) : after, scripts };
}

/** `npx rimraf DIR`, `pnpm dlx rimraf DIR`, `npm exec -- rimraf DIR`: the same as `rm -rf DIR`. */
function rimraf(name: string, args: readonly string[]): LookedThrough | undefined {
  let rest = args;
  if (name === "npm" || name === "pnpm" || name === "yarn" || name === "bun") {
    const verb = rest[firstOperand(rest)];
    if (verb !== "dlx" && verb !== "exec" && verb !== "x") return undefined;
    rest = rest.slice(firstOperand(rest) + 1);
  } else if (name !== "npx" && name !== "pnpx" && name !== "bunx") return undefined;
  const start = firstOperand(rest, PACKAGE_EXECUTOR);
  if (!/^rimraf(?:@.*)?$/.test(rest[start] ?? "")) return undefined;
  const targets = rest.slice(start + 1).filter((arg) => !arg.startsWith("-"));
  return { words: ["rm", "-rf", "--", ...targets], scripts: [] };
}

/**
 * The wrappers decisions version 4 looks through (docs/security.md#containment-the-classifier-decides-what-may-run-outside-the-sandbox: wrappers nobody listed), or
 * `undefined` when `name` is not one of them.
 */
function lookThrough(name: string, args: readonly string[]): LookedThrough | undefined {
  const pidMode = args.some((arg) => arg === "-p" || arg === "--pid" || arg.startsWith("--pid=") || arg === "--attach");
  switch (name) {
    case "busybox":
      return commandAfter(args, {});
    case "flock":
      return flock(args);
    case "strace":
    case "ltrace":
      return pidMode && firstOperand(args, STRACE) >= args.length ? { words: [], scripts: [] } : commandAfter(args, STRACE);
    case "script": {
      const scripts = optionValues(args, ["-c"], ["--command"]);
      return { words: [], scripts };
    }
    case "taskset":
      return pidMode ? { words: [], scripts: [] } : commandAfter(args, {}, 1);
    case "chrt":
      return pidMode ? { words: [], scripts: [] } : commandAfter(args, CHRT, 1);
    case "unbuffer":
      return commandAfter(args, {});
    case "watch": {
      const start = firstOperand(args, WATCH);
      const exec = args.slice(0, start).some((arg) => arg === "--exec" || /^-[a-zA-Z]*x/.test(arg));
      return exec ? { words: args.slice(start), scripts: [] } : { words: [], scripts: [args.slice(start).join(" ")] };
    }
    default:
      return rimraf(name, args);
  }
}
