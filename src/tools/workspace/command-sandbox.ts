import { spawnSync } from "node:child_process";
import { existsSync, lstatSync, readdirSync, readFileSync, readlinkSync, realpathSync, rmSync, statSync, symlinkSync } from "node:fs";
import { homedir } from "node:os";
import path from "node:path";
import { protectedWorkspaceEntries } from "../../contracts/protected-paths.js";
import { seccompFilter } from "./seccomp-filter.js";
import type { CgroupSupport, ExceededLimit, SandboxLimits } from "./sandbox-limits.js";
import { createCommandCgroup, defaultSandboxLimits, joinCgroupScript, probeCgroups } from "./sandbox-limits.js";

/**
 * How a command tool's shell is contained (docs/security.md, "The command sandbox"): the argv and
 * environment to spawn it with instead of `<shell> -c <command>`. `run_command` spawns what `wrap`
 * returns, in a process group of its own, exactly as an uncontained shell, and calls `finish` once
 * everything it started is gone.
 */
export interface CommandSandbox {
  readonly kind: "bubblewrap";
  /** Whether the sandbox can run on this machine with every guarantee it gives (probed once, then cached). */
  available(): { ok: true } | { ok: false; reason: string };
  /** What this machine cannot bound, in phrases for a header ("processes are not bounded: …"); empty when everything holds. */
  caveats(): readonly string[];
  wrap(request: SandboxRequest): WrappedCommand;
}

export interface SandboxRequest {
  shell: string;
  command: string;
  /** The working directory (inside the workspace). */
  cwd: string;
  /** The workspace root, writable inside the sandbox but for its protected paths. */
  root: string;
  /**
   * Paths that stay read-only inside the sandbox, even within the workspace (e.g. the log's
   * directory). The directories between the root and a deeper one cannot be renamed or removed
   * (so it cannot be moved aside and replaced); one that does not exist is removed after the
   * command if the command made it; a symlink is put back if the command changed it, and its
   * target inside the workspace is read-only.
   */
  readOnly: readonly string[];
  /** The environment the host would give the shell; only allowlisted names pass. */
  env: Readonly<Record<string, string | undefined>>;
}

/** What to spawn, and what to do once it ended. */
export interface WrappedCommand {
  file: string;
  args: string[];
  env: Record<string, string>;
  /** Bytes for the child's file descriptors 3, 4, … in order (the seccomp filter), written to pipes and closed. */
  inputs?: readonly Uint8Array[];
  /** Called once after the command and everything it started are gone (and may be called while it runs, `final: false`, to learn whether a bound was hit). */
  finish?(final: boolean): SandboxReport;
}

/** What the sandbox has to say about a command that ran. */
export interface SandboxReport {
  /** The bound the command ran into, if one is known. */
  exceeded?: ExceededLimit;
  /** Protected paths the command created, which were removed (workspace-relative). */
  removed: readonly string[];
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
  /** Paths outside the workspace that commands may read (read-only), besides the system directories, the toolchains on `PATH` and `defaultReadableHomePaths`. */
  readable?: readonly string[];
  /** Names at the workspace root that commands may not change, besides `protectedWorkspaceEntries`. */
  protect?: readonly string[];
  /** Resource bounds (`defaultSandboxLimits` where not given). */
  limits?: SandboxLimits;
  /**
   * The person's home directory: made a private, empty one for commands, its credential stores
   * never shown. Default `os.homedir()`; the CLI passes the `HOME` of the environment it was given.
   */
  home?: string;
}

/** What a command's environment may hold, by default: never a denylist. */
export const defaultSandboxEnv: readonly string[] = ["PATH", "HOME", "LANG", "LANGUAGE", "TERM", "TZ", "USER", "LOGNAME", "SHELL", "COLUMNS", "LINES", "NO_COLOR"];

/** Credential stores under the home directory that commands never see (files are masked empty, directories emptied), should a readable path include them. */
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
  ".cargo/credentials",
  ".cargo/credentials.toml",
  ".password-store",
  // turnlog's own: the seal key and the confirmed configs, and `turnlog run`'s logs.
  ".config/turnlog",
  ".local/state/turnlog",
];

/**
 * The only parts of the home directory a command sees, read-only (git's identity and ignore
 * rules, so `git commit` works); the rest of the home directory is a private, empty one.
 */
export const defaultReadableHomePaths: readonly string[] = [".gitconfig", ".config/git"];

