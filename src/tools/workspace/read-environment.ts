import { realpathSync } from "node:fs";
import path from "node:path";
import type { ToolContext } from "../define-tool.js";

/** The gate rules that let a command run unasked as a read (decisions version 4 on; docs/policy.md). */
const readRules: ReadonlySet<string> = new Set(["command=safe:read-only", "command=safe:version"]);

/**
 * git settings that make a read run a program, turned off for a read the gate let through
 * uncontained (`GIT_CONFIG_COUNT` outranks every config file, the repository's included).
 * `diff.external` and the attribute drivers (`diff.<driver>.command`, `…textconv`, `filter.*`) have
 * no "off" value: they come only from config files, and the repository's is a protected path.
 */
export const readGitSettings: readonly (readonly [string, string])[] = [
  ["core.hooksPath", "/dev/null"],
  ["core.fsmonitor", "false"],
  ["core.pager", "cat"],
  ["log.showSignature", "false"],
];

/**
 * Variables that make a shell or a program run something else than the command says: the shell's
 * startup files and exported functions, the dynamic linker's preloads, pagers. (`GIT_*` goes whole.)
 */
const executingVariables = /^(?:GIT_.*|BASH_ENV|ENV|BASH_FUNC_.*|SHELLOPTS|BASHOPTS|PROMPT_COMMAND|PS4|IFS|CDPATH|LD_PRELOAD|LD_LIBRARY_PATH|LD_AUDIT|PAGER|LESSOPEN|LESSCLOSE|EDITOR|VISUAL)$/;

/** What `PATH` becomes when nothing of the host's is left. */
const fallbackPath = "/usr/local/bin:/usr/bin:/bin";

/**
 * The environment of an uncontained command: the host's, unless the gate let the call through as a
 * known-safe read (`ctx.clearance.rule` is `command=safe:read-only` or `command=safe:version`, and
 * no person approved it). Then it runs with git's repository hooks and `fsmonitor` off and no pager
 * (`GIT_CONFIG_COUNT`/`GIT_CONFIG_KEY_n`/`GIT_CONFIG_VALUE_n`, and `GIT_CONFIG_PARAMETERS` for a git
 * older than 2.31), every inherited `GIT_*` variable removed (`GIT_DIR`, `GIT_EXTERNAL_DIFF`,
 * `GIT_TRACE`, `GIT_EXEC_PATH`, …) with the shell's and linker's executing variables, and a `PATH`
 * without empty, `.`, relative entries or entries inside the workspace — so a script named `ls` in
 * the repository is never what `ls` runs. A command a person approved (`git commit`) keeps the
 * host's environment, its hooks included (docs/security.md, "Without a sandbox").
 *
 * @example
 * uncontainedEnvironment({ PATH: ".:/usr/bin", GIT_DIR: "/x" }, { rule: "command=safe:read-only" }, "/work/app");
 * // { PATH: "/usr/bin", GIT_CONFIG_COUNT: "4", GIT_CONFIG_KEY_0: "core.hooksPath", … }
 */
export function uncontainedEnvironment(
  env: Readonly<Record<string, string | undefined>>,
  clearance: ToolContext["clearance"],
  workspaceRoot: string,
): Record<string, string | undefined> {
  if (clearance === undefined || clearance.approvedBy !== undefined || !readRules.has(clearance.rule)) return { ...env };
  const kept: Record<string, string | undefined> = Object.fromEntries(Object.entries(env).filter(([name]) => !executingVariables.test(name)));
  const roots = [path.resolve(workspaceRoot), realOrSelf(workspaceRoot)];
  const entries = (env.PATH ?? "").split(":").filter((entry) => {
    if (entry === "" || !path.isAbsolute(entry)) return false;
    return ![path.resolve(entry), realOrSelf(entry)].some((candidate) => roots.some((root) => candidate === root || candidate.startsWith(root.endsWith(path.sep) ? root : root + path.sep)));
  });
  kept.PATH = entries.length > 0 ? entries.join(":") : fallbackPath;
  kept.GIT_CONFIG_COUNT = String(readGitSettings.length);
  readGitSettings.forEach(([key, value], index) => {
    kept[`GIT_CONFIG_KEY_${index}`] = key;
    kept[`GIT_CONFIG_VALUE_${index}`] = value;
  });
  kept.GIT_CONFIG_PARAMETERS = readGitSettings.map(([key, value]) => `'${key}'='${value}'`).join(" ");
  return kept;
}

function realOrSelf(entry: string): string {
  try {
    return realpathSync.native(entry);
  } catch {
    return path.resolve(entry);
  }
}
