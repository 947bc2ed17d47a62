import { existsSync, mkdirSync, readdirSync, readFileSync, rmdirSync, writeFileSync } from "node:fs";
import path from "node:path";

/**
 * Resource limits of a contained command (docs/security.md, "Limits"). Every number is a bound on
 * the command and everything it starts.
 */
export interface SandboxLimits {
  /** Processes and threads at once. Default 256. */
  processes?: number;
  /** Bytes of memory: each process's data (`RLIMIT_DATA`), and, where a cgroup can be made, all of them together with the files in their temporary directories. Default 4 GiB. */
  memoryBytes?: number;
  /** The largest file a command may write (`RLIMIT_FSIZE`); past it the writer is killed (`SIGXFSZ`). Default 1 GiB. */
  fileSizeBytes?: number;
  /** The size of each private temporary file system: `/tmp`, `/var/tmp`, `/dev/shm`, `/run` and the home directory. Default 512 MiB. */
  tmpBytes?: number;
}

export const defaultSandboxLimits: Required<SandboxLimits> = {
  processes: 256,
  memoryBytes: 4 * 1024 ** 3,
  fileSizeBytes: 1024 ** 3,
  tmpBytes: 512 * 1024 ** 2,
};

/** Which bound a command ran into, as recorded in its result. */
export type ExceededLimit = "processes" | "memory" | "file-size";

/**
 * A control group holding one command: it bounds processes (`pids`) and memory across all the
 * command's processes, which `setrlimit` cannot do for root (the kernel exempts uid 0 from
 * `RLIMIT_NPROC`), and tells afterwards which bound was hit.
 */
export interface CommandCgroup {
  /** The `cgroup.procs` files a process writes its PID into to join (before it starts the sandbox). */
  readonly procsFiles: readonly string[];
  /** The bound the command ran into, if any (read while it runs and after). */
  exceeded(): ExceededLimit | undefined;
  /** Removes the group once its processes are gone; failures are ignored (an empty group costs nothing). */
  remove(): void;
}

/** How this machine bounds processes and memory: a writable cgroup hierarchy, or only `setrlimit`. */
export type CgroupSupport = { kind: "v2"; parent: string } | { kind: "v1"; pids: string; memory?: string } | { kind: "none"; reason: string };

let created = 0;

/** Reads where this process's cgroups are and whether it may make children there. */
export function probeCgroups(root = "/sys/fs/cgroup", self = "/proc/self/cgroup"): CgroupSupport {
  let lines: string[];
  try {
    lines = readFileSync(self, "utf8").trim().split("\n");
  } catch {
    return { kind: "none", reason: "no control groups here" };
  }
  const pathOf = (controller: string): string | undefined => {
    for (const line of lines) {
      const [, controllers = "", where = ""] = line.split(":");
      if (controllers.split(",").includes(controller)) return where;
    }
    return undefined;
  };
  if (existsSync(path.join(root, "cgroup.controllers"))) {
    const own = lines.find((line) => line.startsWith("0::"))?.slice(3) ?? "/";
    const parent = path.join(root, own);
    const delegated = safeRead(path.join(parent, "cgroup.subtree_control")).split(/\s+/);
    if (!delegated.includes("pids")) return { kind: "none", reason: `the cgroup ${own} does not delegate the pids controller` };
    if (!writableChild(parent)) return { kind: "none", reason: `the cgroup ${own} is not writable` };
    removeStaleGroups(parent);
    return { kind: "v2", parent };
  }
  const pidsPath = pathOf("pids");
  if (pidsPath === undefined || !existsSync(path.join(root, "pids"))) return { kind: "none", reason: "no pids controller is mounted" };
  const pids = path.join(root, "pids", pidsPath);
  if (!writableChild(pids)) return { kind: "none", reason: "the pids cgroup is not writable" };
  const memoryPath = pathOf("memory");
  const memory = memoryPath !== undefined ? path.join(root, "memory", memoryPath) : undefined;
  const memoryWritable = memory !== undefined && writableChild(memory);
  removeStaleGroups(pids);
  if (memoryWritable) removeStaleGroups(memory);
  return { kind: "v1", pids, ...(memoryWritable ? { memory } : {}) };
}

function safeRead(file: string): string {
  try {
    return readFileSync(file, "utf8").trim();
  } catch {
    return "";
  }
}

/** Whether a child group can be made (and removed) under `parent`. */
function writableChild(parent: string): boolean {
  const probe = path.join(parent, `turnlog-probe-${process.pid}-${(created += 1)}`);
  try {
    mkdirSync(probe);
    rmdirSync(probe);
    return true;
  } catch {
    return false;
  }
}

