/**
 * The command safety catalogue (docs/policy.md#command-safety): every rule the classifier can report, with its
 * stable id and verdict. `docs/policy.md` lists the same rules with an example and a
 * benign twin each; a test checks the two agree.
 */

/** How a command line classifies; the gate blocks `forbidden`, asks for `needs-approval`. */
export type CommandSafetyVerdict = "forbidden" | "needs-approval" | "known-safe" | "unknown";

/** One rule of the catalogue. */
export interface CommandSafetyRule {
  id: string;
  verdict: CommandSafetyVerdict;
  /** What the rule catches, in a phrase. */
  catches: string;
  /** The first decisions version that reports the rule (absent: every version). */
  since?: number;
  /** The last decisions version that reports the rule (absent: every version since `since`). */
  until?: number;
}

/**
 * Every rule, most severe verdict first. Ids are stable: they are recorded in the log as the rule
 * that decided, so renaming one changes how old logs read.
 */
export const COMMAND_SAFETY_RULES = [
  { id: "forbidden:rm-rf-root", verdict: "forbidden", catches: "recursive rm of / or /* (any flag spelling), or with --no-preserve-root" },
  { id: "forbidden:rm-rf-home", verdict: "forbidden", catches: "recursive rm of a home directory: ~, ~/, ~/*, $HOME, ${HOME}, ~user" },
  { id: "forbidden:rm-rf-system-dir", verdict: "forbidden", catches: "recursive rm of a top-level system directory (/etc, /usr, /var, …) or all its children" },
  { id: "forbidden:mkfs", verdict: "forbidden", catches: "making a filesystem: mkfs, mkfs.ext4, mke2fs, …" },
  { id: "forbidden:dd-disk", verdict: "forbidden", catches: "dd writing to a disk device (of=/dev/sd*, nvme*, hd*, vd*, xvd*, mmcblk*, disk*)" },
  { id: "forbidden:write-block-device", verdict: "forbidden", catches: "a redirection, tee or cp into a disk device" },
  { id: "forbidden:fork-bomb", verdict: "forbidden", catches: "a shell function that pipes into itself in the background, in any spacing or name" },
  { id: "forbidden:kill-all", verdict: "forbidden", catches: "kill with PID -1 (every process), pkill -u / killall -u (every process of a user), killall5" },
  { id: "forbidden:chmod-recursive-system", verdict: "forbidden", catches: "chmod -R of / or a top-level system directory, whatever the mode" },
  { id: "forbidden:chown-recursive-system", verdict: "forbidden", catches: "chown -R / chgrp -R of / or a top-level system directory" },
  { id: "forbidden:shutdown", verdict: "forbidden", catches: "shutdown, reboot, halt, poweroff, init 0|6, telinit 0|6, systemctl poweroff|reboot|halt|kexec" },
  { id: "forbidden:mv-root", verdict: "forbidden", catches: "mv of /, /* or a top-level system directory" },
  { id: "forbidden:sysrq-trigger", verdict: "forbidden", catches: "writing to /proc/sysrq-trigger (redirection, tee, dd)" },
  { id: "forbidden:firewall-flush", verdict: "forbidden", catches: "iptables/ip6tables -F or --flush, nft flush" },
  { id: "forbidden:download-to-interpreter", verdict: "forbidden", catches: "curl/wget output piped into a shell or interpreter, or fed to one by process or command substitution" },
  { id: "forbidden:disk-wipe", verdict: "forbidden", catches: "wipefs -a, blkdiscard, shred of a disk device, sgdisk --zap-all|--clear", since: 4 },
  { id: "approval:sudo", verdict: "needs-approval", catches: "sudo, doas, pkexec" },
  { id: "approval:su", verdict: "needs-approval", catches: "su" },
  { id: "approval:user-account", verdict: "needs-approval", catches: "passwd, usermod, useradd, userdel, adduser, deluser, group*, chpasswd, visudo" },
  { id: "approval:git-force-push", verdict: "needs-approval", catches: "git push --force, -f, --force-with-lease, --force-if-includes, or a +refspec" },
  { id: "approval:git-reset-hard", verdict: "needs-approval", catches: "git reset --hard" },
  { id: "approval:git-clean", verdict: "needs-approval", catches: "git clean with -f/--force and without -n/--dry-run (-fd, -fdx, -xdf, …)" },
  { id: "approval:rm-rf-outside", verdict: "needs-approval", catches: "recursive rm (or find -delete) of a path outside the workspace and the temp directory, or of a path only known at run time" },
  { id: "approval:package-removal", verdict: "needs-approval", catches: "apt/apt-get remove|purge|autoremove, yum/dnf remove|erase, pip uninstall, npm uninstall -g, brew uninstall, …" },
  { id: "approval:docker-prune", verdict: "needs-approval", catches: "docker … prune (system, image, container, volume, network, builder)" },
  { id: "approval:kubectl-delete", verdict: "needs-approval", catches: "kubectl delete" },
  { id: "approval:terraform-destroy", verdict: "needs-approval", catches: "terraform/tofu destroy, apply -destroy" },
  { id: "approval:sql-drop", verdict: "needs-approval", catches: "psql/mysql/mariadb/sqlite3 given DROP TABLE|DATABASE|SCHEMA or TRUNCATE" },
  { id: "approval:credential-read", verdict: "needs-approval", catches: "a command that reads a credential file: .env*, .ssh/, id_rsa, .aws/credentials, .npmrc, .gnupg/, …" },
  { id: "approval:environment-dump", verdict: "needs-approval", catches: "printenv, env with no command, export -p, set with no arguments, echo/printf of a secret-named variable ($*_TOKEN, $*_KEY, …)" },
  { id: "approval:token-print", verdict: "needs-approval", catches: "gh auth token, gcloud auth print-access-token, az account get-access-token, …" },
  { id: "approval:inline-code-spawn", verdict: "needs-approval", catches: "node -e, python -c, perl -e, ruby -e, php -r whose code spawns processes or deletes files" },
  { id: "approval:dynamic-command", verdict: "needs-approval", catches: "a command name only known at run time: $(…), `…`, $VAR", until: 3 },
  { id: "approval:write-outside", verdict: "needs-approval", catches: "a redirection, tee, sed -i, truncate, cp/mv/install/ln/touch, dd of=, sort -o or git --output= writing outside the workspace and the temp directories", since: 4 },
  { id: "approval:reverse-shell", verdict: "needs-approval", catches: "nc/ncat/netcat -e|-c, /dev/tcp/ or /dev/udp/, socat exec:|system:", since: 4 },
  { id: "approval:scheduled-job", verdict: "needs-approval", catches: "crontab (other than -l), at, batch, systemd-run: code that runs later, outside the session", since: 4 },
  { id: "approval:remote-copy", verdict: "needs-approval", catches: "scp, rsync or sftp with a host: operand: copying to or from another machine", since: 4 },
  { id: "approval:unparsable", verdict: "needs-approval", catches: "text a shell would reject (unbalanced quotes, unclosed substitution) or too large or deep to analyse" },
  { id: "safe:read-only", verdict: "known-safe", catches: "ls, cat, head, tail, wc, grep, rg, find without -exec/-delete, echo, git status|diff|log|show, … with no write redirection" },
  { id: "safe:version", verdict: "known-safe", catches: "node --version, npm -v, python --version, git --version, …" },
  { id: "safe:test-runner", verdict: "known-safe", catches: "npm test, npm run test, npx vitest run, jest, pytest, go test, cargo test, make test, tsc --noEmit" },
  { id: "contain:read-outside", verdict: "unknown", catches: "a read-only command reading files outside the workspace and the temp directories (absolute, ~, .., after cd elsewhere)", since: 4 },
  { id: "contain:dynamic-command", verdict: "unknown", catches: "a command name only known at run time ($(…), `…`, $VAR, an alias); what it resolves to is still judged", since: 4 },
  { id: "unknown", verdict: "unknown", catches: "everything else: the tool's declared risk class decides" },
] as const satisfies readonly CommandSafetyRule[];

