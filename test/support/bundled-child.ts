/**
 * Child scripts of test/support bundled with esbuild to plain JavaScript, once per test process,
 * and started with plain `node`: under `--import tsx` every start transpiles the sources again
 * (about a second of CPU each), which dominated the files that start dozens of children. The
 * bundle runs the same sources; `classic-level` stays outside it (it loads its native binding
 * from its own directory) and is found through a `node_modules` link next to the bundle, as in
 * soak/kill/child-bundle.ts.
 */
import { mkdtempSync, rmSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";
import { startNodeChild, type LogChildProcess } from "./log-child-process.js";

const repositoryRoot = fileURLToPath(new URL("../..", import.meta.url));
const bundles = new Map<string, Promise<string>>();
let directory: string | undefined;

function bundleDirectory(): string {
  if (directory === undefined) {
    const made = mkdtempSync(path.join(tmpdir(), "turnlog-test-bundle-"));
    symlinkSync(path.join(repositoryRoot, "node_modules"), path.join(made, "node_modules"), "dir");
    // The test process owns the bundles; they go with it.
    process.once("exit", () => rmSync(made, { recursive: true, force: true }));
    directory = made;
  }
  return directory;
}

/** The path of `test/support/<script>` bundled to one `.mjs` file (built on first use). */
export function bundledScript(script: string): Promise<string> {
  let bundle = bundles.get(script);
  if (bundle === undefined) {
    const outfile = path.join(bundleDirectory(), `${path.basename(script, ".ts")}.mjs`);
    bundle = build({
      entryPoints: [path.join(repositoryRoot, "test/support", script)],
      outfile,
      bundle: true,
      platform: "node",
      format: "esm",
      target: "node20",
      // pg-native is an optional peer of pg that is never installed here: left outside, never loaded.
      external: ["classic-level", "pg-native"],
      // Bundled CommonJS dependencies call require(); an ES module has none of its own.
      banner: { js: 'import { createRequire as __createRequire } from "node:module"; const require = __createRequire(import.meta.url);' },
      logLevel: "error",
    }).then(() => outfile);
    bundles.set(script, bundle);
  }
  return bundle;
}

/** Starts `node <bundle of test/support/<script>> ...args` from the repository root (see startLogChild). */
export async function startBundledChild(script: string, args: readonly string[]): Promise<LogChildProcess> {
  return startNodeChild([await bundledScript(script)], args);
}