/** A counter in a flat-keyed cgroup file (`max 3`, `oom_kill 1`). */
function counter(file: string, key: string): number {
  const line = safeRead(file)
    .split("\n")
    .find((entry) => entry.startsWith(`${key} `));
  return line === undefined ? 0 : Number(line.slice(key.length + 1));
}

/** Makes the group of one command, or `undefined` when the machine has none to give. */
export function createCommandCgroup(support: CgroupSupport, limits: Required<SandboxLimits>): CommandCgroup | undefined {
  if (support.kind === "none") return undefined;
  const name = `turnlog-${process.pid}-${(created += 1)}`;
  const dirs: string[] = [];
  try {
    if (support.kind === "v2") {
      const dir = path.join(support.parent, name);
      mkdirSync(dir);
      dirs.push(dir);
      writeFileSync(path.join(dir, "pids.max"), String(limits.processes));
      if (existsSync(path.join(dir, "memory.max"))) {
        writeFileSync(path.join(dir, "memory.max"), String(limits.memoryBytes));
        if (existsSync(path.join(dir, "memory.swap.max"))) writeFileSync(path.join(dir, "memory.swap.max"), "0");
      }
      return group(dirs, [path.join(dir, "cgroup.procs")], () => {
        if (counter(path.join(dir, "pids.events"), "max") > 0) return "processes";
        if (counter(path.join(dir, "memory.events"), "oom_kill") > 0) return "memory";
        return undefined;
      });
    }
    const pids = path.join(support.pids, name);
    mkdirSync(pids);
    dirs.push(pids);
    writeFileSync(path.join(pids, "pids.max"), String(limits.processes));
    const procs = [path.join(pids, "cgroup.procs")];
    let memory: string | undefined;
    if (support.memory !== undefined) {
      memory = path.join(support.memory, name);
      mkdirSync(memory);
      dirs.push(memory);
      writeFileSync(path.join(memory, "memory.limit_in_bytes"), String(limits.memoryBytes));
      // With swap accounting, memory + swap together get the same bound (no swapping past it).
      if (existsSync(path.join(memory, "memory.memsw.limit_in_bytes"))) writeFileSync(path.join(memory, "memory.memsw.limit_in_bytes"), String(limits.memoryBytes));
      procs.push(path.join(memory, "cgroup.procs"));
    }
    return group(dirs, procs, () => {
      if (counter(path.join(pids, "pids.events"), "max") > 0) return "processes";
      if (memory !== undefined && counter(path.join(memory, "memory.oom_control"), "oom_kill") > 0) return "memory";
      return undefined;
    });
  } catch {
    for (const dir of dirs.reverse()) removeWhenEmpty(dir, 0);
    return undefined;
  }
}

function group(dirs: readonly string[], procsFiles: readonly string[], exceeded: () => ExceededLimit | undefined): CommandCgroup {
  return {
    procsFiles,
    exceeded,
    remove() {
      for (const dir of [...dirs].reverse()) removeWhenEmpty(dir);
    },
  };
}

/** How often, and how many times, a group whose last processes are still being reaped is tried again. */
const removeRetryMs = 100;
const removeRetries = 100;

/**
 * Removes a group (`left` more tries); while the kernel still reaps the command's last processes (the PID namespace
 * goes down after the shell has exited) `rmdir` answers EBUSY, so it is tried again in the
 * background, without holding the process open. Groups a crashed host left behind are removed by
 * the next host's probe (`removeStaleGroups`).
 */
function removeWhenEmpty(dir: string, left = removeRetries): void {
  try {
    rmdirSync(dir);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "EBUSY" || left === 0) return;
    setTimeout(() => removeWhenEmpty(dir, left - 1), removeRetryMs).unref();
  }
}

/** Removes the empty groups of hosts that are gone (`turnlog-<pid>-<n>` whose process no longer runs). */
function removeStaleGroups(parent: string): void {
  let names: string[];
  try {
    names = readdirSync(parent).filter((name) => /^turnlog-\d+-\d+$/.test(name));
  } catch {
    return;
  }
  for (const name of names) {
    const pid = Number(name.split("-")[1]);
    if (pid === process.pid || isRunning(pid)) continue;
    removeWhenEmpty(path.join(parent, name), 0);
  }
}

function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}

/**
 * The shell that joins a group before it becomes the sandbox: `sh -c JOIN_SCRIPT turnlog-sandbox
 * <procs files…> -- <bwrap> <args…>`. Joining before `exec` puts every process the command starts
 * in the group (a PID written after the start would miss children already forked).
 */
export const joinCgroupScript = 'for f in "$@"; do shift; [ "$f" = -- ] && break; echo $$ > "$f" || exit 125; done; exec "$@"';
