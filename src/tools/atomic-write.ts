import { randomBytes } from "node:crypto";
import { lstat, open, rename, rm } from "node:fs/promises";
import path from "node:path";

/** Longest file-name part kept in a temp name, so the temp name stays under NAME_MAX (255). */
const maxBaseLength = 160;

/**
 * Replaces a file's content atomically: the content goes to a temp file in the same directory,
 * is flushed to disk, and is renamed over the target, so a reader (or a crash) sees the old file
 * or the new one, never half of either. An existing file keeps its permission bits. The rename
 * replaces a symlink at `target` instead of following it, so pass the real path of the file to
 * change. Hand-written because it is twenty lines and adding a dependency (`write-file-atomic`) was
 * not in scope; the temp file is removed on any failure.
 *
 * @example
 * await writeFileAtomic("/work/app/src/config.json", '{ "debug": true }\n');
 */
export async function writeFileAtomic(target: string, content: string): Promise<{ bytes: number; created: boolean }> {
  const directory = path.dirname(target);
  const base = path.basename(target).slice(0, maxBaseLength);
  const temp = path.join(directory, `.${base}.${randomBytes(6).toString("hex")}.turnlog-tmp`);
  const existing = await lstat(target).catch((error: NodeJS.ErrnoException) => {
    if (error.code === "ENOENT") return undefined;
    throw error;
  });
  const mode = existing?.isFile() ? existing.mode & 0o7777 : 0o666;
  const data = Buffer.from(content, "utf8");
  // "wx": fails if anything (a planted symlink included) already has the temp name.
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
    await rename(temp, target);
  } catch (error) {
    await rm(temp, { force: true });
    throw error;
  }
  await syncDirectory(directory);
  return { bytes: data.byteLength, created: existing === undefined };
}

/** Makes the rename itself durable; best effort, since some platforms cannot open a directory. */
async function syncDirectory(directory: string): Promise<void> {
  try {
    const handle = await open(directory, "r");
    try {
      await handle.sync();
    } finally {
      await handle.close();
    }
  } catch {
    // Not every filesystem supports fsync on a directory; the file itself is already on disk.
  }
}