/** System directories at `/` that commands read (everything else at `/` is not there: `/home`, `/root`, `/srv`, `/mnt`, `/media`, `/var`, …). */
const systemDirectories = new Set(["usr", "bin", "sbin", "lib", "lib32", "lib64", "libx32", "etc"]);

/** Files under `/etc` that hold secrets (root owns them, and a command run by root could read them). */
const etcSecrets = ["/etc/shadow", "/etc/shadow-", "/etc/gshadow", "/etc/gshadow-", "/etc/sudoers", "/etc/sudoers.d", "/etc/ssl/private", "/etc/security/opasswd"];

/** Parts of a git directory that run code or change what git reads: read-only in the sandbox, removed if a command creates them. */
const gitCodeParts = ["config", "config.worktree", "hooks", "info", "commondir", "gitdir", "modules", "worktrees", "objects/info/alternates"];

/**
 * A bubblewrap sandbox (Linux x86-64; Debian package `bubblewrap`), used through its command line
 * as OpenAI Codex and Claude Code do on Linux. It holds when the host runs as root (docs/security.md,
 * "The command sandbox"):
 *
 * - **No privilege**: a user namespace of its own (`--unshare-user`, no nested ones:
 *   `--disable-userns`), every capability dropped (`--cap-drop ALL`), no new privileges, `nosuid`
 *   mounts, and a seccomp filter (seccomp-filter.ts) refusing mount, umount, ptrace, modules,
 *   keyrings, new namespaces and setuid/setgid modes.
 * - **What it sees**: the system directories read-only (`/usr`, `/bin`, `/lib*`, `/etc` without
 *   its secrets), the toolchains on `PATH` and the `readable` paths read-only, the workspace
 *   writable but for its protected paths (read-only, and `.git` cannot be renamed or replaced);
 *   fresh, size-bounded `/tmp`, `/var/tmp`, `/run`, `/dev/shm` and home directory, of which only
 *   `defaultReadableHomePaths` are the person's. No socket outside the workspace is there to reach.
 * - **Lifetime and bounds**: its own PID namespace with `--die-with-parent`; processes, memory and
 *   file sizes bounded (`limits`), by a control group where the machine lets turnlog make one.
 * - **Network**: none unless `network`. **Environment**: an allowlist.
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
  const limits = { ...defaultSandboxLimits, ...options.limits };
  let probed: { ok: true; prlimit: string; filter: Buffer; cgroups: CgroupSupport } | { ok: false; reason: string } | undefined;
  const usable = () => (probed ??= probe(bwrap));
  return {
    kind: "bubblewrap",
    available() {
      const result = usable();
      return result.ok ? { ok: true } : { ok: false, reason: result.reason };
    },
    caveats() {
      const result = usable();
      if (!result.ok || result.cgroups.kind !== "none") return [];
      const root = process.getuid?.() === 0;
      return [
        root
          ? `processes are bounded per process only, not in total (${result.cgroups.reason}, and the kernel exempts root from the process limit); memory is bounded per process`
          : `memory is bounded per process, not in total (${result.cgroups.reason})`,
      ];
    },
    wrap(request) {
      const ready = usable();
      if (!ready.ok) throw new Error(`the command sandbox is not available: ${ready.reason}`);
      const env: Record<string, string> = {};
      for (const [name, value] of Object.entries(request.env)) {
        if (value !== undefined && (allowed.has(name) || name.startsWith("LC_"))) env[name] = value;
      }
      env.TMPDIR = "/tmp";
      const view = fileSystemView(request, options, limits.tmpBytes, env.PATH ?? "");
      const bwrapArgs = [
        ...view.args,
        "--unshare-all",
        "--unshare-user",
        "--disable-userns",
        "--cap-drop", "ALL",
        ...(options.network === true ? ["--share-net"] : []),
        "--die-with-parent",
        "--new-session",
        "--seccomp", "3",
        "--chdir", request.cwd,
        "--",
        ready.prlimit,
        `--nproc=${limits.processes}`,
        `--data=${limits.memoryBytes}`,
        `--fsize=${limits.fileSizeBytes}`,
        "--core=0",
        "--",
        request.shell, "-c", request.command,
      ];
      const cgroup = createCommandCgroup(ready.cgroups, limits);
      let final: SandboxReport | undefined;
      const finish = (ended: boolean): SandboxReport => {
        if (final !== undefined) return final; // once ended, the same report however often it is asked for
        const exceeded = cgroup?.exceeded();
        if (!ended) return { ...(exceeded !== undefined ? { exceeded } : {}), removed: [] };
        cgroup?.remove();
        final = { ...(exceeded !== undefined ? { exceeded } : {}), removed: view.restore() };
        return final;
      };
      if (cgroup === undefined) return { file: bwrap, args: bwrapArgs, env, inputs: [ready.filter], finish };
      return { file: "/bin/sh", args: ["-c", joinCgroupScript, "turnlog-sandbox", ...cgroup.procsFiles, "--", bwrap, ...bwrapArgs], env, inputs: [ready.filter], finish };
    },
  };
}

/**
 * What a protected path was before the command: restored (or removed) after it. `absent-below`:
 * `absolute` is the first missing directory on the way to a missing read-only path `entry`, removed
 * when the command made `entry` or a symlink on the way to it.
 */
