import { spawnSync } from "node:child_process";
import { existsSync, statSync } from "node:fs";
import { homedir } from "node:os";
import path from "node:path";

/**
 * How a command tool's shell is contained (DESIGN.md §8.3): the argv and environment to spawn it
 * with instead of `<shell> -c <command>`. `run_command` spawns what `wrap` returns, in a process
 * group of its own, exactly as an uncontained shell.
 */
export interface CommandSandbox {
  readonly kind: "bubblewrap";
  /** Whether the sandbox can run on this machine (probed once, then cached). */
  available(): { ok: true } | { ok: false; reason: string };
  wrap(request: SandboxRequest): { file: string; args: string[]; env: Record<string, string> };
}

export interface SandboxRequest {
  shell: string;
  command: string;
  /** The working directory (inside the workspace). */
  cwd: string;
  /** The workspace root, writable inside the sandbox. */
  root: string;
  /** Paths that stay read-only inside the sandbox, even within the workspace (e.g. the log's directory). */
  readOnly: readonly string[];
  /** The environment the host would give the shell; only allowlisted names pass. */
  env: Readonly<Record<string, string | undefined>>;
}

export interface BubblewrapOptions {
  /** The `bwrap` executable. Default: `bwrap` on `PATH`. */
  bwrap?: string;
  /** Whether commands may reach the network. Default false: a network namespace with only loopback. */
  network?: boolean;
  /** Variable names passed through besides the default allowlist (`PATH`, `HOME`, `LANG`, `LC_*`, `TERM`, `TZ`, `USER`, `LOGNAME`). */
  allowEnv?: readonly string[];
  /** Paths hidden from commands besides the default credential files and directories under the home directory. */
  hide?: readonly string[];
}

/** What a command's environment may hold, by default: never a denylist. */
export const defaultSandboxEnv: readonly string[] = ["PATH", "HOME", "LANG", "LANGUAGE", "TERM", "TZ", "USER", "LOGNAME", "SHELL", "COLUMNS", "LINES", "NO_COLOR"];

/** Credential stores under the home directory that commands never see (files are masked empty, directories emptied). */
export const defaultHiddenHomePaths: readonly string[] = [
  ".ssh",
  ".aws",
  ".azure",
  ".gnupg",
  ".config/gh",
  ".config/gcloud",
  ".docker",
  ".kube",
  ".netrc",
  ".npmrc",
  ".pypirc",
  ".git-credentials",
  ".config/git/credentials",
  ".password-store",
  // turnlog's own: the seal key and the confirmed configs, and `turnlog run`'s logs.
  ".config/turnlog",
  ".local/state/turnlog",
];

/**
 * A bubblewrap sandbox (Linux; Debian package `bubblewrap`), used through its command line as
 * OpenAI Codex and Claude Code do on Linux. Inside it:
 *
 * - the root file system is read-only; the workspace is writable, except the `readOnly` paths;
 *   `/tmp` is a private, empty temp directory; `/dev` and `/proc` are the sandbox's own;
 * - credential files and directories under the home directory (`defaultHiddenHomePaths`) and the
 *   `hide` paths are masked: a directory appears empty, a file empty, and nothing written there
 *   reaches the real one;
 * - every namespace is unshared: no network unless `network` (then only the host's), its own PID
 *   namespace, so when the shell exits or is killed everything it started dies with it
 *   (`--die-with-parent`, and the namespace's init goes with it); `--new-session` keeps a command
 *   from injecting input into the terminal that started turnlog;
 * - the environment is an allowlist: `defaultSandboxEnv`, `LC_*`, and `allowEnv`.
 *
 * Why hand-written: bubblewrap is a command-line program, and no maintained npm package wraps it
 * for Node (the few that exist are unmaintained or bind to Electron); the argv is the interface.
 *
 * @example
 * const tools = workspaceTools({ root, sandbox: bubblewrapSandbox() });
 */
export function bubblewrapSandbox(options: BubblewrapOptions = {}): CommandSandbox {
  const bwrap = options.bwrap ?? "bwrap";
  const allowed = new Set([...defaultSandboxEnv, ...(options.allowEnv ?? [])]);
  let probed: { ok: true } | { ok: false; reason: string } | undefined;
  return {
    kind: "bubblewrap",
    available() {
      probed ??= probe(bwrap);
      return probed;
    },
    wrap(request) {
      const home = homedir();
      const hidden = [...defaultHiddenHomePaths.map((entry) => path.join(home, entry)), ...(options.hide ?? []).map((entry) => path.resolve(entry))];
      const args = [
        "--ro-bind", "/", "/",
        "--dev", "/dev",
        "--proc", "/proc",
        "--tmpfs", "/tmp",
        "--bind", request.root, request.root,
        ...request.readOnly.filter((entry) => existsSync(entry)).flatMap((entry) => ["--ro-bind", entry, entry]),
        ...hidden.flatMap(mask),
        "--unshare-all",
        ...(options.network === true ? ["--share-net"] : []),
        "--die-with-parent",
        "--new-session",
        "--chdir", request.cwd,
        "--",
        request.shell, "-c", request.command,
      ];
      const env: Record<string, string> = {};
      for (const [name, value] of Object.entries(request.env)) {
        if (value !== undefined && (allowed.has(name) || name.startsWith("LC_"))) env[name] = value;
      }
      env.TMPDIR = "/tmp";
      return { file: bwrap, args, env };
    },
  };
}

/** Masks a path that exists: an empty directory over a directory, `/dev/null` over a file. */
function mask(target: string): string[] {
  let stats;
  try {
    stats = statSync(target);
  } catch {
    return [];
  }
  return stats.isDirectory() ? ["--tmpfs", target] : ["--ro-bind", "/dev/null", target];
}

/** Runs `true` in the tightest sandbox once: some kernels and containers refuse user namespaces. */
function probe(bwrap: string): { ok: true } | { ok: false; reason: string } {
  const result = spawnSync(bwrap, ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--unshare-all", "--die-with-parent", "--", "true"], { stdio: ["ignore", "ignore", "pipe"], timeout: 10_000, encoding: "utf8" });
  if (result.error !== undefined) {
    const missing = (result.error as NodeJS.ErrnoException).code === "ENOENT";
    return { ok: false, reason: missing ? `${bwrap} is not installed (Debian/Ubuntu: apt-get install bubblewrap)` : `${bwrap} could not start: ${result.error.message}` };
  }
  if (result.status !== 0) return { ok: false, reason: `${bwrap} cannot create its namespaces here: ${result.stderr.trim().split("\n")[0] ?? `exit ${result.status}`}` };
  return { ok: true };
}
