import type { BigIntStats } from "node:fs";
import type { FileHandle } from "node:fs/promises";
import { lstat, opendir, readFile } from "node:fs/promises";
import { release } from "node:os";
import path from "node:path";
import { setTimeout as sleep } from "node:timers/promises";

/**
 * Why an opened file is not read: it has more than one link, its path names another file now, or
 * that it has no name outside the workspace could not be confirmed (`reason` says why).
 */
export type LinkProblem = { kind: "hard-link"; links: number } | { kind: "changed" } | { kind: "unconfirmed"; reason: string };

/**
 * How many times the proof is tried when the file's status kept changing while it ran (a log being
 * appended to changes it too); each try stands on its own, so retrying gives a swapper nothing.
 */
const attempts = 3;

/**
 * Where a link or unlink cannot be relied on to show in the ctime at once (see `fineCtime`), a ctime
 * older than this before the check began proves that nothing changed since: a file system stamps a
 * change no earlier than this before it happened (a jiffy on Linux, one second on HFS+).
 */
export const coarseCtimeMs = 1_000;

/** Linux file systems whose ctime is multigrain from 6.13 on: a change after a stat always shows. */
const multigrainTypes: ReadonlySet<string> = new Set(["ext4", "xfs", "btrfs", "tmpfs"]);

/**
 * Checks that an opened workspace file may be read: a regular file with one name on disk, the one
 * at its path. `undefined` when it may; otherwise why not. Never throws for the file's own state.
 *
 * A hard link is a regular file inside the workspace that may be the very file of `/etc/passwd` or
 * `~/.ssh/id_ed25519` under a second name (`ln /etc/passwd notes.txt`): confining its path proves
 * nothing. A file's other names cannot be listed, but the count can be read, so the file is read
 * only once there is proof of one instant at which it had one link and that link was its path in
 * the workspace: at that instant it had no name outside, so it is not a file that keeps one there.
 *
 * No single call reads "the path names this file" and "it has one link" at one instant: `lstat`
 * finds the name, then reads the count, and a concurrent `unlink` fits in between (the name was
 * there, then the count says one: the canary's own, outside). The kernel also keeps a removed name
 * findable until the unlink has finished updating its cache. So the proof brackets the lookup:
 *
 * 1. `fstat` the handle twice: one link, the same ctime (the file read is the file checked).
 * 2. Read the parent directory. Reading a directory takes its lock, which a link, unlink or rename
 *    in it holds until the name cache is updated too, so no name removed before this is found after.
 * 3. `lstat` the path: the same file. That name was in the directory at some instant after step 1.
 * 4. `fstat` the handle twice more: one link, and the ctime of step 1.
 *
 * A link count that went from one (step 1) to two (a second name) and back to one (step 4) changed
 * the ctime twice; the ctime did not change, so the count was one throughout, including when the
 * name of step 3 existed. The two stats on each side make the proof stand even against an unlink
 * that has dropped the count but not yet stamped the ctime: it would have to stall between the two
 * through a whole system call round trip.
 *
 * The residual assumption is that every link and unlink changes a ctime that was read before it.
 * That holds for multigrain timestamps (Linux 6.13+, ext4, xfs, btrfs and tmpfs: a ctime that was
 * queried is replaced by a distinct fine-grained one). Elsewhere (older kernels, other file systems,
 * macOS) two changes in one coarse tick can leave it equal, so the check fails closed: the ctime
 * must also predate the check by `coarseCtimeMs`, and a file changed more recently is waited for
 * once, then refused if it changed again.
 *
 * Not covered: a file moved into the workspace (its outside name renamed or removed) is a workspace
 * file now; and a parent directory swapped for another between steps 2 and 3, the same limit as a
 * path swapped between its resolution and its open (docs/workspace-tools.md).
 *
 * @example
 * const handle = await open(absolute, flags);
 * const problem = await linkProblem(handle, absolute);
 * if (problem !== undefined) return failed(linkRefusal("read_file", display, problem));
 */
export async function linkProblem(handle: FileHandle, absolute: string): Promise<LinkProblem | undefined> {
  for (let attempt = 1; ; attempt += 1) {
    const outcome = await proveSingleLink(handle, absolute);
    if (outcome.settlesInMs === undefined || attempt === attempts) return outcome.problem;
    if (outcome.settlesInMs > 0) await sleep(outcome.settlesInMs);
  }
}