type Watched = { absolute: string; relative: string } & ({ was: "absent"; repository?: boolean } | { was: "symlink"; target: string } | { was: "absent-below"; entry: string });

/**
 * The mounts that make the sandbox's file system, and `restore`, which removes the protected paths
 * the command created (it cannot change those that existed: they are read-only mount points).
 */
function fileSystemView(request: SandboxRequest, options: BubblewrapOptions, tmpBytes: number, searchPath: string): { args: string[]; restore: () => string[] } {
  const home = options.home ?? homedir();
  const tmpfs = (target: string) => ["--size", String(tmpBytes), "--tmpfs", target];
  const args: string[] = [];
  // System directories read-only; the symlinks at `/` (merged /usr: /bin → usr/bin) as they are.
  for (const name of readdirSync("/")) {
    const absolute = `/${name}`;
    let stats;
    try {
      stats = lstatSync(absolute);
    } catch {
      continue;
    }
    if (stats.isSymbolicLink()) {
      const target = readlinkSync(absolute);
      if (systemDirectories.has(path.basename(target)) || target.startsWith("usr/") || target.startsWith("/usr/")) args.push("--symlink", target, absolute);
    } else if (stats.isDirectory() && systemDirectories.has(name)) {
      args.push("--ro-bind", absolute, absolute);
    }
  }
  for (const secret of etcSecrets) args.push(...mask(secret));
  args.push(...sshHostKeys().flatMap(mask));
  if (options.network === true) {
    // /etc/resolv.conf often points into /run, which is the sandbox's own: show the real one.
    try {
      const resolv = realpathSync("/etc/resolv.conf");
      if (!resolv.startsWith("/etc/")) args.push("--ro-bind", resolv, resolv);
    } catch {
      // No resolver configuration: nothing to show.
    }
  }
  args.push("--dev", "/dev", ...tmpfs("/dev/shm"), "--remount-ro", "/dev", "--proc", "/proc");
  args.push(...tmpfs("/tmp"), "--dir", "/var", ...tmpfs("/var/tmp"), ...tmpfs("/run"), "--symlink", "../run", "/var/run");
  // A private, empty home directory; only the readable parts of the person's are there, read-only.
  if (home !== "/" && path.isAbsolute(home)) args.push(...tmpfs(home));
  const readable = [
    ...defaultReadableHomePaths.map((entry) => path.join(home, entry)),
    ...toolchainDirectories(searchPath, home, request.root),
    ...(options.readable ?? []).map((entry) => path.resolve(entry)),
  ];
  for (const entry of new Set(readable)) if (existsSync(entry)) args.push("--ro-bind", entry, entry);
  args.push("--bind", request.root, request.root);
  // Before every read-only mount below them: a later bind of a directory would cover those.
  for (const directory of pinnedDirectories(request.readOnly, request.root)) args.push("--bind", directory, directory);
  const watched: Watched[] = [];
  for (const name of [...protectedWorkspaceEntries.map((entry) => entry.name), ...(options.protect ?? [])]) {
    const absolute = path.join(request.root, name);
    if (name === ".git") args.push(...protectGit(absolute, request.root, watched));
    else args.push(...protectEntry(absolute, request.root, watched));
  }
  for (const entry of request.readOnly) {
    if (isSymlink(entry)) args.push(...protectEntry(entry, request.root, watched));
    else if (existsSync(entry)) args.push("--ro-bind", entry, entry);
    else watchMissing(entry, request.root, watched);
  }
  const hidden = [...defaultHiddenHomePaths.map((entry) => path.join(home, entry)), ...(options.hide ?? []).map((entry) => path.resolve(entry))];
  args.push(...hidden.flatMap(mask));
  return { args, restore: () => restoreWatched(watched) };
}

