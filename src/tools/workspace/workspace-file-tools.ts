/**
 * The file tools of `workspaceTools`: `read_file`, `list_dir`, `write_file`, `edit_file`. Each
 * declares its path to the gate (`paths`) and resolves it again at run time (`resolveWorkspacePath`);
 * each answers a refusal or a filesystem error with a failed result the model can act on.
 */
import { constants } from "node:fs";
import type { FileHandle } from "node:fs/promises";
import { lstat, open, readdir } from "node:fs/promises";
import path from "node:path";
import { z } from "zod";
import { writeFileAtomic } from "./atomic-write.js";
import type { ToolContext, ToolDefinition, ToolResult } from "../define-tool.js";
import { defineTool } from "../define-tool.js";
import { linkProblem, linkRefusal, type LinkProblem } from "./single-link-file.js";
import { protectedPathOf, resolveWorkspacePath, type WorkspacePath } from "./workspace-path.js";
import type { WorkspaceToolSettings } from "./workspace-tool-settings.js";
import { resultHeadroomChars } from "./workspace-tool-settings.js";
import { describeThrown } from "../../util/json-value.js";

/** At most this many entries are listed; a bigger directory is summarized. */
export const maxListEntries = 1_000;
/** `edit_file` reads the whole file to count matches; bigger files are refused. */
export const maxEditBytes = 10 * 1024 * 1024;

// O_NOFOLLOW: the path was resolved through symlinks just before; a symlink now means it changed
// under us, so the open fails instead of following it. O_NONBLOCK: a FIFO swapped in cannot hang it.
const readFlags = constants.O_RDONLY | (constants.O_NOFOLLOW ?? 0) | (constants.O_NONBLOCK ?? 0);

const pathField = z.string().min(1).describe("A path relative to the workspace root (or absolute inside it).");

/**
 * `read_file({ path })`: a UTF-8 text file. Directories, special files and binary files (a NUL
 * byte) are refused; a file longer than `maxOutputChars` bytes is shown as its head and tail with a
 * marker saying how much was left out, and only those bytes are read.
 *
 * @example
 * const readFile = readFileTool(settings);
 * // read_file({ path: "src/index.ts" }) → the file's text
 */
export function readFileTool(settings: WorkspaceToolSettings): ToolDefinition {
  return defineTool({
    name: "read_file",
    description: `Read a UTF-8 text file in the workspace. Files over ${settings.maxOutputChars} bytes show their beginning and end only; use search_text to find lines in them.`,
    risk: "read-only-local",
    input: z.object({ path: pathField }),
    paths: (input) => [input.path],
    idempotent: true,
    maxResultChars: settings.maxOutputChars + resultHeadroomChars,
    run: async (input, ctx) => {
      const target = resolveWorkspacePath(settings.root, ctx.workspace.root, input.path);
      if (!target.ok) return failed(target.message);
      const problem = kindProblem(await fileKind(target.absolute), target.display, "file");
      if (problem !== undefined) return failed(problem);
      let handle: FileHandle;
      try {
        handle = await open(target.absolute, readFlags);
      } catch (error) {
        return failed(fsFailure("read", target.display, error));
      }
      try {
        const before = await fileLinkProblem(settings, handle, target.absolute);
        if (before !== undefined) return failed(linkRefusal("read_file", target.display, before));
        const size = (await handle.stat()).size;
        const budget = settings.maxOutputChars;
        let result: ToolResult;
        if (size <= budget) {
          const bytes = await readAt(handle, 0, size);
          if (bytes.includes(0)) return failed(binaryMessage(target.display));
          result = { ok: true, content: new TextDecoder().decode(bytes), metadata: { path: target.display, bytes: size, truncated: false } };
        } else {
          const marker = (removed: number) => `\n…[${removed} bytes not shown: the file is ${size} bytes; use search_text to find lines in it]…\n`;
          const keep = Math.max(0, budget - marker(size).length);
          const headBytes = Math.ceil(keep / 2);
          const tailBytes = keep - headBytes;
          const head = await readAt(handle, 0, headBytes);
          const tail = await readAt(handle, size - tailBytes, tailBytes);
          if (head.includes(0) || tail.includes(0)) return failed(binaryMessage(target.display));
          const content = decodeHead(head) + marker(size - headBytes - tailBytes) + decodeTail(tail);
          result = { ok: true, content, metadata: { path: target.display, bytes: size, truncated: true } };
        }
        // Checked again once read: a link made or removed while reading is caught at this edge too.
        const after = await fileLinkProblem(settings, handle, target.absolute);
        if (after !== undefined) return failed(linkRefusal("read_file", target.display, after));
        return result;
      } catch (error) {
        return failed(fsFailure("read", target.display, error));
      } finally {
        await handle.close();
      }
    },
  });
}