/** One try of the proof; `settlesInMs` when the file's status changed and a new try may succeed. */
async function proveSingleLink(handle: FileHandle, absolute: string): Promise<{ problem: LinkProblem | undefined; settlesInMs?: number }> {
  const unsettled = (settlesInMs: number) => ({ problem: { kind: "unconfirmed", reason: "it kept changing while it was checked; try again" } as const, settlesInMs });
  const startedMs = Date.now();
  const opened = await handle.stat({ bigint: true });
  if (!opened.isFile()) return { problem: { kind: "changed" } };
  for (const stats of [opened, await handle.stat({ bigint: true })]) {
    if (stats.nlink > 1n) return { problem: { kind: "hard-link", links: Number(stats.nlink) } };
    if (stats.ctimeNs !== opened.ctimeNs) return unsettled(0);
  }
  try {
    const directory = await opendir(path.dirname(absolute), { bufferSize: 1 });
    try {
      await directory.read();
    } finally {
      await directory.close();
    }
  } catch {
    return { problem: { kind: "unconfirmed", reason: "its directory cannot be listed" } };
  }
  const named = await lstat(absolute, { bigint: true }).catch(() => undefined);
  if (named === undefined || !named.isFile() || named.ino !== opened.ino || named.dev !== opened.dev) return { problem: { kind: "changed" } };
  if (named.nlink > 1n) return { problem: { kind: "hard-link", links: Number(named.nlink) } };
  for (const stats of [await handle.stat({ bigint: true }), await handle.stat({ bigint: true })]) {
    if (stats.nlink > 1n) return { problem: { kind: "hard-link", links: Number(stats.nlink) } };
    if (stats.ctimeNs !== opened.ctimeNs) return unsettled(0);
  }
  if (await fineCtime(opened)) return { problem: undefined };
  const ageNeededMs = Number(opened.ctimeNs / 1_000_000n) + coarseCtimeMs - startedMs;
  if (ageNeededMs < 0) return { problem: undefined };
  return unsettled(Math.min(ageNeededMs + 1, coarseCtimeMs + 1));
}

/** Mount types by device, read once per device from /proc/self/mountinfo. */
const mountTypes = new Map<bigint, Promise<string | undefined>>();

/**
 * Whether a link or unlink of this file after the stat that gave `stats` is sure to change its
 * ctime: Linux 6.13 or later, a multigrain file system found by the file's own device (not by a path
 * that could be swapped), and a ctime with nanoseconds (ext4 with 128-byte inodes stamps seconds).
 */
async function fineCtime(stats: BigIntStats): Promise<boolean> {
  if (process.platform !== "linux") return false;
  const [major = 0, minor = 0] = (/^(\d+)\.(\d+)/.exec(release()) ?? []).slice(1).map(Number);
  if (major < 6 || (major === 6 && minor < 13)) return false;
  if (stats.ctimeNs % 1_000_000_000n === 0n) return false;
  let type = mountTypes.get(stats.dev);
  if (type === undefined) {
    type = mountTypeOf(stats.dev);
    mountTypes.set(stats.dev, type);
  }
  const found = await type;
  return found !== undefined && multigrainTypes.has(found);
}

/**
 * The file system type mounted as a device, from /proc/self/mountinfo (`36 35 8:1 / / rw - ext4 …`).
 * `undefined` when none matches (btrfs reports a device per subvolume: not confirmed, so coarse).
 */
async function mountTypeOf(dev: bigint): Promise<string | undefined> {
  // glibc's makedev layout, which is how Node reports st_dev on Linux.
  const major = ((dev >> 8n) & 0xfffn) | ((dev >> 32n) & ~0xfffn);
  const minor = (dev & 0xffn) | ((dev >> 12n) & ~0xffn);
  const text = await readFile("/proc/self/mountinfo", "utf8").catch(() => "");
  for (const line of text.split("\n")) {
    const fields = line.split(" ");
    const separator = fields.indexOf("-");
    if (fields[2] === `${major}:${minor}` && separator > 0) return fields[separator + 1];
  }
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
  if (problem.kind === "unconfirmed") return `refused: ${tool} could not confirm that ${display} has no other name outside the workspace (${problem.reason}); nothing was read`;
  return (
    `refused: ${display} is a hard link (the file has ${problem.links} names on disk, and another may be outside the workspace); ` +
    `${tool} does not open files with more than one link. If the file belongs to the workspace, give it a name of its own ` +
    `(copy it and rename the copy over it); a host whose workspace is hard-linked on purpose (a pnpm store) can pass workspaceTools({ allowHardLinks: true })`
  );
}
