import { realpathSync } from "node:fs";
import path from "node:path";

/**
 * Resolves an absolute path through symlinks as far as it exists: the real path of its longest
 * existing ancestor, joined with the rest. A path that does not exist yet (a file about to be
 * written) still resolves through a symlinked parent directory. It lives in `util` so that the
 * gate (`src/policy`) and the built-in workspace tools (`src/tools`), which sit on the same layer
 * and may not import each other, judge a path the same way.
 *
 * @example
 * resolveRealPath("/work/link-to-src/new-file.ts"); // "/work/src/new-file.ts"
 */
export function resolveRealPath(absolute: string): string {
  const missing: string[] = [];
  let current = path.resolve(absolute);
  for (;;) {
    try {
      return path.join(realpathSync.native(current), ...missing.reverse());
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code !== "ENOENT" && code !== "ENOTDIR") throw error;
      const parent = path.dirname(current);
      if (parent === current) return path.join(current, ...missing.reverse());
      missing.push(path.basename(current));
      current = parent;
    }
  }
}