/**
 * `list_dir({ path })`: a directory's entries sorted by name, one per line; directories end in `/`,
 * symbolic links in `@` (as `ls -F` marks them). At most `maxListEntries`, within `maxOutputChars`.
 *
 * @example
 * const listDir = listDirTool(settings);
 * // list_dir({ path: "." }) → "README.md\nsrc/\ntest/"
 */
export function listDirTool(settings: WorkspaceToolSettings): ToolDefinition {
  return defineTool({
    name: "list_dir",
    description: 'List a directory in the workspace, sorted by name. Directories end in /, symbolic links in @. Use "." for the workspace root.',
    risk: "read-only-local",
    input: z.object({ path: pathField }),
    paths: (input) => [input.path],
    idempotent: true,
    maxResultChars: settings.maxOutputChars + resultHeadroomChars,
    run: async (input, ctx) => {
      const target = resolveWorkspacePath(settings.root, ctx.workspace.root, input.path);
      if (!target.ok) return failed(target.message);
      const problem = kindProblem(await fileKind(target.absolute), target.display, "directory");
      if (problem !== undefined) return failed(problem);
      try {
        const entries = await readdir(target.absolute, { withFileTypes: true });
        if (entries.length === 0) return { ok: true, content: "(empty directory)", metadata: { path: target.display, entries: 0 } };
        // Code-unit order, not the locale's: the same listing on every machine.
        entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
        const lines: string[] = [];
        let chars = 0;
        for (const entry of entries) {
          const line = entry.isSymbolicLink() ? `${entry.name}@` : entry.isDirectory() ? `${entry.name}/` : entry.name;
          if (lines.length >= maxListEntries || chars + line.length + 1 > settings.maxOutputChars) break;
          lines.push(line);
          chars += line.length + 1;
        }
        if (lines.length < entries.length) lines.push(`… and ${entries.length - lines.length} more entries (${lines.length} of ${entries.length} shown)`);
        return { ok: true, content: lines.join("\n"), metadata: { path: target.display, entries: entries.length } };
      } catch (error) {
        return failed(fsFailure("list", target.display, error));
      }
    },
  });
}

/**
 * `write_file({ path, content })`: creates or replaces a file atomically (temp file + rename),
 * creating missing parent directories inside the workspace.
 *
 * @example
 * const writeFile = writeFileTool(settings);
 * // write_file({ path: "notes/todo.md", content: "- ship it\n" }) → "wrote 10 bytes to notes/todo.md (new file)"
 */
export function writeFileTool(settings: WorkspaceToolSettings): ToolDefinition {
  return defineTool({
    name: "write_file",
    description: "Create or replace a UTF-8 text file in the workspace with the given content (the whole file). Missing parent directories are created. To change part of a file, use edit_file.",
    risk: "workspace-write",
    input: z.object({ path: pathField, content: z.string().describe("The complete new content of the file.") }),
    paths: (input) => [input.path],
    maxResultChars: settings.maxOutputChars + resultHeadroomChars,
    run: async (input, ctx) => {
      const target = resolveWriteTarget(settings, ctx, input.path);
      if (!target.ok) return failed(target.message);
      if (target.absolute === target.root) return failed("refused: the workspace root is a directory, not a file");
      const problem = kindProblem(await fileKind(target.absolute), target.display, "file-or-missing");
      if (problem !== undefined) return failed(problem);
      try {
        // Beneath the real root, directory by directory, never following a symlink: a directory
        // swapped for one since the check above fails the write instead of redirecting it.
        const written = await writeFileAtomic(target.root, target.display, input.content, { createParents: true });
        return {
          ok: true,
          content: `wrote ${written.bytes} bytes to ${target.display}${written.created ? " (new file)" : ""}`,
          metadata: { path: target.display, bytes: written.bytes, created: written.created },
        };
      } catch (error) {
        return failed(fsFailure("write", target.display, error));
      }
    },
  });
}

/**
 * `edit_file({ path, oldText, newText })`: replaces the one occurrence of `oldText` with `newText`
 * and writes the file atomically. Zero or several occurrences are a failed result saying how many,
 * so the model can quote more context; nothing is written then.
 *
 * @example
 * const editFile = editFileTool(settings);
 * // edit_file({ path: "lib/a.ts", oldText: "const debug = false;", newText: "const debug = true;" })
 * // → "edited lib/a.ts: replaced 1 occurrence at line 3"
 */
