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
  const directory = await mkdtemp(path.join(tmpdir(), "turnlog-kill-bundle-"));
  try {
    await build({
      entryPoints: {
        host: path.join(repositoryRoot, "test/support/kill-host-child.ts"),
        approver: path.join(repositoryRoot, "test/support/kill-approver-child.ts"),
        "mcp-server": path.join(repositoryRoot, "test/support/mcp-effect-server.ts"),
        cli: path.join(repositoryRoot, "src/cli/main.ts"),
      },
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
    host: path.join(directory, "host.mjs"),
    approver: path.join(directory, "approver.mjs"),
    mcpServer: path.join(directory, "mcp-server.mjs"),
    cli: path.join(directory, "cli.mjs"),
    remove: () => rm(directory, { recursive: true, force: true }),
  };
}
