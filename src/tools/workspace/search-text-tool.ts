import { constants } from "node:fs";
import { lstat, open, readdir } from "node:fs/promises";
import path from "node:path";
import { z } from "zod";
import type { ToolDefinition, ToolResult } from "../define-tool.js";
import { defineTool } from "../define-tool.js";
import { fileLinkProblem, fsFailure } from "./workspace-file-tools.js";
import { resolveWorkspacePath } from "./workspace-path.js";
import type { WorkspaceToolSettings } from "./workspace-tool-settings.js";
import { resultHeadroomChars } from "./workspace-tool-settings.js";

/** Directories never walked into (they can still be searched by naming them as `path`). */
export const skippedDirectories: ReadonlySet<string> = new Set([".git", "node_modules", ".turnlog"]);
/** At most this many matching lines are returned. */
export const maxSearchMatches = 200;
/** Files bigger than this are skipped (minified bundles, logs, data). */
export const maxSearchFileBytes = 1024 * 1024;
/** At most this many files are read per search, so a huge tree cannot hold the turn. */
export const maxSearchFiles = 20_000;
/** A matching line longer than this is cut (minified code is one enormous line). */
export const maxMatchLineChars = 300;

// As read_file opens: a symlink swapped in since the walk saw the entry fails the open, a FIFO cannot hang it.
const readFlags = constants.O_RDONLY | (constants.O_NOFOLLOW ?? 0) | (constants.O_NONBLOCK ?? 0);

interface SearchStats {
  files: number;
  binary: number;
  large: number;
  /** Files with more than one link (or replaced while opened): skipped, see `single-link-file.ts`. */
  hardLinked: number;
  matchedFiles: number;
  stopped: "matches" | "output" | "files" | undefined;
}

/**
 * `search_text({ pattern, path? })`: the lines that contain `pattern` — a literal, case-sensitive
 * string — in the files under `path` (default: the workspace root), as `file:line: text`, in path
 * order. `.git`, `node_modules` and `.turnlog` are skipped while walking, and so are binary files (a
 * NUL byte), files over `maxSearchFileBytes`, every symbolic link — the walk never leaves the
 * directory it started in — and every file with more than one link (unless `allowHardLinks`),
 * which may be a file outside the workspace under a second name.
 *
 * Literal, not a regular expression: JavaScript's regex engine backtracks, a pattern such as
 * `(a+)+$` can spin for minutes, and a synchronous match cannot be interrupted by the call's timeout.
 * A literal search is linear in the text, and a model that wants `foo.bar` gets exactly that.
 *
 * @example
 * const searchText = searchTextTool(settings);
 * // search_text({ pattern: "TODO", path: "lib" }) → "lib/a.ts:12: // TODO(#7): …\n[1 match in 1 file; 9 files searched]"
 */
