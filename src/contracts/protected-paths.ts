/**
 * Protected paths inside the workspace (docs/security.md, "Protected paths"): files that run code
 * later on the person's machine, outside any sandbox, or that would let a model raise its own
 * permissions. The file tools ask before writing them in every mode (decisions version 5), and the
 * command sandbox mounts them read-only.
 *
 * Each entry is a name at the workspace root; a path is protected when its first component is one
 * of them — or, for an entry marked `anyDepth` (`.git`: a nested repository's hooks run as surely
 * as the top one's), when any of its components is. Names are compared case-insensitively: on a
 * case-insensitive file system `.GIT/config` is `.git/config`.
 */
export interface ProtectedEntry {
  /** The entry's name at the workspace root. */
  name: string;
  /** Why it is protected, in a phrase ("git runs its hooks and the programs its config names"). */
  reason: string;
  /** Protected wherever it lies in the workspace (`sub/.git/config`), not only at the root. */
  anyDepth?: boolean;
}

export const protectedWorkspaceEntries: readonly ProtectedEntry[] = [
  { name: ".git", reason: "git runs its hooks and the programs its config names (core.fsmonitor, core.hooksPath, diff.external) on the person's next git command", anyDepth: true },
  { name: ".vscode", reason: "VS Code runs its tasks and launch configurations, and applies its settings, when the folder is opened" },
  { name: ".idea", reason: "JetBrains IDEs run its run configurations and tool settings when the project is opened" },
  { name: ".devcontainer", reason: "a dev container's configuration runs its commands on the host when the folder is reopened in a container" },
  { name: ".envrc", reason: "direnv runs it in the person's shell on entering the directory" },
  { name: "turnlog.config.json", reason: "turnlog run's config: mode, rules, budgets and MCP servers (a model must not raise its own permissions)" },
];

/**
 * The protected entry a workspace-relative path lies in, if any: a root entry by its first
 * component, an `anyDepth` entry (`.git`) by any component.
 *
 * @example
 * protectedEntryOf(".git/hooks/pre-commit"); // { name: ".git", … }
 * protectedEntryOf("./.VSCode/tasks.json"); // { name: ".vscode", … }
 * protectedEntryOf("vendor/lib/.git/config"); // { name: ".git", … }
 * protectedEntryOf("src/.git-blame-ignore"); // undefined
 */
export function protectedEntryOf(relativePath: string, extra: readonly string[] = []): ProtectedEntry | undefined {
  const parts = relativePath.split(/[\\/]+/).filter((part) => part !== "" && part !== ".");
  const [first] = parts;
  if (first === undefined) return undefined;
  const name = comparable(first);
  const entry = protectedWorkspaceEntries.find((candidate) => candidate.name === name);
  if (entry !== undefined) return entry;
  const added = extra.find((candidate) => candidate.toLowerCase() === name);
  if (added !== undefined) return { name: added, reason: "the host protects it" };
  const deeper = new Set(parts.slice(1).map(comparable));
  return protectedWorkspaceEntries.find((candidate) => candidate.anyDepth === true && deeper.has(candidate.name));
}

/** A name as a case-insensitive file system, and Windows, would compare it. */
function comparable(part: string): string {
  // Windows and some file systems ignore trailing dots and spaces in a name (".git." is ".git").
  return part.replace(/[. ]+$/, (tail) => (tail.length === part.length ? tail : "")).toLowerCase();
}
