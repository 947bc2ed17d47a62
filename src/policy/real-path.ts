/**
 * The gate's symlink resolution. The implementation lives in `src/util/real-path.ts` so the
 * built-in workspace tools share it: the gate and the tools must never disagree on where a path
 * points.
 */
export { resolveRealPath } from "../util/real-path.js";
