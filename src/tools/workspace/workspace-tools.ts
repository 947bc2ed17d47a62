import path from "node:path";
import { isSecretVariableName } from "../../util/secret-names.js";
import type { CommandSandbox } from "./command-sandbox.js";
import type { ToolDefinition } from "../define-tool.js";
import { runCommandTool } from "./run-command-tool.js";
import { searchTextTool } from "./search-text-tool.js";
import { editFileTool, listDirTool, readFileTool, writeFileTool } from "./workspace-file-tools.js";
import type { WorkspaceToolSettings } from "./workspace-tool-settings.js";
import { defaultCommandTimeoutMs } from "./workspace-tool-settings.js";
import { defaultMaxResultChars } from "../define-tool.js";

/** What `workspaceTools` accepts. */
export interface WorkspaceToolsOptions {
  /**
   * The directory the tools work in: relative paths resolve against it and nothing outside it is
   * read, written or run in. Set `policy.workspace.root` to the same directory — the gate confines
   * paths against that one, and a tool refuses a path outside either.
   */
  root: string;
  /** How long `run_command` lets a command run before it kills its process group. Default 60 000. */
  commandTimeoutMs?: number;
  /** The most characters a tool returns (file text, listing, matches, command output). Default `defaultMaxResultChars`, a tool's own default. */
  maxOutputChars?: number;
  /** The shell `run_command` runs `<shell> -c <command>` with. Default `/bin/sh`. */
  shell?: string;
  /**
   * The environment of `run_command`'s shell. Default: this process's environment without variables
   * whose names end in `_KEY`, `_TOKEN`, `_SECRET`, `_PASSWORD` (and the like), so the model's
   * shell does not hold the host's API keys. Pass `process.env` to hand them over on purpose.
   */
  env?: Readonly<Record<string, string | undefined>>;
  /**
   * Paths inside the workspace that `write_file` and `edit_file` refuse to write into, relative to
   * `root` or absolute — above all the turnlog log directory when it lies in the workspace (as
   * `./.turnlog` does), so a model cannot overwrite the record of what it did. Reads are not
   * refused. `run_command` is not covered, unless it runs in a `sandbox`, where they are read-only;
   * outside one a command's text goes through command safety instead.
   */
  protectedPaths?: readonly string[];
  /**
   * Paths inside the workspace that `write_file` and `edit_file` write only in a call a person
   * approved — the protected entries the gate asks for in every mode from decisions version 5
   * (`.git/config`, `.git/hooks`, `turnlog.config.json`, …; docs/security.md, "Protected paths") —
   * and that the sandbox mounts read-only like `protectedPaths`. A call that ran without a person's
   * approval (an older session's, or a host calling the tool directly) is refused.
   */
  approvalPaths?: readonly string[];
  /**
   * Whether `read_file`, `edit_file` and `search_text` open a regular file that has more than one
   * link. Default `false`: a hard link is a file inside the workspace that may be a file outside it
   * under a second name (`ln ~/.ssh/id_ed25519 notes.txt`), so it is refused (`search_text` skips
   * it and says so). Pass `true` for a workspace hard-linked on purpose — a pnpm `node_modules`
   * linked to its store — accepting that a link made to a file outside can then be read.
   * `write_file` is not affected: it replaces the link by a new file and never writes through it.
   */
  allowHardLinks?: boolean;
  /**
   * Runs `run_command`'s shell contained (docs/security.md#the-command-sandbox-bubblewrap), e.g. `bubblewrapSandbox()`: only the
   * workspace writable (its protected paths read-only), a private `/tmp`, no network, credential
   * directories hidden, an allowlisted environment, and nothing left running afterwards. When the
   * sandbox cannot run on this machine, `run_command` runs nothing and says why (it never falls
   * back to running uncontained). Default: none — commands run as the host's own user.
   */
  sandbox?: CommandSandbox;
}

/**
 * The built-in workspace tools (docs/workspace-tools.md), opt-in: `read_file`, `list_dir`, `search_text`
 * (read-only-local), `write_file`, `edit_file` (workspace-write) and `run_command` (a command tool,
 * destructive-local, serial). Every path is declared to the gate and resolved again at run time
 * against `root` through symlinks; a path outside the workspace is a failed result, never a crash.
 * See docs/workspace-tools.md.
 *
 * @example
 * const runtime = await createRuntime({
 *   provider,
 *   tools: workspaceTools({ root: "/work/app" }),
 *   policy: { approvalMode: "auto-edit", workspace: { root: "/work/app", trusted: true } },
 * });
 * // Without a shell: workspaceTools({ root }).filter((tool) => tool.name !== "run_command")
 */
export function workspaceTools(options: WorkspaceToolsOptions): ToolDefinition[] {
  if (typeof options?.root !== "string" || options.root === "") throw new TypeError("workspaceTools needs a root directory");
  const commandTimeoutMs = options.commandTimeoutMs ?? defaultCommandTimeoutMs;
  if (!Number.isInteger(commandTimeoutMs) || commandTimeoutMs <= 0) throw new TypeError("workspaceTools: commandTimeoutMs must be a positive integer");
  const maxOutputChars = options.maxOutputChars ?? defaultMaxResultChars;
  if (!Number.isInteger(maxOutputChars) || maxOutputChars < 1_000) throw new TypeError("workspaceTools: maxOutputChars must be an integer of at least 1000");
  const shell = options.shell ?? "/bin/sh";
  if (typeof shell !== "string" || shell === "") throw new TypeError("workspaceTools: shell must be a non-empty string");
  const env = options.env;
  const settings: WorkspaceToolSettings = {
    root: path.resolve(options.root),
    commandTimeoutMs,
    maxOutputChars,
    shell,
    // Read at each call, so a host that changes its environment later is followed.
    env: env === undefined ? () => withoutSecretVariables(process.env) : () => ({ ...env }),
    protectedPaths: [...(options.protectedPaths ?? []), ...(options.approvalPaths ?? [])].map((entry) => path.resolve(options.root, entry)),
    approvalPaths: (options.approvalPaths ?? []).map((entry) => path.resolve(options.root, entry)),
    allowHardLinks: options.allowHardLinks === true,
    ...(options.sandbox !== undefined ? { sandbox: options.sandbox } : {}),
  };
  return [readFileTool(settings), listDirTool(settings), searchTextTool(settings), writeFileTool(settings), editFileTool(settings), runCommandTool(settings)];
}

/**
 * The environment without secret-named variables: what `run_command`'s shell gets by default.
 *
 * @example
 * withoutSecretVariables({ PATH: "/usr/bin", OPENAI_API_KEY: "sk-…", GITHUB_TOKEN: "ghp_…" }); // { PATH: "/usr/bin" }
 */
export function withoutSecretVariables(env: Readonly<Record<string, string | undefined>>): Record<string, string | undefined> {
  // The secret detector's own vocabulary, so the shell and the log agree on what a secret name is.
  return Object.fromEntries(Object.entries(env).filter(([name]) => !isSecretVariableName(name)));
}
