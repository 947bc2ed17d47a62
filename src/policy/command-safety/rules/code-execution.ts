/**
 * Rules of the code-execution family (docs/policy.md#command-safety): interpreters and what they run (inline
 * code, files, standard input, downloads), and the builtins that run text as code (\`eval\`,
 * \`source\`, \`trap\`).
 */
import { runFedCode, sourceSince4 } from "../literal.js";
import { codeSource, inlineCodeIsDangerous, interpreterFamily } from "../interpreters.js";
import { PLACEHOLDER_MARK } from "../scanner.js";
import { isTestRun } from "./known-safe.js";
import { checkPackageRemoval } from "./packages-and-infrastructure.js";
import type { CheckResult, Invocation, RuleHost } from "./rule-host.js";

/** An interpreter (`bash`, `python`, `node`, …) and the code it runs: inline, a file, standard input. */
export function checkInterpreter(invocation: Invocation, host: RuleHost): CheckResult {
  const family = interpreterFamily(invocation.name);
  if (family === undefined) return {};
  const source = codeSource(family, invocation.args);
  const result: CheckResult = {};
  const downloadInto = (word: string): boolean => {
    if (!host.downloads(word)) return false;
    host.report("forbidden:download-to-interpreter", `\`${invocation.name}\` runs code it downloads.`);
    return true;
  };
  for (const file of invocation.inputFiles) downloadInto(file);
  for (const text of invocation.herestrings) if (!downloadInto(text) && family === "shell") host.analyzeScript(host.render(text));

  switch (source.kind) {
    case "inline":
      if (downloadInto(source.code)) return result;
      if (family === "shell") {
        host.analyzeScript(host.render(source.code));
        return { transparent: true };
      }
      if (source.code.includes(PLACEHOLDER_MARK)) {
        host.report("approval:inline-code-spawn", `\`${invocation.name}\` runs inline code only known when it runs.`);
      } else if (inlineCodeIsDangerous(family, source.code)) {
        host.report("approval:inline-code-spawn", `\`${invocation.name}\` runs inline code that spawns processes or deletes files.`);
      }
      return result;
    case "file": {
      if (downloadInto(source.path)) return result;
      const fed = host.decisionsVersion >= 4 ? host.fedText(source.path) : undefined;
      if (fed !== undefined) runFedCode(family, invocation.name, fed, host);
      return result;
    }
    case "stdin":
      if (invocation.heredocs.length > 0 || invocation.herestrings.length > 0 || invocation.inputFiles.length > 0) {
        if (family === "shell") for (const heredoc of invocation.heredocs) host.analyzeScript(heredoc.body);
        else for (const heredoc of invocation.heredocs) if (inlineCodeIsDangerous(family, heredoc.body)) host.report("approval:inline-code-spawn", `\`${invocation.name}\` runs code that spawns processes or deletes files.`);
        return result;
      }
      return { runsStandardInput: true };
    case "none":
      return invocation.args.length === 1 ? { safe: "safe:version" } : result;
  }
}

// ── downloads and builtins that run text ─────────────────────────────────────────────────────

/** Commands that download; a download is judged by where it goes (into an interpreter: forbidden). */
export const DOWNLOADERS: ReadonlySet<string> = new Set(["curl", "wget", "fetch", "aria2c", "http", "https", "xh"]);

export function checkDownloader(): CheckResult {
  return { downloads: true };
}

/** `eval`: only a carrier; its words are judged as a script of their own. */
export function checkEval(invocation: Invocation, host: RuleHost): CheckResult {
  host.analyzeScript(invocation.args.map((arg) => host.render(arg)).join(" "));
  return { transparent: true };
}

/** `source` / `.`: runs a file (or standard input) in this shell. */
export function checkSource(invocation: Invocation, host: RuleHost): CheckResult {
  const { name, args } = invocation;
  const file = args[0];
  if (file !== undefined && host.downloads(file)) host.report("forbidden:download-to-interpreter", `\`${name}\` runs code it downloads.`);
  const fromStdin = file === undefined || file === "/dev/stdin" || file === "-";
  if (host.decisionsVersion >= 4) return sourceSince4(invocation, fromStdin, host);
  return fromStdin ? { runsStandardInput: true } : {};
}

/** `trap ACTION SIGNAL`: the action is judged as a script. */
export function checkTrap(invocation: Invocation, host: RuleHost): void {
  const action = invocation.args[0];
  if (action !== undefined && !action.startsWith("-")) host.analyzeScript(host.render(action));
}

/** An interpreter by name, with `python -m pip uninstall` judged as the package removal it is. */
export function checkInterpreterCommand(invocation: Invocation, host: RuleHost): CheckResult {
  const { name, args } = invocation;
  if (args[0] === "-m" && (args[1] === "pip" || args[1] === "pip3")) checkPackageRemoval({ ...invocation, name: "pip", args: args.slice(2) }, host);
  const result = checkInterpreter(invocation, host);
  if (result.safe === undefined && isTestRun(name, args)) result.safe = "safe:test-runner";
  return result;
}