/**
 * The directories strictly between the workspace root and each read-only path deeper in it
 * (`node_modules` and `node_modules/@ai-sdk` for `node_modules/@ai-sdk/openai`), parents first, to
 * be bound onto themselves, writable as before: a mount point cannot be renamed or removed, so a
 * command cannot move a read-only folder aside with its parent (`mv node_modules/@ai-sdk old`) and
 * put a copy of its own in its place. The way stops at a symlink or a missing directory.
 */
function pinnedDirectories(readOnly: readonly string[], root: string): string[] {
  const pinned = new Set<string>();
  for (const entry of readOnly) {
    const relative = path.relative(root, entry);
    if (relative === "" || relative.startsWith("..") || path.isAbsolute(relative)) continue;
    let current = root;
    for (const part of relative.split(path.sep).slice(0, -1)) {
      current = path.join(current, part);
      if (!isDirectory(current)) break;
      pinned.add(current);
    }
  }
  return [...pinned].sort((a, b) => a.split(path.sep).length - b.split(path.sep).length);
}

function isSymlink(candidate: string): boolean {
  try {
    return lstatSync(candidate).isSymbolicLink();
  } catch {
    return false;
  }
}

function isDirectory(candidate: string): boolean {
  try {
    return lstatSync(candidate).isDirectory();
  } catch {
    return false;
  }
}

/**
 * A read-only path inside the workspace that does not exist (a place where Node would find a
 * package before the one installed): its first missing directory, below the pinned ones, is
 * watched, unless a protected entry's own watch covers it (`.git`, which `git init` may create).
 */
function watchMissing(entry: string, root: string, watched: Watched[]): void {
  const relative = path.relative(root, entry);
  if (relative === "" || relative.startsWith("..") || path.isAbsolute(relative)) return;
  let current = root;
  for (const part of relative.split(path.sep)) {
    current = path.join(current, part);
    if (isDirectory(current)) continue;
    if (existsSync(current) || watched.some((other) => other.absolute === current && other.was !== "absent-below")) return;
    watched.push({ absolute: current, relative: path.relative(root, current), was: "absent-below", entry });
    return;
  }
}

/** Whether the command made `entry`, or a symlink on the way to it from `first` (which now exists). */
function madeTheWayTo(first: string, entry: string): boolean {
  let current = first;
  const rest = path.relative(first, entry).split(path.sep).filter((part) => part !== "");
  for (let index = 0; ; index += 1) {
    let stats;
    try {
      stats = lstatSync(current);
    } catch {
      return false;
    }
    if (stats.isSymbolicLink()) return true;
    const part = rest[index];
    if (part === undefined) return true;
    current = path.join(current, part);
  }
}

/** A protected entry: read-only where it exists; watched (removed if created) where it does not. */
function protectEntry(absolute: string, root: string, watched: Watched[]): string[] {
  let stats;
  try {
    stats = lstatSync(absolute);
  } catch {
    watched.push({ absolute, relative: path.relative(root, absolute), was: "absent" });
    return [];
  }
  if (stats.isSymbolicLink()) {
    // A mount cannot sit on a symlink: the link is put back after the command if it changed, and its target (inside the workspace) is read-only.
    watched.push({ absolute, relative: path.relative(root, absolute), was: "symlink", target: readlinkSync(absolute) });
    const real = realInside(absolute, root);
    return real !== undefined ? ["--ro-bind", real, real] : [];
  }
  return ["--ro-bind", absolute, absolute];
}

/**
 * `.git`: the directory is its own mount point (so it cannot be renamed, removed or replaced),
 * writable for what `git commit` writes (objects, refs, the index, logs), with the parts that run
 * code or redirect git read-only; a `.git` file's `gitdir:` and a `commondir` inside the workspace
 * get the same treatment.
 */
