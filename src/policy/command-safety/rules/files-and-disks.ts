/**
 * Rules of the files-and-disks family (docs/policy.md#command-safety): recursive deletes (\`rm -r\`, \`find
 * -delete\`, \`find -exec rm\`), new filesystems, writes onto disks and \`/proc/sysrq-trigger\`,
 * recursive permission changes and moves of system directories.
 */
import type { CommandSafetyRuleId } from "../catalogue.js";
import type { Redirection } from "../parse.js";
import { WRITE_REDIRECTIONS } from "../parse.js";
import type { PathClass } from "../paths.js";
import { classifyPath, isBlockDevice, isSysrqTrigger } from "../paths.js";
import { PLACEHOLDER_MARK } from "../scanner.js";
import { brief, hasLong, operands, optionValues, shortLetters } from "../words.js";
import { hasOption, type CheckResult, type Invocation, type RuleHost } from "./rule-host.js";

// ── recursive deletes ────────────────────────────────────────────────────────────────────────

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

/** `rm`: a recursive delete of the root, a home, a system directory or anything outside. */
export function checkRm(invocation: Invocation, host: RuleHost): void {
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

/** `find`: `-delete` and `-exec …` judged as the deletes and commands they are; read-only otherwise. */
export function checkFind(invocation: Invocation, host: RuleHost): CheckResult {
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

// ── new filesystems, permissions, moves, devices ─────────────────────────────────────────────

function isSystemTarget(target: string, host: RuleHost): boolean {
  const pathClass = classifyPath(target, host.paths);
  return pathClass === "root" || pathClass === "system";
}

/** `chmod`, `chown`, `chgrp`: recursive over a system directory. */
export function checkChmodFamily(invocation: Invocation, host: RuleHost): void {
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

/** `mv` of the root or a system directory. */
export function checkMv(invocation: Invocation, host: RuleHost): void {
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

/** `dd of=` a disk or `/proc/sysrq-trigger`. */
export function checkDd(invocation: Invocation, host: RuleHost): void {
  for (const arg of invocation.args) {
    if (!arg.startsWith("of=")) continue;
    const target = arg.slice(3);
    if (isBlockDevice(target)) host.report("forbidden:dd-disk", `\`dd of=${brief(target)}\` overwrites a disk.`);
    if (isSysrqTrigger(target)) host.report("forbidden:sysrq-trigger", "`dd` into /proc/sysrq-trigger can reboot or crash the machine.");
  }
}

/** `mkfs`, `mkfs.*`, `mke2fs`, `newfs`: the name alone is the verdict. */
export function isMkfs(name: string): boolean {
  return /^mkfs(?:\..+)?$/.test(name) || name === "mke2fs" || name === "newfs";
}

export function checkMkfs(invocation: Invocation, host: RuleHost): void {
  host.report("forbidden:mkfs", `\`${invocation.name}\` makes a new filesystem, erasing what the device held.`);
}

/** `tee` into a disk or `/proc/sysrq-trigger`. */
export function checkTee(invocation: Invocation, host: RuleHost): void {
  for (const target of operands(invocation.args)) reportDeviceWrite(host, target, "`tee` into");
}

/** `cp` onto a disk or `/proc/sysrq-trigger`. */
export function checkCp(invocation: Invocation, host: RuleHost): void {
  const target = operands(invocation.args, { short: "tS", long: ["--target-directory", "--suffix"] }).at(-1);
  if (target !== undefined) reportDeviceWrite(host, target, "`cp` onto");
}
