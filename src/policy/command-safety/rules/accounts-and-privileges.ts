/**
 * Rules of the accounts-and-privileges family (docs/policy.md#command-safety): switching user, changing user
 * accounts and their privileges.
 */
import { optionValues } from "../words.js";
import type { Invocation, RuleHost } from "./rule-host.js";

/** Commands that change user accounts or their privileges. */
export const USER_ACCOUNT_COMMANDS: ReadonlySet<string> = new Set([
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

/** `su`: asks; the command it runs (`-c`) is judged on its own. */
export function checkSu(invocation: Invocation, host: RuleHost): void {
  host.report("approval:su", "`su` switches to another user.");
  for (const script of optionValues(invocation.args, ["-c"], ["--command"])) host.analyzeScript(host.render(script));
}

export function checkUserAccount(invocation: Invocation, host: RuleHost): void {
  host.report("approval:user-account", `\`${invocation.name}\` changes user accounts or their privileges.`);
}