function protectGit(absolute: string, root: string, watched: Watched[]): string[] {
  let stats;
  try {
    stats = lstatSync(absolute);
  } catch {
    watched.push({ absolute, relative: path.relative(root, absolute), was: "absent", repository: true });
    return [];
  }
  if (stats.isDirectory()) return protectGitDirectory(absolute, root, watched);
  const args = protectEntry(absolute, root, watched);
  const gitdir = stats.isSymbolicLink() ? realInside(absolute, root) : gitdirOf(absolute, root);
  if (gitdir !== undefined && gitdir !== absolute) args.push(...protectGitDirectory(gitdir, root, watched));
  return args;
}

function protectGitDirectory(directory: string, root: string, watched: Watched[], depth = 0): string[] {
  const args = ["--bind", directory, directory];
  for (const part of gitCodeParts) {
    const absolute = path.join(directory, part);
    if (existsSync(absolute)) args.push("--ro-bind", absolute, absolute);
    else watched.push({ absolute, relative: path.relative(root, absolute), was: "absent" });
  }
  const common = readPointer(path.join(directory, "commondir"));
  if (common !== undefined && depth === 0) {
    const target = realInside(path.resolve(directory, common), root);
    if (target !== undefined && target !== directory) args.push(...protectGitDirectory(target, root, watched, depth + 1));
  }
  return args;
}

/** The directory a `.git` file names (`gitdir: …`), when it lies inside the workspace. */
function gitdirOf(file: string, root: string): string | undefined {
  const text = readPointer(file);
  const named = text?.match(/^gitdir:\s*(.+)$/)?.[1];
  return named === undefined ? undefined : realInside(path.resolve(path.dirname(file), named.trim()), root);
}

function readPointer(file: string): string | undefined {
  try {
    return readFileSync(file, "utf8").split("\n")[0]?.trim();
  } catch {
    return undefined;
  }
}

/** The real path of `candidate` when it exists and lies inside the workspace. */
function realInside(candidate: string, root: string): string | undefined {
  try {
    const real = realpathSync(candidate);
    const realRoot = realpathSync(root);
    return real === realRoot || real.startsWith(realRoot + path.sep) ? real : undefined;
  } catch {
    return undefined;
  }
}

/** Removes protected paths the command created and puts changed symlinks back; returns what it undid. */
function restoreWatched(watched: readonly Watched[]): string[] {
  const undone: string[] = [];
  for (const entry of watched) {
    let now: string | undefined;
    try {
      const stats = lstatSync(entry.absolute);
      now = stats.isSymbolicLink() ? `symlink:${readlinkSync(entry.absolute)}` : "other";
    } catch {
      now = undefined;
    }
    if (entry.was === "absent-below" && (now === undefined || !madeTheWayTo(entry.absolute, entry.entry))) continue;
    if (entry.was === "absent" && now === undefined) continue;
    if (entry.was === "absent" && entry.repository === true && isPlainNewRepository(entry.absolute)) continue;
    if (entry.was === "symlink" && now === `symlink:${entry.target}`) continue;
    rmSync(entry.absolute, { recursive: true, force: true });
    if (entry.was === "symlink") symlinkSync(entry.target, entry.absolute);
    undone.push(entry.relative.split(path.sep).join("/"));
  }
  return undone;
}

/** Config keys a new repository may hold and still run nothing: what `git init`, `git config user.*` and a branch or remote setup write. */
const plainConfigKey = /^(?:core\.(?:repositoryformatversion|filemode|bare|logallrefupdates|ignorecase|precomposeunicode|symlinks)|user\.(?:name|email)|init\.defaultbranch|branch\.[^\n]*\.(?:remote|merge|rebase)|remote\.[^\n]*\.(?:url|fetch))$/;

/**
 * Whether a `.git` a contained command created is what `git init` makes, and nothing that would run
 * code on the person's next git command: a directory, sample hooks only, no pointer or worktree
 * files, an exclude file of comments, and config keys from `plainConfigKey` (read by git itself,
 * includes not followed). Anything else is removed after the command (docs/security.md).
 */