/** The id of a rule of the catalogue. */
export type CommandSafetyRuleId = (typeof COMMAND_SAFETY_RULES)[number]["id"];

/** What {@link classifyCommand} returns: the verdict, the rule that decided, and why. */
export interface CommandVerdict {
  verdict: CommandSafetyVerdict;
  /** A stable rule id such as `forbidden:rm-rf-root`, `approval:sudo`, `safe:read-only` or `unknown`. */
  rule: CommandSafetyRuleId;
  /** One human sentence. */
  reason: string;
  /** The simple command that decided, as the classifier read it. */
  command?: string;
}

const VERDICT_BY_RULE: ReadonlyMap<string, CommandSafetyVerdict> = new Map(
  COMMAND_SAFETY_RULES.map((rule) => [rule.id, rule.verdict]),
);

/** The verdict a rule reports. */
export function verdictOfRule(rule: CommandSafetyRuleId): CommandSafetyVerdict {
  return VERDICT_BY_RULE.get(rule) ?? "unknown";
}

const SEVERITY: Record<CommandSafetyVerdict, number> = { "known-safe": 0, unknown: 1, "needs-approval": 2, forbidden: 3 };

/** forbidden > needs-approval > unknown > known-safe. */
export function severityOf(verdict: CommandSafetyVerdict): number {
  return SEVERITY[verdict];
}
