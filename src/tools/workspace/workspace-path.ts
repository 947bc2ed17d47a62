import { statSync } from "node:fs";
import path from "node:path";
import { resolveRealPath } from "../../util/real-path.js";

/** A path argument resolved inside the workspace, or why it was refused. */
export type WorkspacePath =
  | {
      ok: true;
      /** The real path (symlinks resolved) the tool operates on. */
      absolute: string;
      /** The path relative to the workspace root, `/`-separated (`.` for the root): what the model is shown. */
      display: string;
      /** The real path of the workspace root. */
      root: string;
    }
  | { ok: false; message: string };

/**
 * Resolves a path argument of a built-in workspace tool at run time — defense in depth behind the
 * gate, since the filesystem may have changed between the gate's decision and the run. A relative
 * path resolves against the tools' `root`; `..` and absolute paths are taken as written; the result
 * is resolved through symlinks (as far as it exists) and must lie inside the real root **and**
 * inside the session's workspace (`policy.workspace.root`, which the gate judged the path against).
 * Never throws: a refusal is a message the model can read.
 *
 * @example
 * resolveWorkspacePath("/work/app", "/work/app", "src/index.ts");
 * // { ok: true, absolute: "/work/app/src/index.ts", display: "src/index.ts", root: "/work/app" }
 * resolveWorkspacePath("/work/app", "/work/app", "../secrets.txt");
 * // { ok: false, message: "refused: \"../secrets.txt\" is outside the workspace" }
 */
export function resolveWorkspacePath(root: string, sessionRoot: string, candidate: string): WorkspacePath {
  if (candidate.includes("\0")) return { ok: false, message: "refused: the path contains a NUL character" };
  try {
    const realRoot = resolveRealPath(path.resolve(root));
    if (!isDirectory(realRoot)) return { ok: false, message: "refused: the workspace root does not exist or is not a directory" };
    const lexical = path.resolve(realRoot, candidate);
    const absolute = resolveRealPath(lexical);
    if (!isWithin(absolute, realRoot)) {
      // Saying *why* lets the model stop retrying a path that merely looks inside.
      const how = isWithin(lexical, realRoot) ? " (it leads out through a symbolic link)" : "";
      return { ok: false, message: `refused: "${candidate}" is outside the workspace${how}` };
    }
    const realSessionRoot = resolveRealPath(path.resolve(sessionRoot));
    if (!isWithin(absolute, realSessionRoot)) {
      // The gate confined the path against the session's root; a path outside it was never judged.
      return { ok: false, message: `refused: "${candidate}" is outside the session's workspace; the workspace tools' root and policy.workspace.root should be the same directory` };
    }
    const display = path.relative(realRoot, absolute).split(path.sep).join("/");
    return { ok: true, absolute, display: display === "" ? "." : display, root: realRoot };
  } catch (error) {
    // A symlink loop (ELOOP), a permission error on an ancestor, …: refused, never a crash.
    const code = (error as NodeJS.ErrnoException).code ?? "error";
    return { ok: false, message: `refused: "${candidate}" cannot be resolved (${code})` };
  }
}

/** Whether `child` is `parent` or lies below it (both absolute and normalized). */
export function isWithin(child: string, parent: string): boolean {
  return child === parent || child.startsWith(parent.endsWith(path.sep) ? parent : parent + path.sep);
}

function isDirectory(absolute: string): boolean {
  try {
    return statSync(absolute).isDirectory();
  } catch {
    return false;
  }
}

/**
 * The protected path (see `workspaceTools({ protectedPaths })`) a resolved target lies in, if any.
 * Each protected path is resolved through symlinks at the call, like the target.
 *
 * @example
 * protectedPathOf("/work/app/.turnlog/000003.log", ["/work/app/.turnlog"]); // "/work/app/.turnlog"
 */
export function protectedPathOf(absolute: string, protectedPaths: readonly string[]): string | undefined {
  return protectedPaths.find((entry) => {
    try {
      return isWithin(absolute, resolveRealPath(entry));
    } catch {
      return isWithin(absolute, entry);
    }
  });
}
