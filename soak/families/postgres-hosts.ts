/**
 * The machinery of the PostgreSQL soak (soak/families/postgres.ts): the host process it kills
 * (test/support/postgres-crash-host-child.ts, bundled once per run), the servers it runs on, and
 * a restart of a server under running hosts.
 */
import { execFile, spawn } from "node:child_process";
import type { ChildProcessByStdio } from "node:child_process";
import { mkdtemp, readFile, rm, stat, symlink } from "node:fs/promises";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import path from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import type { Readable } from "node:stream";
import { build } from "tsup";
// @ts-expect-error: a plain ES module script without types (scripts/ is not compiled).
import { postgresBinDirectory, startPostgres } from "../../scripts/postgres-server.mjs";

const repositoryRoot = fileURLToPath(new URL("../..", import.meta.url));
const run = promisify(execFile);

/** The host process, bundled: the scripts' startup cost is most of a case's, and tsx's is ~2.5× a bundle's. */
export interface HostBundle {
  file: string;
  remove(): Promise<void>;
}

/**
 * Bundles test/support/postgres-crash-host-child.ts with its sources and dependencies into one
 * file in a temporary directory. Packages with a native part (`level`'s classic-level) stay
 * outside, imported by their absolute paths, as they find their binaries next to themselves.
 */
export async function bundleHost(): Promise<HostBundle> {
  const directory = await mkdtemp(path.join(tmpdir(), "turnlog-soak-pg-host-"));
  const resolveFromRepository = createRequire(path.join(repositoryRoot, "package.json"));
  const nativePackages = /^(level|classic-level|pg-native)$/;
  await build({
    entry: { host: path.join(repositoryRoot, "test/support/postgres-crash-host-child.ts") },
    outDir: directory,
    format: ["esm"],
    platform: "node",
    target: "node20",
    config: false,
    silent: true,
    splitting: false,
    sourcemap: false,
    dts: false,
    clean: false,
    // Everything is bundled but the native packages, which the plugin below leaves outside.
    noExternal: [/./],
    // The bundle's CommonJS dependencies call `require`, which an ES module does not have.
    banner: { js: "import { createRequire as __soakCreateRequire } from 'node:module'; const require = __soakCreateRequire(import.meta.url);" },
    esbuildPlugins: [
      {
        name: "native-packages-by-absolute-path",
        setup(builder) {
          builder.onResolve({ filter: nativePackages }, (args) => {
            // pg-native is an optional peer of pg that is never installed here; left as is, never loaded.
            if (args.path === "pg-native") return { path: args.path, external: true };
            return { path: resolveFromRepository.resolve(args.path), external: true };
          });
        },
      },
    ],
  });
  // turnlog loads gpt-tokenizer and the MCP SDK's validator with `require` when first used
  // (docs/embedding.md, "How the backends load"), which a bundler does not follow: they are found
  // through a `node_modules` link next to the bundle, as test/support/bundled-child.ts does.
  await symlink(path.join(repositoryRoot, "node_modules"), path.join(directory, "node_modules"), "dir");
  return { file: path.join(directory, "host.js"), remove: () => rm(directory, { recursive: true, force: true }) };
}

/** A host process: its stdout lines as they come, and a way to wait for one. */
export interface HostProcess {
  child: ChildProcessByStdio<null, Readable, Readable>;
  lines: string[];
  /** Resolves once a stdout line satisfies `predicate` (rejects if the host exits first). */
  waitForLine(predicate: (line: string, index: number) => boolean): Promise<void>;
  /** Resolves once the host has exited and its output is all read. */
  closed: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  stderr(): string;
}

/** Starts `node <bundle> ...args` (test/support/log-child-process.ts does the same for tsx scripts). */
export function startHost(bundle: HostBundle, args: readonly string[]): HostProcess {
  const child = spawn(process.execPath, [bundle.file, ...args], { cwd: repositoryRoot, stdio: ["ignore", "pipe", "pipe"] });
  const lines: string[] = [];
  let partial = "";
  let errors = "";
  const waiters = new Set<() => void>();
  let ended = false;
  child.stdout.setEncoding("utf8");
  child.stdout.on("data", (chunk: string) => {
    const parts = (partial + chunk).split("\n");
    partial = parts.pop() ?? "";
    lines.push(...parts);
    for (const wake of [...waiters]) wake();
  });
  child.stderr.setEncoding("utf8");
  child.stderr.on("data", (chunk: string) => {
    errors += chunk;
  });
  // "close", not "exit": every line the host wrote before it died has been read by then.
  const closed = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    child.on("close", (code, signal) => {
      ended = true;
      for (const wake of [...waiters]) wake();
      resolve({ code, signal });
    });
  });
  function waitForLine(predicate: (line: string, index: number) => boolean): Promise<void> {
    return new Promise((resolve, reject) => {
      const check = () => {
        if (lines.some(predicate)) {
          waiters.delete(check);
          resolve();
        } else if (ended) {
          waiters.delete(check);
          reject(new Error("the host exited before the expected output"));
        }
      };
      waiters.add(check);
      check();
    });
  }
  return { child, lines, waitForLine, closed, stderr: () => errors };
}

