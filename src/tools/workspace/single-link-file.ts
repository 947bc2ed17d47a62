import type { FileHandle } from "node:fs/promises";
import { lstat } from "node:fs/promises";

/** Why an opened file is not read: it has more than one link, or its path names another file now. */
export type LinkProblem = { kind: "hard-link"; links: number } | { kind: "changed" };

/**
 * Checks that an opened workspace file may be read: a regular file with one name on disk, still
 * the one at its path. `undefined` when it may; otherwise why not. Never throws for the file's own
 * state: a path that vanished or changed is `changed`.
 *
 * A hard link is a regular file inside the workspace that may be the very file of `/etc/passwd` or
 * `~/.ssh/id_ed25519` under a second name (`ln /etc/passwd notes.txt`): confining its path proves
 * nothing. A file's other names cannot be listed, but the count can be read, so a file with more
 * than one link is refused.
 *
 * The count is read on the opened handle (`fstat`), so the file checked is the file read, whatever
 * is renamed over the path meanwhile. That alone is not enough: the link that was opened can be
 * removed right after the open, leaving the outside file with one link — its outside name — while
 * the handle still reads it. So the path is then looked up again (`lstat`, which reads the file it
 * finds and its count in one call) and must name the same file with one link: at that moment the
 * file's only name is the one in the workspace, so it is not a file that has a name outside.
 * Callers check before they read and again after, so a swap at either edge is caught.
 *
 * @example
 * const handle = await open(absolute, flags);
 * const problem = await linkProblem(handle, absolute);
 * if (problem !== undefined) return failed(linkRefusal("read_file", display, problem));
 */
export async function linkProblem(handle: FileHandle, absolute: string): Promise<LinkProblem | undefined> {
  const opened = await handle.stat();
  if (!opened.isFile()) return { kind: "changed" };
  if (opened.nlink > 1) return { kind: "hard-link", links: opened.nlink };
  const named = await lstat(absolute).catch(() => undefined);
  if (named === undefined || !named.isFile() || named.ino !== opened.ino || named.dev !== opened.dev) return { kind: "changed" };
  if (named.nlink > 1) return { kind: "hard-link", links: named.nlink };
  return undefined;
}

/**
 * The failed result's text for a refused file: why, and what to do about it.
 *
 * @example
 * linkRefusal("read_file", "notes.txt", { kind: "hard-link", links: 2 });
 * // 'refused: notes.txt is a hard link (the file has 2 names on disk, and another may be outside the workspace); …'
 */
export function linkRefusal(tool: string, display: string, problem: LinkProblem): string {
  if (problem.kind === "changed") return `refused: ${display} was replaced while ${tool} was opening it; nothing was read — try again`;
  return (
    `refused: ${display} is a hard link (the file has ${problem.links} names on disk, and another may be outside the workspace); ` +
    `${tool} does not open files with more than one link. If the file belongs to the workspace, give it a name of its own ` +
    `(copy it and rename the copy over it); a host whose workspace is hard-linked on purpose (a pnpm store) can pass workspaceTools({ allowHardLinks: true })`
  );
}
