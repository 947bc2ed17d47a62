/**
 * The known-safe family (docs/policy.md#command-safety): read-only commands, version queries, test runners, and
 * changing directory (which also moves where later relative paths start).
 */
import path from "node:path";
import { interpreterFamily } from "../interpreters.js";
import type { PathContext, WorkingDirectory } from "../paths.js";
import { isDynamic } from "../paths.js";
import { firstOperand, hasLongAbbreviated, operands } from "../words.js";
import type { CheckResult, Invocation, RuleHost, SafeRuleId } from "./rule-host.js";

const READ_ONLY = new Set([
  "ls", "cat", "head", "tail", "wc", "grep", "egrep", "fgrep", "rg", "pwd", "echo", "printf", "true", "false",
  "date", "whoami", "id", "which", "type", "file", "stat", "du", "df", "tree", "sort", "uniq", "cut", "tr",
  "diff", "cmp", "comm", "basename", "dirname", "realpath", "readlink", "uname", "hostname", "nl", "tac",
  "md5sum", "sha1sum", "sha256sum", "sha512sum", "test", "[", "[[", "seq", "sleep", "cd", "jq", "column",
  "paste", "expr",
]);
const VERSION_TOOLS = new Set(["npm", "npx", "pnpm", "yarn", "pip", "pip3", "go", "cargo", "rustc", "tsc", "deno", "java", "make", "docker", "kubectl", "terraform", "gcc", "clang"]);
const TEST_RUNNERS = new Set(["vitest", "jest", "mocha", "pytest", "ava", "tap"]);
const PACKAGE_RUNNERS = new Set(["npm", "pnpm", "yarn", "bun"]);

function readOnlyVariant(invocation: Invocation, abbreviations: boolean): boolean {
  const { name, args } = invocation;
  switch (name) {
    case "sort":
      if (abbreviations && hasLongAbbreviated(args, "--output", "--compress-program")) return false;
      return !args.some((arg) => /^-[A-Za-z]*o/.test(arg) || arg.startsWith("--output") || arg.startsWith("--compress-program"));
    case "uniq":
      return operands(args, { short: "fsw" }).length <= 1;
    case "tree":
      return !args.some((arg) => arg === "-o" || arg.startsWith("-o"));
    case "date":
      return !args.some((arg) => arg === "-s" || arg.startsWith("--set") || (!arg.startsWith("-") && !arg.startsWith("+")));
    case "hostname":
      return args.every((arg) => arg.startsWith("-") && arg !== "-F" && !arg.startsWith("--file") && arg !== "-b" && arg !== "--boot");
    case "rg":
      return !args.some((arg) => arg.startsWith("--pre"));
    default:
      return READ_ONLY.has(name);
  }
}

/** A test run (`npm test`, `vitest`, `go test`, `tsc --noEmit`, `python -m pytest`, …). */
export function isTestRun(name: string, args: readonly string[]): boolean {
  const first = args[0];
  if (TEST_RUNNERS.has(name)) return true;
  if (PACKAGE_RUNNERS.has(name)) {
    if (first === "test" || first === "t") return true;
    if ((first === "run" || first === "run-script") && /^test(?::|$)/.test(args[1] ?? "")) return true;
    if (name === "bun" && first === "test") return true;
    if ((first === "exec" || first === "dlx" || first === "x") && args[1] !== undefined) return isTestRun(args[1], args.slice(2));
    if (name !== "npm" && first !== undefined && TEST_RUNNERS.has(first)) return true;
    return false;
  }
  if (name === "npx" || name === "pnpx" || name === "bunx") {
    const index = firstOperand(args, { short: "p", long: ["--package"] });
    const runner = args[index];
    return runner !== undefined && (TEST_RUNNERS.has(runner) || (runner === "tsc" && args.includes("--noEmit")));
  }
  if (name === "go" || name === "cargo" || name === "deno") return first === "test";
  if (name === "make") return args[firstOperand(args, { short: "CfIjlo", long: [] })] === "test";
  if (name === "tsc") return args.includes("--noEmit") && !args.some((arg) => arg === "--build" || arg === "-b" || arg === "--watch" || arg === "-w");
  if (interpreterFamily(name) === "python") return args[0] === "-m" && args[1] === "pytest";
  return false;
}

/** The known-safe rule a command meets, if any; judged after every other rule found nothing to end on. */
export function safeRule(invocation: Invocation, decisionsVersion: number): SafeRuleId | undefined {
  const { name, args } = invocation;
  if (VERSION_TOOLS.has(name) && args.length === 1 && ["--version", "-v", "-V", "version", "-version"].includes(args[0] as string)) {
    return "safe:version";
  }
  if (isTestRun(name, args)) return "safe:test-runner";
  return readOnlyVariant(invocation, decisionsVersion >= 4) ? "safe:read-only" : undefined;
}

// ── changing directory ───────────────────────────────────────────────────────────────────────

function newWorkingDirectory(invocation: Invocation, paths: PathContext): WorkingDirectory {
  const target = operands(invocation.args)[0];
  if (invocation.name === "popd" || target === "-") return { kind: "unknown" };
  if (target === undefined) return { kind: "path", path: "~" };
  if (isDynamic(target.replace(/^\$HOME(?=\/|$)/, "~"))) return { kind: "unknown" };
  const written = target.replace(/^\$HOME(?=\/|$)/, "~");
  if (written.startsWith("/") || written.startsWith("~")) return { kind: "path", path: written };
  const current = paths.cwd;
  if (current?.kind === "unknown") return current;
  return { kind: "path", path: path.posix.join(current?.kind === "path" ? current.path : ".", written) };
}

/** `cd`, `pushd`, `popd`: read-only, and later relative paths start where they lead. */
export function checkChangeDirectory(invocation: Invocation, host: RuleHost): CheckResult {
  return { safe: "safe:read-only", cwd: newWorkingDirectory(invocation, host.paths) };
}
