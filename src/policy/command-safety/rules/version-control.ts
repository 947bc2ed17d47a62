/**
 * Rules of the version-control family (docs/policy.md#command-safety): git commands that lose work (force push,
 * \`reset --hard\`, \`clean -f\`), git settings that run commands, and the read-only git commands.
 */
import { firstOperand, hasLong, hasLongAbbreviated, operands, optionValues, shortLetters } from "../words.js";
import { hasOption, type CheckResult, type Invocation, type RuleHost } from "./rule-host.js";

const GIT_GLOBAL = { short: "Cc", long: ["--git-dir", "--work-tree", "--namespace", "--exec-path", "--config-env", "--super-prefix"] };
/** `git -c KEY=VALUE` keys whose value git runs as a command. */
const GIT_COMMAND_KEYS = /^(?:core\.(?:pager|fsmonitor|sshcommand|editor|hookspath|askpass)|sequence\.editor|diff\.external|gpg\.program|credential\.helper|(?:diff|merge|filter)\..*\.(?:command|textconv|clean|smudge|process|driver))$/i;
const GIT_READ_ONLY = new Set(["status", "diff", "log", "show", "rev-parse", "ls-files", "blame", "ls-tree", "cat-file", "describe", "shortlog"]);
const GIT_BRANCH_WRITES = new Set(["-d", "-D", "--delete", "-m", "-M", "--move", "-c", "-C", "--copy", "-f", "--force", "-u", "--set-upstream-to", "--unset-upstream", "--edit-description", "--track", "--no-track"]);

/** `git`: history-losing subcommands ask; settings that run commands are judged as commands; read-only subcommands are safe. */
export function checkGit(invocation: Invocation, host: RuleHost): CheckResult {
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