function isPlainNewRepository(directory: string): boolean {
  try {
    if (!lstatSync(directory).isDirectory()) return false;
    for (const part of ["commondir", "gitdir", "config.worktree", "modules", "worktrees", "objects/info/alternates"]) if (existsSync(path.join(directory, part))) return false;
    const hooks = path.join(directory, "hooks");
    if (existsSync(hooks) && readdirSync(hooks).some((name) => !name.endsWith(".sample"))) return false;
    const info = path.join(directory, "info");
    if (existsSync(info)) {
      if (readdirSync(info).some((name) => name !== "exclude")) return false;
      const exclude = path.join(info, "exclude");
      if (existsSync(exclude) && readFileSync(exclude, "utf8").split("\n").some((line) => line.trim() !== "" && !line.startsWith("#"))) return false;
    }
    const config = path.join(directory, "config");
    if (!existsSync(config)) return true;
    const listed = spawnSync("git", ["config", "--file", config, "--no-includes", "--name-only", "--list", "-z"], { encoding: "utf8", timeout: 10_000, env: { PATH: "/usr/bin:/bin", GIT_CONFIG_NOSYSTEM: "1", HOME: "/nonexistent" } });
    if (listed.status !== 0) return false;
    return listed.stdout.split("\0").filter((key) => key !== "").every((key) => plainConfigKey.test(key.toLowerCase()));
  } catch {
    return false;
  }
}

/**
 * The directories of the toolchains on `PATH` that lie outside the system directories (pyenv,
 * cargo, nvm, /opt/…), read-only: the `bin` directory's parent (`~/.cargo/bin` → `~/.cargo`), never
 * the home directory itself, `~/.local` or `~/.config` (only their `bin` entries), nor the workspace.
 */
function toolchainDirectories(searchPath: string, home: string, workspace: string): string[] {
  const found: string[] = [];
  for (const entry of searchPath.split(":")) {
    if (!path.isAbsolute(entry)) continue;
    const first = entry.split("/")[1] ?? "";
    if (systemDirectories.has(first) && !entry.startsWith(home + path.sep)) continue;
    if (entry === workspace || entry.startsWith(workspace + path.sep)) continue;
    let chosen = /\/(?:s?bin|shims)$/.test(entry) ? path.dirname(entry) : entry;
    if (entry.startsWith(home + path.sep)) {
      const top = path.relative(home, entry).split(path.sep)[0] ?? "";
      chosen = top === ".local" || top === ".config" ? entry : path.join(home, top);
      if (defaultHiddenHomePaths.includes(top)) continue; // masked anyway: never a toolchain
    }
    if (chosen === "/" || chosen === home || home.startsWith(chosen + path.sep)) continue;
    found.push(chosen);
  }
  return found;
}

function sshHostKeys(): string[] {
  try {
    return readdirSync("/etc/ssh")
      .filter((name) => /^ssh_host_.*_key$/.test(name))
      .map((name) => path.join("/etc/ssh", name));
  } catch {
    return [];
  }
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

/**
 * Runs `true` once in the sandbox exactly as commands will run: some kernels and containers refuse
 * user namespaces (as root too: Docker's default seccomp profile does), and without a seccomp
 * filter for this architecture or `prlimit` the guarantees do not hold. Any of these makes the
 * sandbox unavailable, with the reason.
 */
function probe(bwrap: string): { ok: true; prlimit: string; filter: Buffer; cgroups: CgroupSupport } | { ok: false; reason: string } {
  const filter = seccompFilter();
  if (filter === undefined) return { ok: false, reason: `no seccomp filter is built for ${process.arch} (only x86-64): the sandbox could not hold as root` };
  const prlimit = ["/usr/bin/prlimit", "/bin/prlimit"].find((candidate) => existsSync(candidate));
  if (prlimit === undefined) return { ok: false, reason: "prlimit (util-linux) is not installed: commands could not be bounded" };
  const result = spawnSync(
    bwrap,
    ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--size", "1048576", "--tmpfs", "/tmp", "--unshare-all", "--unshare-user", "--disable-userns", "--cap-drop", "ALL", "--die-with-parent", "--seccomp", "0", "--", prlimit, "--nproc=64", "--", "true"],
    // The filter goes in on standard input here (spawnSync writes only that); commands get it on fd 3.
    { input: filter, stdio: ["pipe", "ignore", "pipe"], timeout: 10_000 },
  );
  if (result.error !== undefined) {
    const missing = (result.error as NodeJS.ErrnoException).code === "ENOENT";
    return { ok: false, reason: missing ? `${bwrap} is not installed (Debian/Ubuntu: apt-get install bubblewrap)` : `${bwrap} could not start: ${result.error.message}` };
  }
  if (result.status !== 0) return { ok: false, reason: `${bwrap} cannot create its namespaces here: ${result.stderr.toString().trim().split("\n")[0] || `exit ${result.status}`}` };
  return { ok: true, prlimit, filter, cgroups: probeCgroups() };
}
