import { existsSync } from "node:fs";
import { readFile } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { CliError } from "../../errors/cli-error.js";

/** The page's files, read once at start: the server serves only these, by name, from memory. */
export interface ViewAssets {
  readonly files: ReadonlyMap<string, { body: Buffer; contentType: string }>;
}

/** The files the browser build writes (tsup.config.ts), each with its URL path and type. */
const assetFiles = [
  { urlPath: "/", file: "index.html", contentType: "text/html; charset=utf-8" },
  { urlPath: "/app.js", file: "app.js", contentType: "text/javascript; charset=utf-8" },
  { urlPath: "/app.css", file: "app.css", contentType: "text/css; charset=utf-8" },
] as const;

/**
 * Where the page's bundled files are: `dist/view` of the package. The built CLI lives in `dist/`,
 * so that is `view/` beside it; run from the sources (tests, `tsx`), it is the repository's
 * `dist/view`.
 *
 * @example
 * viewAssetsDirectory(); // "/…/node_modules/turnlog/dist/view"
 */
export function viewAssetsDirectory(): string {
  const here = path.dirname(fileURLToPath(import.meta.url));
  const candidates = [path.join(here, "view"), path.resolve(here, "../../../dist/view")];
  return candidates.find((candidate) => existsSync(path.join(candidate, "index.html"))) ?? (candidates[0] as string);
}

/**
 * Reads the page's files from `directory` (default {@link viewAssetsDirectory}); a missing one is a
 * one-line CliError.
 *
 * @example
 * const assets = await loadViewAssets(); // throws when the package was not built
 */
export async function loadViewAssets(directory: string = viewAssetsDirectory()): Promise<ViewAssets> {
  const files = new Map<string, { body: Buffer; contentType: string }>();
  for (const asset of assetFiles) {
    try {
      files.set(asset.urlPath, { body: await readFile(path.join(directory, asset.file)), contentType: asset.contentType });
    } catch (error) {
      throw new CliError(`the view's page is missing (${path.join(directory, asset.file)}): build the package with "npm run build"`, { cause: error });
    }
  }
  return { files };
}