/** A throw-away PostgreSQL server of scripts/postgres-server.mjs. */
export interface SoakServer {
  url: string;
  /** Stops it and removes its directory (a no-op for a server this run did not start). */
  stop(): void;
}

/** The server `TURNLOG_TEST_PG_URL` names, else one of this run's own (fsync off: it is thrown away). */
export async function sharedServer(): Promise<SoakServer> {
  const given = process.env.TURNLOG_TEST_PG_URL;
  if (given !== undefined && given !== "") return { url: given, stop: () => undefined };
  return startOwnServer(true);
}

/** True when this machine can start a server of its own (initdb and pg_ctl are there). */
export function canStartServers(): boolean {
  return (postgresBinDirectory() as string | undefined) !== undefined;
}

async function startOwnServer(fast: boolean): Promise<SoakServer & { directory: string }> {
  if (!canStartServers()) throw new Error("no PostgreSQL server binaries (initdb, pg_ctl) on PATH or in /usr/lib/postgresql/*/bin, and no TURNLOG_TEST_PG_URL");
  return (await startPostgres({ fast })) as SoakServer & { directory: string };
}

/** How a server is restarted under running hosts. */
export type RestartMode =
  /** `pg_ctl stop -m immediate`: the postmaster quits every backend at once, and the start recovers from the WAL (a crash). */
  | "immediate"
  /** `pg_ctl stop -m fast`: open transactions are rolled back, sessions ended, a checkpoint written. */
  | "fast"
  /** SIGKILL of the postmaster; its backends notice and exit, and the start recovers from the WAL. */
  | "kill";

/** A server of this run's own that may be restarted: never the shared one. */
export interface RestartableServer extends SoakServer {
  /** Stops the server the way `mode` says. */
  down(mode: RestartMode): Promise<void>;
  /** Starts it again, on the same port. */
  up(): Promise<void>;
  /** `down(mode)`, `downMs` of waiting, then `up()`. */
  restart(mode: RestartMode, downMs: number): Promise<void>;
}

/**
 * A dedicated server for restarts, with fsync and synchronous commits on as a real one has them:
 * an acknowledged commit must survive the crash-like stops.
 */
export async function restartableServer(): Promise<RestartableServer> {
  const server = await startOwnServer(false);
  const binDirectory = postgresBinDirectory() as string;
  const data = path.join(server.directory, "data");
  // The server runs as the data directory's owner (scripts/postgres-server.mjs picks a user when
  // this runs as root); pg_ctl must run as that user too.
  const owner = await stat(data);
  const asOwner = typeof process.getuid === "function" && process.getuid() === 0 ? { uid: owner.uid, gid: owner.gid } : {};
  const pgCtl = (args: string[]) => run(path.join(binDirectory, "pg_ctl"), ["-D", data, ...args], { cwd: tmpdir(), ...asOwner });
  const start = async () => {
    // After a SIGKILLed postmaster its backends take a moment to exit; until then a start is refused.
    for (let attempt = 0; ; attempt += 1) {
      try {
        await pgCtl(["-l", path.join(server.directory, "server.log"), "-w", "-t", "60", "start"]);
        return;
      } catch (error) {
        if (attempt >= 50) throw error;
        await sleep(100);
      }
    }
  };
  const down = async (mode: RestartMode) => {
    if (mode === "kill") {
      const pid = Number((await readFile(path.join(data, "postmaster.pid"), "utf8")).split("\n")[0]);
      process.kill(pid, "SIGKILL");
    } else {
      await pgCtl(["-m", mode, "-w", "-t", "60", "stop"]);
    }
  };
  return {
    url: server.url,
    stop: () => server.stop(),
    down,
    up: start,
    async restart(mode, downMs) {
      await down(mode);
      await sleep(downMs);
      await start();
    },
  };
}
