import { readFileSync, statSync } from "node:fs";
import path from "node:path";

/** The most of a `.git` file, `commondir` or `config` read: they are a line or a few hundred. */
const maxBytes = 64 * 1024;

/** A directory a git entry names, and how. */
export interface GitLink {
  /** `repository`: the path is itself a git directory (`HEAD` with `objects` and `refs`, or with `commondir`). */
  via: "repository" | "gitdir" | "commondir" | "worktree";
  /** Absolute, as written in the entry resolved against it (not through symlinks). */
  directory: string;
}

/**
 * The directories a git entry names, as git itself would follow them (docs/security.md, "Protected
 * paths"): for a `.git` *file*, its `gitdir: <dir>`; for a git directory — any directory git would
 * take for one, whatever its name — itself, its `commondir` and its config's `core.worktree`.
 * Relative names resolve against the entry's own directory, as git resolves them. Whatever cannot
 * be read names nothing, and so does a directory git would not take for a repository. The gate reads this through its
 * environment and the runtime records each answer in the log (decisions version 5), so a replay
 * reads the log, never this file system.
 *
 * @example
 * readGitLinks("/work/app/sub/.git"); // [{ via: "gitdir", directory: "/work/app/.git/modules/sub" }] (a submodule's `.git` file)
 * readGitLinks("/work/app/.git");     // [{ via: "repository", directory: "/work/app/.git" }]
 * readGitLinks("/work/app/src");      // []
 */
export function readGitLinks(absolute: string): GitLink[] {
  if (!isDirectory(absolute)) {
    const gitdir = /^gitdir:\s*(.+?)\s*$/m.exec(readSmall(absolute) ?? "")?.[1];
    return gitdir === undefined ? [] : [{ via: "gitdir", directory: path.resolve(path.dirname(absolute), gitdir) }];
  }
  const commondir = readSmall(path.join(absolute, "commondir"))?.split("\n")[0]?.trim();
  if (!isFile(path.join(absolute, "HEAD")) || !((isDirectory(path.join(absolute, "objects")) && isDirectory(path.join(absolute, "refs"))) || commondir !== undefined)) return [];
  const links: GitLink[] = [{ via: "repository", directory: absolute }];
  if (commondir !== undefined && commondir !== "") links.push({ via: "commondir", directory: path.resolve(absolute, commondir) });
  const worktree = configValue(readSmall(path.join(absolute, "config")) ?? "", "core", "worktree");
  if (worktree !== undefined && worktree !== "") links.push({ via: "worktree", directory: path.resolve(absolute, worktree) });
  return links;
}

function isDirectory(file: string): boolean {
  try {
    return statSync(file).isDirectory();
  } catch {
    return false;
  }
}

function isFile(file: string): boolean {
  try {
    return statSync(file).isFile();
  } catch {
    return false;
  }
}

function readSmall(file: string): string | undefined {
  try {
    const text = readFileSync(file, { encoding: "utf8", flag: "r" });
    return text.length > maxBytes ? text.slice(0, maxBytes) : text;
  } catch {
    return undefined;
  }
}

/**
 * The last value of `section.key` in git config text. Why hand-written: only this one key of the
 * INI-like format is needed (section headers, `key = value`, quotes, comments), and the npm config
 * parsers either evaluate more than git does or are unmaintained; a value this misses makes the
 * gate protect less than git could redirect to only for an unusual quoting of `core.worktree`.
 */
function configValue(text: string, section: string, key: string): string | undefined {
  let current = "";
  let value: string | undefined;
  for (const raw of text.split(/\r?\n/)) {
    const line = raw.trim();
    const header = /^\[\s*([A-Za-z0-9.-]+)(?:\s+"[^"]*")?\s*\]/.exec(line);
    if (header !== null) {
      current = (header[1] as string).toLowerCase();
      continue;
    }
    if (current !== section.toLowerCase()) continue;
    const entry = /^([A-Za-z][A-Za-z0-9-]*)\s*=\s*(.*)$/.exec(line);
    if (entry === null || (entry[1] as string).toLowerCase() !== key.toLowerCase()) continue;
    value = (entry[2] as string).replace(/\s[#;].*$/, "").trim().replace(/^"(.*)"$/, "$1");
  }
  return value;
}
