/**
 * Rules of the processes-and-machine family (docs/policy.md#command-safety): signalling every process, taking
 * the machine down, flushing the firewall.
 */
import { hasLongAbbreviated, operands } from "../words.js";
import type { Invocation, RuleHost } from "./rule-host.js";

/** `kill` with PID -1. */
export function checkKill(invocation: Invocation, host: RuleHost): void {
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

/** `pkill -u`, `killall -u`: every process of a user. */
export function checkUserKill(invocation: Invocation, host: RuleHost): void {
  const byUser = invocation.args.some((arg) => /^-[A-Za-z0-9]*[uU]/.test(arg) || /^--(?:e?uid|user)(?:=|$)/.test(arg));
  if (byUser) host.report("forbidden:kill-all", `\`${invocation.name} -u\` kills every process of that user.`);
}

export function checkKillall5(_invocation: Invocation, host: RuleHost): void {
  host.report("forbidden:kill-all", "`killall5` signals every process on the machine.");
}

// ── taking the machine down ──────────────────────────────────────────────────────────────────

export const SHUTDOWN: ReadonlySet<string> = new Set(["shutdown", "reboot", "halt", "poweroff"]);

export function checkShutdown(invocation: Invocation, host: RuleHost): void {
  host.report("forbidden:shutdown", `\`${invocation.name}\` takes the machine down.`);
}

/** `init 0`, `init 6` (and `telinit`): only runlevels 0 and 6 take the machine down. */
export function entersHaltRunlevel(invocation: Invocation): boolean {
  return ["0", "6"].includes(operands(invocation.args)[0] ?? "");
}

export function checkInit(invocation: Invocation, host: RuleHost): void {
  host.report("forbidden:shutdown", `\`${invocation.name} ${operands(invocation.args)[0] ?? ""}\` takes the machine down.`);
}

/** `systemctl poweroff`, `loginctl reboot`, … */
export function checkSystemctl(invocation: Invocation, host: RuleHost): void {
  const verb = operands(invocation.args).find((word) => /^(?:poweroff|reboot|halt|kexec)(?:\.target)?$/.test(word));
  if (verb !== undefined) host.report("forbidden:shutdown", `\`${invocation.name} ${verb}\` takes the machine down.`);
}

// ── firewall ─────────────────────────────────────────────────────────────────────────────────

export function isIptables(name: string): boolean {
  return /^ip6?tables(?:-legacy|-nft)?$/.test(name);
}

/** `iptables --flush` / `-F`. */
export function checkIptables(invocation: Invocation, host: RuleHost): void {
  const { name, args } = invocation;
  if (args.some((arg) => arg === "--flush" || /^-[A-Za-z]*F$/.test(arg)) || (host.decisionsVersion >= 4 && hasLongAbbreviated(args, "--flush"))) {
    host.report("forbidden:firewall-flush", `\`${name} --flush\` drops every firewall rule.`);
  }
}

export function flushesNft(invocation: Invocation): boolean {
  return invocation.args.includes("flush");
}

export function checkNft(_invocation: Invocation, host: RuleHost): void {
  host.report("forbidden:firewall-flush", "`nft flush` drops firewall rules.");
}