export function editFileTool(settings: WorkspaceToolSettings): ToolDefinition {
  return defineTool({
    name: "edit_file",
    description: "Replace text in a UTF-8 file in the workspace. oldText must occur exactly once in the file, matched exactly (whitespace and line breaks included); quote enough surrounding lines to make it unique.",
    risk: "workspace-write",
    input: z.object({
      path: pathField,
      oldText: z.string().describe("The exact text to replace; it must occur exactly once."),
      newText: z.string().describe("The text to put in its place."),
    }),
    paths: (input) => [input.path],
    maxResultChars: settings.maxOutputChars + resultHeadroomChars,
    run: async (input, ctx) => {
      if (input.oldText === "") return failed("oldText is empty; to write a whole file, use write_file");
      const target = resolveWriteTarget(settings, ctx, input.path);
      if (!target.ok) return failed(target.message);
      const current = await readTextForEdit(settings, target.absolute, target.display);
      if (!current.ok) return failed(current.message);
      const count = occurrences(current.text, input.oldText);
      if (count === 0) {
        return failed(`oldText was not found in ${target.display} (0 occurrences). Read the file and copy the text to replace exactly, whitespace and line breaks included.`);
      }
      if (count > 1) {
        return failed(`oldText occurs ${count} times in ${target.display}; it must occur exactly once. Include more of the surrounding text so that it is unique.`);
      }
      const at = current.text.indexOf(input.oldText);
      // Slicing, not String.replace: `$&` or `$1` in newText must be written as they are.
      const updated = current.text.slice(0, at) + input.newText + current.text.slice(at + input.oldText.length);
      const line = current.text.slice(0, at).split("\n").length;
      try {
        await writeFileAtomic(target.root, target.display, updated, { createParents: false });
      } catch (error) {
        return failed(fsFailure("write", target.display, error));
      }
      return { ok: true, content: `edited ${target.display}: replaced 1 occurrence at line ${line}`, metadata: { path: target.display, line } };
    },
  });
}

type FileKind = "file" | "directory" | "other" | "missing" | "inaccessible";

/**
 * What is at a resolved (real) path; lstat, so a symlink swapped in since shows as "other".
 * Never throws: a permission error on the way is "inaccessible".
 */
async function fileKind(absolute: string): Promise<FileKind> {
  try {
    const stats = await lstat(absolute);
    return stats.isFile() ? "file" : stats.isDirectory() ? "directory" : "other";
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "ENOENT" ? "missing" : "inaccessible";
  }
}

/** The failure message for a path that is not what the tool needs, or undefined when it is. */
function kindProblem(kind: FileKind, display: string, wanted: "file" | "directory" | "file-or-missing"): string | undefined {
  if (kind === "inaccessible") return `could not access ${display}: permission denied or not reachable`;
  if (kind === "missing") return wanted === "file-or-missing" ? undefined : `${display} does not exist`;
  if (kind === "other") return `${display} is not a regular file or directory`;
  if (wanted === "directory") return kind === "directory" ? undefined : `${display} is not a directory; use read_file to read a file`;
  if (kind === "directory") return wanted === "file" ? `${display} is a directory; use list_dir to see what is in it` : `${display} is a directory; give a file path`;
  return undefined;
}

async function readTextForEdit(settings: WorkspaceToolSettings, absolute: string, display: string): Promise<{ ok: true; text: string } | { ok: false; message: string }> {
  const kind = await fileKind(absolute);
  if (kind === "missing") return { ok: false, message: `${display} does not exist; use write_file to create it` };
  const problem = kindProblem(kind, display, "file");
  if (problem !== undefined) return { ok: false, message: problem };
  let bytes: Buffer;
  try {
    const handle = await open(absolute, readFlags);
    try {
      // Refused before reading: the edit's result (a count of occurrences, a written copy) would
      // tell the model about a file outside the workspace linked in.
      const before = await fileLinkProblem(settings, handle, absolute);
      if (before !== undefined) return { ok: false, message: linkRefusal("edit_file", display, before) };
      const size = (await handle.stat()).size;
      if (size > maxEditBytes) return { ok: false, message: `${display} is ${size} bytes; edit_file edits files up to ${maxEditBytes} bytes` };
      bytes = await readAt(handle, 0, size);
      const after = await fileLinkProblem(settings, handle, absolute);
      if (after !== undefined) return { ok: false, message: linkRefusal("edit_file", display, after) };
    } finally {
      await handle.close();
    }
  } catch (error) {
    return { ok: false, message: fsFailure("read", display, error) };
  }
  if (bytes.includes(0)) return { ok: false, message: binaryMessage(display) };
  try {
    // fatal: re-encoding text that was not UTF-8 would corrupt the bytes edit_file did not touch.
    // ignoreBOM: keep a byte-order mark in the text, so writing it back keeps it.
    return { ok: true, text: new TextDecoder("utf-8", { fatal: true, ignoreBOM: true }).decode(bytes) };
  } catch {
    return { ok: false, message: `${display} is not valid UTF-8 text; edit_file changes text files only` };
  }
}

