#!/usr/bin/env node
// A throw-away PostgreSQL server for tests and benchmarks: `initdb` into a temporary directory,
// `pg_ctl start` on a free loopback port (and a Unix socket in the same directory), and a stop
// that removes everything again. Used by `.ci/run`, by vitest's global setup and by `npm run bench`.
//
//   node scripts/postgres-server.mjs start [--fast]   prints `TURNLOG_TEST_PG_URL=…` and `TURNLOG_TEST_PG_DIR=…`
//   node scripts/postgres-server.mjs stop <dir>        stops the server started in <dir> and removes it
//
// The binaries come from PATH or /usr/lib/postgresql/<version>/bin (the newest version). PostgreSQL
// refuses to run as root, so as root the server runs as the `postgres` user when there is one and
// as `nobody` otherwise. `--fast` turns fsync off: a test's server is thrown away, so surviving a
// machine crash buys it nothing; a benchmark's server keeps fsync on, as a real one would.
import { execFileSync, spawnSync } from "node:child_process";
import { appendFileSync, chmodSync, chownSync, existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { pathToFileURL } from "node:url";

/** The directory holding initdb and pg_ctl, or undefined when this machine has no server. */
export function postgresBinDirectory() {
  for (const directory of (process.env.PATH ?? "").split(path.delimiter)) {
    if (directory !== "" && existsSync(path.join(directory, "initdb")) && existsSync(path.join(directory, "pg_ctl"))) return directory;
  }
  const root = "/usr/lib/postgresql";
  if (!existsSync(root)) return undefined;
  const versions = readdirSync(root)
    .filter((name) => /^\d+(\.\d+)?$/.test(name) && existsSync(path.join(root, name, "bin", "initdb")))
    .sort((a, b) => Number(b) - Number(a));
  return versions.length === 0 ? undefined : path.join(root, versions[0], "bin");
}

function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

/** The uid/gid to run the server as: ourselves, or (as root) `postgres`, else `nobody`. */
function serverUser() {
  if (typeof process.getuid !== "function" || process.getuid() !== 0) return undefined;
  for (const name of ["postgres", "nobody"]) {
    const uid = spawnSync("id", ["-u", name], { encoding: "utf8" });
    const gid = spawnSync("id", ["-g", name], { encoding: "utf8" });
    if (uid.status === 0 && gid.status === 0) return { name, uid: Number(uid.stdout.trim()), gid: Number(gid.stdout.trim()) };
  }
  throw new Error("running as root and there is neither a postgres nor a nobody user to run PostgreSQL as");
}

function run(binDirectory, command, args, user) {
  const options = { stdio: ["ignore", "pipe", "pipe"], encoding: "utf8", cwd: tmpdir(), ...(user === undefined ? {} : { uid: user.uid, gid: user.gid }) };
  try {
    return execFileSync(path.join(binDirectory, command), args, options);
  } catch (error) {
    throw new Error(`${command} failed: ${error.stderr || error.stdout || error.message}`);
  }
}

/**
 * Starts a server; resolves to { url, directory, stop() }. The URL names the `postgres` database as
 * the superuser `turnlog`, with trust authentication on loopback only — or, given
 * `options.password`, with that password (SCRAM) required over TCP (the URL leaves it out; the Unix
 * socket still trusts), for tests of a login the server refuses.
 */
export async function startPostgres(options = {}) {
  const binDirectory = options.binDirectory ?? postgresBinDirectory();
  if (binDirectory === undefined) throw new Error("no PostgreSQL server binaries (initdb, pg_ctl) on PATH or in /usr/lib/postgresql/*/bin");
  const user = serverUser();
  // `parent`: where the server's directory (and so its Unix socket) goes; the system's temp directory by default.
  const directory = mkdtempSync(path.join(options.parent ?? tmpdir(), "turnlog-pg-"));
  const data = path.join(directory, "data");
  if (user !== undefined) {
    chownSync(directory, user.uid, user.gid);
    chmodSync(directory, 0o755);
  }
  try {
    const auth = ["--auth=trust"];
    if (options.password !== undefined) {
      const passwordFile = path.join(directory, "password");
      writeFileSync(passwordFile, `${options.password}\n`, { mode: 0o600 });
      if (user !== undefined) chownSync(passwordFile, user.uid, user.gid);
      auth.splice(0, 1, "--auth-local=trust", "--auth-host=scram-sha-256", `--pwfile=${passwordFile}`);
    }
    run(binDirectory, "initdb", ["-D", data, "-U", "turnlog", ...auth, "-E", "UTF8", "--locale=C", "--no-sync"], user);
    rmSync(path.join(directory, "password"), { force: true });
    const port = await freePort();
    const settings = [
      `port = ${port}`,
      "listen_addresses = '127.0.0.1'",
      `unix_socket_directories = '${directory}'`,
      "max_connections = 300",
      "shared_buffers = 128MB",
      // Readers of the global order wait for transactions older than the ones they read; a test
      // that leaves one open by mistake must fail, not hang the whole suite.
      "idle_in_transaction_session_timeout = '60s'",
      ...(options.fast ? ["fsync = off", "synchronous_commit = off", "full_page_writes = off"] : []),
    ];
    const conf = path.join(data, "postgresql.conf");
    appendFileSync(conf, `\n# turnlog throw-away server\n${settings.join("\n")}\n`);
    if (user !== undefined) chownSync(conf, user.uid, user.gid);
    run(binDirectory, "pg_ctl", ["-D", data, "-l", path.join(directory, "server.log"), "-w", "-t", "60", "start"], user);
    const url = `postgres://turnlog@127.0.0.1:${port}/postgres`;
    return { url, directory, stop: () => stopPostgres(directory, binDirectory) };
  } catch (error) {
    rmSync(directory, { recursive: true, force: true });
    throw error;
  }
}

/** Stops the server started in `directory` (fast shutdown) and removes the directory. */
export function stopPostgres(directory, binDirectory = postgresBinDirectory()) {
  const data = path.join(directory, "data");
  if (binDirectory !== undefined && existsSync(path.join(data, "postmaster.pid"))) {
    try {
      run(binDirectory, "pg_ctl", ["-D", data, "-m", "fast", "-w", "stop"], serverUser());
    } catch {
      // Already gone; the directory is removed below either way.
    }
  }
  rmSync(directory, { recursive: true, force: true });
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  const [command, argument] = process.argv.slice(2);
  if (command === "start") {
    const { url, directory } = await startPostgres({ fast: process.argv.includes("--fast") });
    console.log(`TURNLOG_TEST_PG_URL=${url}`);
    console.log(`TURNLOG_TEST_PG_DIR=${directory}`);
  } else if (command === "stop" && argument !== undefined) {
    stopPostgres(argument);
  } else if (command === "bin") {
    const directory = postgresBinDirectory();
    if (directory === undefined) process.exit(1);
    console.log(directory);
  } else {
    console.error("usage: postgres-server.mjs start [--fast] | stop <dir> | bin");
    process.exit(2);
  }
}
