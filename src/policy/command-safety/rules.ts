/**
 * The per-command rules of the catalogue (docs/policy.md#command-safety): given one resolved simple command (its
 * wrappers already looked through), report what it does that is forbidden or needs approval, and
 * whether it is known to be safe. The rules live by family in `rules/`; this file holds the table
 * that says which check judges which command, and the one function that applies it.
 */
import { checkAttacks } from "./attacks.js";
import { checkWritesOutside } from "./containment.js";
import { interpreterFamily } from "./interpreters.js";
import { checkSu, checkUserAccount, USER_ACCOUNT_COMMANDS } from "./rules/accounts-and-privileges.js";
import { checkDownloader, checkEval, checkInterpreterCommand, checkSource, checkTrap, DOWNLOADERS } from "./rules/code-execution.js";
import { checkCredentialRead, checkEnvironmentDump, checkTokenPrint } from "./rules/credentials-and-secrets.js";
import { checkChmodFamily, checkCp, checkDd, checkFind, checkMkfs, checkMv, checkRm, checkTee, isMkfs } from "./rules/files-and-disks.js";
import { checkChangeDirectory, safeRule } from "./rules/known-safe.js";
import { checkDocker, checkKubectl, checkPackageRemoval, checkSql, checkTerraform, PACKAGE_MANAGERS, SQL_CLIENTS } from "./rules/packages-and-infrastructure.js";
import {
  checkInit,
  checkIptables,
  checkKill,
  checkKillall5,
  checkNft,
  checkShutdown,
  checkSystemctl,
  checkUserKill,
  entersHaltRunlevel,
  flushesNft,
  isIptables,
  SHUTDOWN,
} from "./rules/processes-and-machine.js";
import type { CheckResult, Invocation, RuleHost } from "./rules/rule-host.js";
import { checkGit } from "./rules/version-control.js";

/** The families of the catalogue's per-command rules, one file each under `rules/`. */
export type RuleFamily =
  | "files-and-disks"
  | "processes-and-machine"
  | "accounts-and-privileges"
  | "version-control"
  | "packages-and-infrastructure"
  | "code-execution"
  | "known-safe";

/** One row of {@link commandRules}: which commands it judges, and the check that judges them. */
export interface CommandRule {
  family: RuleFamily;
  /** The command names it judges: a set of names, or a test of the name. */
  commands: ReadonlySet<string> | ((name: string) => boolean);
  /** A further condition on the command; when it does not hold, the next row is tried. */
  when?: (invocation: Invocation) => boolean;
  /**
   * Reports what it finds through `host`. A result ends the judgement of the command; none
   * (`void`) lets the general checks run after it (environment dumps, token prints, known-safe).
   */
  check(invocation: Invocation, host: RuleHost): CheckResult | void;
}

const names = (...list: string[]): ReadonlySet<string> => new Set(list);

/**
 * Which check judges which command. The first row that matches a command's name wins, so the
 * order is part of what a decision means: `bun` is judged as a package manager before it could be
 * judged as an interpreter. Adding a row, or moving one, changes classifications — and recorded
 * decisions are a contract (docs/replay.md#decision-versions): a new rule branches on `host.decisionsVersion`.
 */
export const commandRules: readonly CommandRule[] = [
  { family: "files-and-disks", commands: names("rm"), check: checkRm },
  { family: "files-and-disks", commands: names("find"), check: checkFind },
  { family: "files-and-disks", commands: isMkfs, check: checkMkfs },
  { family: "files-and-disks", commands: names("dd"), check: checkDd },
  { family: "files-and-disks", commands: names("tee"), check: checkTee },
  { family: "files-and-disks", commands: names("cp"), check: checkCp },
  { family: "processes-and-machine", commands: names("kill"), check: checkKill },
  { family: "processes-and-machine", commands: names("pkill", "killall"), check: checkUserKill },
  { family: "processes-and-machine", commands: names("killall5"), check: checkKillall5 },
  { family: "files-and-disks", commands: names("chmod", "chown", "chgrp"), check: checkChmodFamily },
  { family: "processes-and-machine", commands: SHUTDOWN, check: checkShutdown },
  { family: "processes-and-machine", commands: names("init", "telinit"), when: entersHaltRunlevel, check: checkInit },
  { family: "processes-and-machine", commands: names("systemctl", "loginctl"), check: checkSystemctl },
  { family: "files-and-disks", commands: names("mv"), check: checkMv },
  { family: "processes-and-machine", commands: isIptables, check: checkIptables },
  { family: "processes-and-machine", commands: names("nft"), when: flushesNft, check: checkNft },
  { family: "accounts-and-privileges", commands: names("su"), check: checkSu },
  { family: "accounts-and-privileges", commands: USER_ACCOUNT_COMMANDS, check: checkUserAccount },
  { family: "version-control", commands: names("git"), check: checkGit },
  { family: "packages-and-infrastructure", commands: PACKAGE_MANAGERS, check: checkPackageRemoval },
  { family: "packages-and-infrastructure", commands: names("docker", "podman", "nerdctl"), check: checkDocker },
  { family: "packages-and-infrastructure", commands: names("kubectl", "oc"), check: checkKubectl },
  { family: "packages-and-infrastructure", commands: names("terraform", "tofu", "terragrunt"), check: checkTerraform },
  { family: "packages-and-infrastructure", commands: SQL_CLIENTS, check: checkSql },
  { family: "code-execution", commands: DOWNLOADERS, check: checkDownloader },
  { family: "code-execution", commands: names("eval"), check: checkEval },
  { family: "code-execution", commands: names("source", "."), check: checkSource },
  { family: "code-execution", commands: names("trap"), check: checkTrap },
  { family: "known-safe", commands: names("cd", "pushd", "popd"), check: checkChangeDirectory },
  { family: "code-execution", commands: (name) => interpreterFamily(name) !== undefined, check: checkInterpreterCommand },
];

function judges(rule: CommandRule, invocation: Invocation): boolean {
  const named = typeof rule.commands === "function" ? rule.commands(invocation.name) : rule.commands.has(invocation.name);
  return named && (rule.when === undefined || rule.when(invocation));
}

/**
 * Apply every rule to one resolved simple command, reporting what it finds through `host`: the
 * checks that look at any command (credential reads; from decisions version 4 attacks and writes
 * outside the workspace), then the first row of {@link commandRules} that judges it, then — unless
 * that row ended the judgement — environment dumps, token prints and the known-safe rules.
 *
 * @example
 * checkCommand({ name: "rm", args: ["-rf", "/"], … }, host) // host.report("forbidden:rm-rf-root", …)
 */
export function checkCommand(invocation: Invocation, host: RuleHost): CheckResult {
  checkCredentialRead(invocation, host);
  if (host.decisionsVersion >= 4) {
    checkAttacks(invocation, host);
    checkWritesOutside(invocation, host);
  }

  const rule = commandRules.find((candidate) => judges(candidate, invocation));
  const result = rule?.check(invocation, host);
  if (result) return result;

  checkEnvironmentDump(invocation, host);
  checkTokenPrint(invocation, host);

  const safe = safeRule(invocation, host.decisionsVersion);
  return safe === undefined ? {} : { safe };
}
