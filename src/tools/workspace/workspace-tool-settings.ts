import type { CommandSandbox } from "./command-sandbox.js";

/**
 * The resolved options every built-in workspace tool reads (what `workspaceTools` makes of its
 * options). A module of its own so the tool modules and the factory do not import each other.
 *
 * @example
 * const settings: WorkspaceToolSettings = {
 *   root: "/work/app", commandTimeoutMs: 60_000, maxOutputChars: 12_000, shell: "/bin/sh", env: () => ({ PATH: "/usr/bin" }),
 *   protectedPaths: ["/work/app/.turnlog"], approvalPaths: [], allowHardLinks: false,
 * };
 */
export interface WorkspaceToolSettings {
  /** The tools' root, absolute (symlinks are resolved at each call, not here). */
  root: string;
  commandTimeoutMs: number;
  maxOutputChars: number;
  shell: string;
  /** The environment of `run_command`'s shell, read at each call. */
  env: () => Record<string, string | undefined>;
  /**
   * Absolute paths `write_file` and `edit_file` do not write into unasked, read-only in the sandbox:
   * the host's `protectedPaths` (never written: the log's own directory) and its `approvalPaths`.
   */
  protectedPaths: readonly string[];
  /** Those of `protectedPaths` the file tools write once a person approved the call (`approvalPaths`). */
  approvalPaths: readonly string[];
  /** Whether the reading tools open a file with more than one link (see `single-link-file.ts`). */
  allowHardLinks: boolean;
  /** Where `run_command` runs its shell; absent: directly, uncontained. */
  sandbox?: CommandSandbox;
}

export const defaultCommandTimeoutMs = 60_000;
/**
 * Room above `maxOutputChars` in each tool's `maxResultChars`, for a tool's own header line and the
 * packetizer's `Error (tool-error): ` prefix: output the tool already bounded is not cut a second time.
 */
export const resultHeadroomChars = 256;
