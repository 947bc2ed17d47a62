/**
 * The child scripts of the `kill` family, bundled once per run with esbuild into a temporary
 * directory and started with plain `node`: under tsx each start compiles the sources again, and
 * the family starts over a thousand children. `classic-level` stays outside the bundle (it loads
 * its native binding from its own directory), found through a `node_modules` link next to the
 * bundle.
 */
import { mkdtemp, rm, symlink } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";

const repositoryRoot = fileURLToPath(new URL("../..", import.meta.url));

/** The bundled scripts: the host, the approver, the MCP server and the turnlog CLI. */
export interface ChildBundle {
  host: string;
  approver: string;
  mcpServer: string;
  cli: string;
  /** Removes the bundle. */
  remove(): Promise<void>;
}

export async function bundleChildren(): Promise<ChildBundle> {
  const bundle = await bundleScripts({
    host: "test/support/kill-host-child.ts",
    approver: "test/support/kill-approver-child.ts",
    "mcp-server": "test/support/mcp-effect-server.ts",
    cli: "src/cli/main.ts",
  });
  return {
    host: bundle.scripts.host!,
    approver: bundle.scripts.approver!,
    mcpServer: bundle.scripts["mcp-server"]!,
    cli: bundle.scripts.cli!,
    remove: bundle.remove,
  };
}

/** Scripts bundled for plain `node`: each name's `.mjs` path, and how to remove them. */
export interface ScriptBundle {
  scripts: Record<string, string>;
  remove(): Promise<void>;
}

/**
 * Bundles `entries` (a name for each script path, relative to the repository root) into a
 * temporary directory, as `bundleChildren` does for the `kill` family; a test that starts a
 * child several times uses it too (test/reliability/handed-out.test.ts).
 */
export async function bundleScripts(entries: Record<string, string>): Promise<ScriptBundle> {
  const directory = await mkdtemp(path.join(tmpdir(), "turnlog-kill-bundle-"));
  try {
    await build({
      entryPoints: Object.fromEntries(Object.entries(entries).map(([name, script]) => [name, path.join(repositoryRoot, script)])),
      outdir: directory,
      outExtension: { ".js": ".mjs" },
      bundle: true,
      platform: "node",
      format: "esm",
      target: "node20",
      external: ["classic-level"],
      // Bundled CommonJS dependencies call require(); an ES module has none of its own.
      banner: { js: 'import { createRequire as __createRequire } from "node:module"; const require = __createRequire(import.meta.url);' },
      minify: true,
      logLevel: "error",
    });
    await symlink(path.join(repositoryRoot, "node_modules"), path.join(directory, "node_modules"), "dir");
  } catch (error) {
    await rm(directory, { recursive: true, force: true });
    throw error;
  }
  return {
    scripts: Object.fromEntries(Object.keys(entries).map((name) => [name, path.join(directory, `${name}.mjs`)])),
    remove: () => rm(directory, { recursive: true, force: true }),
  };
}
