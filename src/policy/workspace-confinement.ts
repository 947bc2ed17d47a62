import path from "node:path";

/** Resolves an absolute path through symlinks; the identity when no filesystem is consulted. */
export type RealPathResolver = (absolute: string) => string;

export const lexicalRealPath: RealPathResolver = (absolute) => path.resolve(absolute);

/**
 * Whether a path a tool call names stays inside the workspace root: relative paths resolve
 * against the root, `..` and absolute paths are taken as written, and both sides are resolved
 * through symlinks, so a link that points out of the workspace is outside.
 */
export function isInsideWorkspace(candidate: string, root: string, realPath: RealPathResolver = lexicalRealPath): boolean {
  if (typeof candidate !== "string") throw new TypeError("a path argument must be a string");
  if (candidate.includes("\0")) return false;
  const realRoot = realPath(path.resolve(root));
  const real = realPath(path.resolve(realRoot, candidate));
  return real === realRoot || real.startsWith(realRoot.endsWith(path.sep) ? realRoot : realRoot + path.sep);
}
