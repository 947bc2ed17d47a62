/**
 * Runs the built `turnlog` bin as users do (`node bin/turnlog.js …`), building `dist/cli.js` first
 * when it is missing or older than the sources.
 */
import { execFile } from "node:child_process";
import { mkdir, mkdtemp, readdir, rename, rm, stat } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "tsup";
import { viewBuild } from "../../../tsup.config.js";

export const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../..");
const builtCli = path.join(repoRoot, "dist", "cli.js");
const bin = path.join(repoRoot, "bin", "turnlog.js");

/**
 * How long a CLI process may run before it is killed as hung: far above the one to three seconds a
 * command takes, so that a loaded machine never fails a test; never a judgement on speed.
 */
export const processDeadlineMs = 120_000;

export interface TurnlogRun {
  code: number;
  stdout: string;
  stderr: string;
}

/**
 * Builds only the CLI entry (esbuild, no type declarations: a few hundred milliseconds, and
 * independent of type errors elsewhere) into a staging folder, then renames it over
 * `dist/cli.js`, so that a concurrent run never sees a half-written file.
 */
export async function ensureBuiltCli(): Promise<void> {
  if (await isFresh()) return;
  await mkdir(path.dirname(builtCli), { recursive: true });
  const staging = await mkdtemp(path.join(path.dirname(builtCli), ".cli-build-"));
  try {
    await build({
      config: false,
      entry: { cli: path.join(repoRoot, "src/cli/main.ts") },
      outDir: staging,
      format: ["esm"],
      target: "node20",
      platform: "node",
      sourcemap: true,
      splitting: false,
      clean: false,
      dts: false,
      silent: true,
    });
    await rename(path.join(staging, "cli.js.map"), `${builtCli}.map`);
    await rename(path.join(staging, "cli.js"), builtCli);
  } finally {
    await rm(staging, { recursive: true, force: true });
  }
}

const builtView = path.join(repoRoot, "dist", "view");
/** The files of the page `turnlog view` serves (tsup.config.ts, `viewBuild`). */
const viewFiles = ["index.html", "app.css", "app.js"] as const;

/**
 * Builds the page `turnlog view` serves (the browser bundle) into a staging folder, then renames
 * each file into `dist/view`, so that a concurrent run sees the old file or the new one, never a
 * half-written one. Skipped when every file of `dist/view` is newer than the page's sources.
 */
export async function ensureBuiltView(): Promise<void> {
  if (await isViewFresh()) return;
  await mkdir(builtView, { recursive: true });
  const staging = await mkdtemp(path.join(path.dirname(builtView), ".view-build-"));
  try {
    await build({
      ...viewBuild,
      config: false,
      entry: { app: path.join(repoRoot, viewBuild.entry.app) },
      publicDir: path.join(repoRoot, viewBuild.publicDir),
      outDir: staging,
      clean: false,
      silent: true,
    });
    for (const file of viewFiles) await rename(path.join(staging, file), path.join(builtView, file));
  } finally {
    await rm(staging, { recursive: true, force: true });
  }
}

async function isViewFresh(): Promise<boolean> {
  const built = await Promise.all(viewFiles.map((file) => stat(path.join(builtView, file)).catch(() => undefined)));
  if (built.some((entry) => entry === undefined)) return false;
  const newest = Math.max(
    await newestMtime(path.join(repoRoot, "src", "view-ui")),
    (await stat(path.join(repoRoot, "src", "cli", "view", "view-api.ts"))).mtimeMs,
    (await stat(path.join(repoRoot, "tsup.config.ts"))).mtimeMs,
    (await stat(path.join(repoRoot, "package.json"))).mtimeMs,
  );
  return Math.min(...built.map((entry) => entry?.mtimeMs ?? 0)) >= newest;
}

async function isFresh(): Promise<boolean> {
  const built = await stat(builtCli).catch(() => undefined);
  if (built === undefined) return false;
  const newest = Math.max(
    await newestMtime(path.join(repoRoot, "src")),
    await newestMtime(path.join(repoRoot, "machines")),
    (await stat(path.join(repoRoot, "package.json"))).mtimeMs,
  );
  return built.mtimeMs >= newest;
}

async function newestMtime(directory: string): Promise<number> {
  let newest = 0;
  for (const entry of await readdir(directory, { withFileTypes: true, recursive: true })) {
    if (!entry.isFile()) continue;
    newest = Math.max(newest, (await stat(path.join(entry.parentPath, entry.name))).mtimeMs);
  }
  return newest;
}

/**
 * Runs `turnlog <args>` in `cwd` and resolves with its exit code and output (never rejects on a
 * non-zero exit). Colors and the log variables (`$TURNLOG_DIR`, `$TURNLOG_LOG`, `$TURNLOG_SCHEMA`) are
 * cleared unless `env` sets them. The deadline (`timeoutMs`, default {@link processDeadlineMs}) only
 * guards against a hang: a command normally takes one to three seconds.
 */
export function runTurnlog(args: readonly string[], options: { cwd: string; env?: Record<string, string | undefined>; timeoutMs?: number }): Promise<TurnlogRun> {
  const env: Record<string, string | undefined> = { ...process.env, FORCE_COLOR: undefined, NO_COLOR: undefined, TURNLOG_DIR: undefined, TURNLOG_LOG: undefined, TURNLOG_SCHEMA: undefined, TURNLOG_DEBUG: undefined, ...options.env };
  for (const key of Object.keys(env)) if (env[key] === undefined) delete env[key];
  return new Promise((resolve, reject) => {
    execFile(process.execPath, [bin, ...args], { cwd: options.cwd, env: env as NodeJS.ProcessEnv, timeout: options.timeoutMs ?? processDeadlineMs }, (error, stdout, stderr) => {
      if (error !== null && typeof error.code !== "number") {
        reject(error);
        return;
      }
      resolve({ code: error === null ? 0 : (error.code as number), stdout, stderr });
    });
  });
}
