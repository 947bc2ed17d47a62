import { randomBytes } from "node:crypto";
import { constants, existsSync } from "node:fs";
import { lstat, mkdir, open, readlink, rename, rm, type FileHandle } from "node:fs/promises";
import path from "node:path";

/** Longest file-name part kept in a temp name, so the temp name stays under NAME_MAX (255). */
const maxBaseLength = 160;

/**
 * On Linux, `/proc/self/fd/N/name` resolves `name` inside the directory open as descriptor N,
 * whatever its path has become since: the `openat(2)` / `renameat(2)` that Node's fs API lacks.
 */
const procFd = process.platform === "linux" && existsSync("/proc/self/fd") ? "/proc/self/fd" : undefined;

/**
 * Replaces a file's content atomically: the content goes to a temp file in the same directory,
 * is flushed to disk, and is renamed over the target, so a reader (or a crash) sees the old file
 * or the new one, never half of either. An existing file keeps its permission bits; a symlink or a
 * hard link at the target is replaced, never written through.
 *
 * `relative` is the target's path below `root` (a real directory), as already resolved and
 * confined by the caller. On Linux the write cannot be redirected out of `root` by a concurrent
 * process: each directory on the way is opened from the one before it without following symbolic
 * links (missing ones are created when `createParents`), and the temp file and the rename name
 * entries of that open directory, not a path looked up again — a directory swapped for a symlink
 * between the caller's check and the write makes the write fail (`ELOOP` or `ENOTDIR`), never land
 * elsewhere; the open directory's own path is checked to be below `root` after it is opened and
 * again right before the rename, since a handle follows its directory wherever it is moved. Elsewhere it falls back to plain paths (checked once, by the caller).
 *
 * Hand-written: no maintained package writes beneath a directory handle (write-file-atomic takes
 * a path), and Node has no openat.
 *
 * @example
 * await writeFileAtomic("/work/app", "config/settings.json", '{ "debug": true }\n', { createParents: false });
 */
export async function writeFileAtomic(root: string, relative: string, content: string, options: { createParents: boolean }): Promise<{ bytes: number; created: boolean }> {
  const parts = relative.split(/[\\/]+/).filter((part) => part !== "" && part !== ".");
  const name = parts.pop();
  if (name === undefined || parts.includes("..") || name === "..") throw new TypeError(`"${relative}" is not a file path below the directory`);
  const directory = await openDirectoryBeneath(root, parts, options.createParents);
  try {
    const at = (entry: string) => (procFd !== undefined && directory.handle !== undefined ? `${procFd}/${directory.handle.fd}/${entry}` : path.join(directory.path, entry));
    const target = at(name);
    const temp = at(`.${name.slice(0, maxBaseLength)}.${randomBytes(6).toString("hex")}.turnlog-tmp`);
    const existing = await lstat(target).catch((error: NodeJS.ErrnoException) => {
      if (error.code === "ENOENT") return undefined;
      throw error;
    });
    const mode = existing?.isFile() ? existing.mode & 0o7777 : 0o666;
    const data = Buffer.from(content, "utf8");
    // "wx": fails if anything (a planted symlink included) already has the temp name.
    await stillBeneath(root, directory);
    const handle = await open(temp, "wx", mode);
    try {
      try {
        await handle.writeFile(data);
        // The umask may have narrowed the mode at creation; an existing file keeps exactly its own.
        if (existing?.isFile()) await handle.chmod(mode);
        // Flushed before the rename: otherwise a power loss can leave the new name with no content.
        await handle.sync();
      } finally {
        await handle.close();
      }
      // The open directory itself could have been moved out of the workspace since: checked again last.
      await stillBeneath(root, directory);
      await rename(temp, target);
    } catch (error) {
      await rm(temp, { force: true });
      throw error;
    }
    await syncDirectory(directory);
    return { bytes: data.byteLength, created: existing === undefined };
  } finally {
    await directory.handle?.close();
  }
}

/**
 * Opens `root`, then each of `parts` from the directory before it, never following a symlink.
 * Without `/proc/self/fd` there is no handle to resolve from: the path is used as it is.
 */
async function openDirectoryBeneath(root: string, parts: readonly string[], create: boolean): Promise<{ path: string; handle?: FileHandle }> {
  const lexical = path.join(root, ...parts);
  if (procFd === undefined) {
    if (create) await mkdir(lexical, { recursive: true });
    return { path: lexical };
  }
  const flags = constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW;
  let current = await open(root, flags);
  try {
    for (const part of parts) {
      const entry = `${procFd}/${current.fd}/${part}`;
      let next: FileHandle;
      // A symlink here fails with ELOOP (or ENOTDIR), whoever put it there and whenever.
      try {
        next = await open(entry, flags);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== "ENOENT" || !create) throw error;
        await mkdir(entry).catch((made: NodeJS.ErrnoException) => {
          if (made.code !== "EEXIST") throw made;
        });
        next = await open(entry, flags);
      }
      await current.close();
      current = next;
    }
    return { path: lexical, handle: current };
  } catch (error) {
    await current.close();
    throw error;
  }
}

/**
 * Whether the open directory still lies below `root`: a handle follows its directory wherever it
 * is moved, so a directory renamed out of the workspace after it was opened must not be written.
 */
async function stillBeneath(root: string, directory: { path: string; handle?: FileHandle }): Promise<void> {
  if (procFd === undefined || directory.handle === undefined) return;
  const where = await readlink(`${procFd}/${directory.handle.fd}`);
  if (where !== root && !where.startsWith(root.endsWith(path.sep) ? root : root + path.sep)) {
    throw new Error("its directory was moved out of the workspace while it was being written; refused");
  }
}

/** Makes the rename itself durable; best effort, since some platforms cannot open a directory. */
async function syncDirectory(directory: { path: string; handle?: FileHandle }): Promise<void> {
  try {
    if (directory.handle !== undefined) {
      await directory.handle.sync();
      return;
    }
    const handle = await open(directory.path, "r");
    try {
      await handle.sync();
    } finally {
      await handle.close();
    }
  } catch {
    // Not every filesystem supports fsync on a directory; the file itself is already on disk.
  }
}