export function searchTextTool(settings: WorkspaceToolSettings): ToolDefinition {
  return defineTool({
    name: "search_text",
    description: `Find the lines containing a literal, case-sensitive string (not a regular expression) in the files under a path of the workspace (default: all of it). Returns "file:line: text" lines, at most ${maxSearchMatches}. Skips .git, node_modules, .turnlog, binary files, symbolic links and hard-linked files.`,
    risk: "read-only-local",
    input: z.object({
      pattern: z.string().min(1).describe("The exact text to look for, on one line."),
      path: z.string().min(1).optional().describe("A file or directory to search, relative to the workspace root. Default: the whole workspace."),
    }),
    paths: (input) => [input.path ?? "."],
    idempotent: true,
    maxResultChars: settings.maxOutputChars + resultHeadroomChars,
    run: async (input, ctx) => {
      if (/[\r\n]/.test(input.pattern)) return failed("the pattern spans several lines; search_text matches within one line");
      const target = resolveWorkspacePath(settings.root, ctx.workspace.root, input.path ?? ".");
      if (!target.ok) return failed(target.message);
      let start;
      try {
        start = await lstat(target.absolute);
      } catch (error) {
        return failed(fsFailure("search", target.display, error));
      }
      if (!start.isFile() && !start.isDirectory()) return failed(`${target.display} is not a regular file or directory`);

      const lines: string[] = [];
      const stats: SearchStats = { files: 0, binary: 0, large: 0, hardLinked: 0, matchedFiles: 0, stopped: undefined };
      let chars = 0;
      const budget = settings.maxOutputChars - 200;

      /** Searches one file; false once a limit is reached and the search should stop. */
      const searchFile = async (absolute: string, size: number): Promise<boolean> => {
        ctx.signal.throwIfAborted();
        if (stats.files >= maxSearchFiles) {
          stats.stopped = "files";
          return false;
        }
        stats.files += 1;
        if (size > maxSearchFileBytes) {
          stats.large += 1;
          return true;
        }
        let bytes: Buffer;
        try {
          const handle = await open(absolute, readFlags);
          try {
            // A hard link may be a file outside the workspace under a second name: skipped, not read,
            // and counted in the summary, so one such file does not fail the whole search.
            if ((await fileLinkProblem(settings, handle, absolute)) !== undefined) {
              stats.hardLinked += 1;
              return true;
            }
            bytes = await handle.readFile();
            if ((await fileLinkProblem(settings, handle, absolute)) !== undefined) {
              stats.hardLinked += 1;
              return true;
            }
          } finally {
            await handle.close();
          }
        } catch {
          // A file that vanished or is unreadable is not a reason to stop the search.
          return true;
        }
        if (bytes.includes(0)) {
          stats.binary += 1;
          return true;
        }
        const display = path.relative(target.root, absolute).split(path.sep).join("/");
        const text = bytes.toString("utf8");
        if (!text.includes(input.pattern)) return true;
        stats.matchedFiles += 1;
        const fileLines = text.split("\n");
        for (let index = 0; index < fileLines.length; index += 1) {
          const line = (fileLines[index] ?? "").replace(/\r$/, "");
          if (!line.includes(input.pattern)) continue;
          if (lines.length >= maxSearchMatches) {
            stats.stopped = "matches";
            return false;
          }
          const shown = line.length > maxMatchLineChars ? `${line.slice(0, maxMatchLineChars)}…` : line;
          const entry = `${display}:${index + 1}: ${shown}`;
          if (chars + entry.length + 1 > budget) {
            stats.stopped = "output";
            return false;
          }
          lines.push(entry);
          chars += entry.length + 1;
        }
        return true;
      };

      /** Walks a directory in name order; false once the search should stop. */
      const walk = async (directory: string): Promise<boolean> => {
        ctx.signal.throwIfAborted();
        let entries;
        try {
          entries = await readdir(directory, { withFileTypes: true });
        } catch {
          return true;
        }
        entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
        for (const entry of entries) {
          // Dirent types come from lstat: a symbolic link is neither a file nor a directory here,
          // so it is never followed — in or out of the workspace.
          const absolute = path.join(directory, entry.name);
          if (entry.isDirectory()) {
            if (skippedDirectories.has(entry.name)) continue;
            if (!(await walk(absolute))) return false;
          } else if (entry.isFile()) {
            const size = await lstat(absolute).then((stats) => stats.size, () => 0);
            if (!(await searchFile(absolute, size))) return false;
          }
        }
        return true;
      };

      if (start.isFile()) await searchFile(target.absolute, start.size);
      else await walk(target.absolute);
      return { ok: true, content: [...lines, summary(input.pattern, lines.length, stats)].join("\n"), metadata: { matches: lines.length, filesSearched: stats.files } };
    },
  });
}

function summary(pattern: string, matches: number, stats: SearchStats): string {
  const plural = (count: number, word: string) => `${count} ${word}${count === 1 ? "" : word.endsWith("h") ? "es" : "s"}`;
  const parts = [matches === 0 ? `no matches for ${JSON.stringify(pattern)}` : `${plural(matches, "match")} in ${plural(stats.matchedFiles, "file")}`, `${plural(stats.files, "file")} searched`];
  if (stats.binary > 0) parts.push(`${stats.binary} binary skipped`);
  if (stats.large > 0) parts.push(`${stats.large} over ${maxSearchFileBytes} bytes skipped`);
  if (stats.hardLinked > 0) parts.push(`${stats.hardLinked} hard-linked skipped (a file with more than one link may be a file outside the workspace)`);
  if (stats.stopped === "matches") parts.push(`stopped at ${maxSearchMatches} matches; narrow the path or the pattern`);
  if (stats.stopped === "output") parts.push("stopped at the output limit; narrow the path or the pattern");
  if (stats.stopped === "files") parts.push(`stopped after ${maxSearchFiles} files; narrow the path`);
  return `[${parts.join("; ")}]`;
}

function failed(message: string): ToolResult {
  return { ok: false, content: message };
}
