/**
 * Rules of the packages-and-infrastructure family (docs/policy.md#command-safety): removing installed packages,
 * pruning containers, deleting cluster resources, destroying infrastructure, dropping SQL data.
 */
import { firstOperand, operands } from "../words.js";
import { hasOption, type Invocation, type RuleHost } from "./rule-host.js";

/** A package manager (or `python -m pip`) removing installed packages. */
export function checkPackageRemoval(invocation: Invocation, host: RuleHost): void {
  const { name, args } = invocation;
  const verb = args[firstOperand(args, { short: "oct", long: ["--option", "--config-file", "--target-release", "--installroot", "--releasever"] })];
  const globalInstall = hasOption(host, args, "--global") || args.includes("-g") || args.includes("--location=global");
  let removes = false;
  switch (name) {
    case "apt":
    case "apt-get":
    case "aptitude":
      removes = verb === "remove" || verb === "purge" || verb === "autoremove" || verb === "autopurge";
      break;
    case "yum":
    case "dnf":
    case "microdnf":
      removes = verb === "remove" || verb === "erase" || verb === "autoremove";
      break;
    case "zypper":
      removes = verb === "remove" || verb === "rm";
      break;
    case "pacman":
      removes = args.some((arg) => /^-R[a-z]*$/.test(arg) || arg === "--remove");
      break;
    case "apk":
      removes = verb === "del";
      break;
    case "dpkg":
      removes = args.some((arg) => /^-[rP]$/.test(arg) || arg === "--remove" || arg === "--purge");
      break;
    case "rpm":
      removes = args.some((arg) => /^-e/.test(arg) || arg === "--erase");
      break;
    case "pip":
    case "pip3":
    case "pipx":
    case "uv":
    case "gem":
    case "cargo":
    case "conda":
    case "mamba":
      removes = verb === "uninstall" || ((name === "conda" || name === "mamba") && verb === "remove") || (name === "uv" && args.includes("pip") && args.includes("uninstall"));
      break;
    case "npm":
    case "pnpm":
    case "bun":
      removes = globalInstall && ["uninstall", "un", "unlink", "remove", "rm", "r"].includes(verb ?? "");
      break;
    case "yarn":
      removes = verb === "global" && ["remove", "rm"].includes(args[firstOperand(args) + 1] ?? "");
      break;
    case "brew":
    case "port":
    case "snap":
    case "flatpak":
    case "choco":
    case "winget":
      removes = ["uninstall", "remove", "rm"].includes(verb ?? "");
      break;
  }
  if (removes) host.report("approval:package-removal", `\`${name}\` removes installed packages from the system.`);
}

export const PACKAGE_MANAGERS: ReadonlySet<string> = new Set([
  "apt", "apt-get", "aptitude", "yum", "dnf", "microdnf", "zypper", "pacman", "apk", "dpkg", "rpm",
  "pip", "pip3", "pipx", "uv", "gem", "cargo", "conda", "mamba", "npm", "pnpm", "bun", "yarn",
  "brew", "port", "snap", "flatpak", "choco", "winget",
]);

const DOCKER_GLOBAL = { short: "Hcl", long: ["--host", "--context", "--config", "--log-level", "--tlscacert", "--tlscert", "--tlskey"] };
const KUBECTL_GLOBAL = {
  short: "nsl",
  long: ["--namespace", "--context", "--kubeconfig", "--server", "--cluster", "--user", "--token", "--as", "--as-group", "--request-timeout", "--selector"],
};

export function checkDocker(invocation: Invocation, host: RuleHost): void {
  const words = operands(invocation.args, DOCKER_GLOBAL);
  if (words[0] === "prune" || words[1] === "prune") {
    host.report("approval:docker-prune", `\`${invocation.name} prune\` deletes containers, images, volumes or caches for good.`);
  }
}

export function checkKubectl(invocation: Invocation, host: RuleHost): void {
  if (invocation.args[firstOperand(invocation.args, KUBECTL_GLOBAL)] === "delete") {
    host.report("approval:kubectl-delete", "`kubectl delete` removes resources from a shared cluster.");
  }
}

export function checkTerraform(invocation: Invocation, host: RuleHost): void {
  const args = invocation.args;
  const verb = args[firstOperand(args)];
  const destroys = verb === "destroy" || (verb === "apply" && args.some((arg) => arg === "-destroy" || arg === "--destroy"));
  if (destroys) host.report("approval:terraform-destroy", `\`${invocation.name} destroy\` tears down real infrastructure.`);
}

// ── SQL ──────────────────────────────────────────────────────────────────────────────────────

/** Database clients whose arguments, heredocs and piped input are read as SQL. */
export const SQL_CLIENTS: ReadonlySet<string> = new Set(["psql", "mysql", "mariadb", "sqlite3", "sqlite", "duckdb", "sqlcmd", "clickhouse-client", "cockroach"]);
/** SQL that destroys data wholesale: `DROP TABLE|DATABASE|SCHEMA`, `TRUNCATE`, any case. */
export const SQL_DESTRUCTIVE = /\bdrop\s+(?:table|database|schema)\b|\btruncate\b/i;

export function checkSql(invocation: Invocation, host: RuleHost): void {
  const texts = [...invocation.args, ...invocation.herestrings, ...invocation.heredocs.map((heredoc) => heredoc.body)];
  if (texts.some((text) => SQL_DESTRUCTIVE.test(text))) {
    host.report("approval:sql-drop", `\`${invocation.name}\` is given SQL that drops or truncates data.`);
  }
}
