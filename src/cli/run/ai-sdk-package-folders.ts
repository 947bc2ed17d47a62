import { readFileSync, realpathSync } from "node:fs";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { resolve as resolveImport } from "import-meta-resolve";

/** The fields of a package.json whose packages Node may load at run time from the package's code. */
const dependencyFields = ["dependencies", "optionalDependencies", "peerDependencies"] as const;

/**
 * The folders, relative to the workspace `root`, of the AI SDK provider package `name` as it is
 * found from `root` and of every package it loads at run time: the closure of its `dependencies`,
 * `optionalDependencies` and `peerDependencies`, each resolved from the folder of the package that
 * names it, as Node resolves an `import` there (import-meta-resolve, like `aiSdkPackageEntry`). A
 * dependency that does not resolve (not installed, no entry for `import`) is skipped: Node would
 * not load it either. `turnlog run --ai-sdk` makes them approval paths (docs/cli-run.md, "What a
 * model cannot change of the package"), because their code runs inside turnlog, outside the command
 * sandbox, with the key.
 *
 * Only folders whose real path lies inside the workspace's real path are returned. A package
 * reached through a symlink out of the workspace (`npm link`, a store outside it) is skipped: the
 * sandbox mounts only the workspace writable, so its files are read-only to commands already, and
 * the file tools refuse a path that resolves outside the workspace.
 *
 * @example
 * aiSdkPackageFolders("@ai-sdk/openai", "/work/app");
 * // ["node_modules/@ai-sdk/openai", "node_modules/@ai-sdk/provider", "node_modules/@ai-sdk/provider-utils", "node_modules/zod", …]
 */
export function aiSdkPackageFolders(name: string, root: string): string[] {
  const realRoot = realpathSync(root);
  const first = packageFolder(name, realRoot);
  if (first === undefined) return [];
  const seen = new Set<string>([first]);
  const pending = [first];
  for (let folder = pending.pop(); folder !== undefined; folder = pending.pop()) {
    for (const dependency of dependenciesOf(folder)) {
      const found = packageFolder(dependency, folder);
      if (found === undefined || seen.has(found)) continue;
      seen.add(found);
      pending.push(found);
    }
  }
  return [...seen]
    .filter((folder) => folder.startsWith(realRoot + path.sep))
    .map((folder) => path.relative(realRoot, folder))
    .sort();
}

/**
 * The real folder of the package `name` as an `import` of it from `directory` finds it: the
 * nearest folder above its entry file whose package.json bears that name (an entry may sit in a
 * `dist/esm` folder with a package.json of its own), or `undefined` when it does not resolve.
 */
function packageFolder(name: string, directory: string): string | undefined {
  let entry: string;
  try {
    // Node's resolver returns the real path of the entry (symlinks resolved), as Node loads it.
    entry = fileURLToPath(resolveImport(name, pathToFileURL(path.join(directory, "package.json")).href));
  } catch {
    return undefined;
  }
  for (let folder = path.dirname(entry); folder !== path.dirname(folder); folder = path.dirname(folder)) {
    if (manifestOf(folder)?.name === name) return folder;
  }
  return undefined;
}

/** The names a package's manifest lists as packages it may load at run time. */
function dependenciesOf(folder: string): string[] {
  const manifest = manifestOf(folder);
  if (manifest === undefined) return [];
  const names = new Set<string>();
  for (const field of dependencyFields) {
    const listed = manifest[field];
    if (typeof listed === "object" && listed !== null) for (const dependency of Object.keys(listed)) names.add(dependency);
  }
  return [...names];
}

function manifestOf(folder: string): Record<string, unknown> | undefined {
  try {
    const parsed: unknown = JSON.parse(readFileSync(path.join(folder, "package.json"), "utf8"));
    return typeof parsed === "object" && parsed !== null ? (parsed as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}