/**
 * Whether an opened file may be read under these settings: the link check of `single-link-file.ts`,
 * unless the host allowed hard links (then only that it is still a regular file).
 */
export async function fileLinkProblem(settings: WorkspaceToolSettings, handle: FileHandle, absolute: string): Promise<LinkProblem | undefined> {
  if (!settings.allowHardLinks) return linkProblem(handle, absolute);
  return (await handle.stat()).isFile() ? undefined : { kind: "changed" };
}

/**
 * Occurrences of `needle`, overlapping ones included: any of them would make the edit ambiguous.
 *
 * @example
 * occurrences("a-a-a", "a-a"); // 2
 */
export function occurrences(text: string, needle: string): number {
  let count = 0;
  for (let at = text.indexOf(needle); at !== -1; at = text.indexOf(needle, at + 1)) count += 1;
  return count;
}

async function readAt(handle: FileHandle, position: number, length: number): Promise<Buffer> {
  const buffer = Buffer.alloc(length);
  let filled = 0;
  while (filled < length) {
    const { bytesRead } = await handle.read(buffer, filled, length - filled, position + filled);
    if (bytesRead === 0) break;
    filled += bytesRead;
  }
  return buffer.subarray(0, filled);
}

/** The head of a cut file: a character split at the cut is dropped, not shown as garbage. */
function decodeHead(bytes: Buffer): string {
  return new TextDecoder().decode(bytes, { stream: true });
}

/** The tail of a cut file: UTF-8 continuation bytes at its start belong to a character cut off. */
function decodeTail(bytes: Buffer): string {
  let start = 0;
  while (start < bytes.length && start < 3 && ((bytes[start] ?? 0) & 0xc0) === 0x80) start += 1;
  return new TextDecoder().decode(bytes.subarray(start));
}

function binaryMessage(display: string): string {
  return `${display} looks like a binary file (it contains NUL bytes); read_file and edit_file handle text files only`;
}

function failed(message: string): ToolResult {
  return { ok: false, content: message };
}

/**
 * A filesystem error in words, with the workspace-relative path rather than the host's absolute one.
 *
 * @example
 * fsFailure("write", "lib/a.ts", Object.assign(new Error("…"), { code: "EACCES" }));
 * // "could not write lib/a.ts: permission denied"
 */
export function fsFailure(action: string, display: string, error: unknown): string {
  const code = (error as NodeJS.ErrnoException | undefined)?.code;
  const why: Record<string, string> = {
    ENOENT: "it does not exist",
    EACCES: "permission denied",
    EPERM: "operation not permitted",
    EISDIR: "it is a directory",
    ENOTDIR: "a parent of it is not a directory",
    ELOOP: "it became a symbolic link while in use; refused",
    ENOSPC: "the disk is full",
    EROFS: "the filesystem is read-only",
    ENAMETOOLONG: "the name is too long",
    EMFILE: "too many open files",
  };
  const reason = code !== undefined && Object.hasOwn(why, code) ? why[code] : describeThrown(error);
  return `could not ${action} ${display}: ${reason}`;
}

/**
 * A path a tool is about to write: resolved inside the workspace like any path, and refused when it
 * lies in a protected path (the log's directory, say) — one check for every writing tool. A path
 * the host protects only until a person approves (`approvalPaths`) is written in an approved call.
 */
function resolveWriteTarget(settings: WorkspaceToolSettings, ctx: ToolContext, asked: string): WorkspacePath {
  const target = resolveWorkspacePath(settings.root, ctx.workspace.root, asked);
  if (!target.ok) return target;
  const approved = ctx.clearance?.approvedBy !== undefined;
  const refused = [...settings.protectedPaths.filter((entry) => !approved || !settings.approvalPaths.includes(entry)), ...(ctx.protectedPaths ?? [])];
  const guarded = protectedPathOf(target.absolute, refused);
  if (guarded === undefined) return target;
  const shown = path.relative(target.root, guarded).split(path.sep).join("/") || ".";
  if (settings.approvalPaths.includes(guarded)) return { ok: false, message: `refused: "${asked}" is in ${shown}, which this workspace writes only in a call a person approved` };
  if (guarded === target.absolute || shown === target.display) return { ok: false, message: `refused: "${asked}" is ${shown}, which this workspace protects from writes` };
  return { ok: false, message: `refused: "${asked}" is inside ${shown}, which this workspace protects from writes` };
}
