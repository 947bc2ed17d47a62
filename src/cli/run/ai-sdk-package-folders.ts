import { lstatSync, readFileSync, realpathSync, statSync } from "node:fs";
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
 * Besides the folders, the places inside the workspace where Node would look for one of these
 * packages before the folder it found (missing now: a package a command made there would be loaded
 * instead), and the symlink it was found through (pnpm's layout): `placesLookedAtFirst`.
 *
 * A folder is returned only when its real path lies inside the workspace's real path. One reached
 * through a symlink out of the workspace (`npm link`, a store outside it) is not (its link is): the
 * sandbox mounts only the workspace writable, so its files are read-only to commands already, and
 * the file tools refuse a path that resolves outside the workspace.
 *
 * @example
 * aiSdkPackageFolders("@ai-sdk/openai", "/work/app");
 * // ["node_modules/@ai-sdk/node_modules/@ai-sdk/provider", …, "node_modules/@ai-sdk/openai", "node_modules/@ai-sdk/provider", …, "node_modules/zod"]
 */
export function aiSdkPackageFolders(name: string, root: string): string[] {
  const realRoot = realpathSync(root);
  const inside = (candidate: string) => candidate.startsWith(realRoot + path.sep);
  // Resolved from the workspace's node_modules, as the loader does (aiSdkResolutionBase).
  const first = packageFolder(name, path.join(realRoot, "node_modules"));
  if (first === undefined) return [];
  const seen = new Set<string>([first]);
  const earlier = new Set<string>(placesLookedAtFirst(name, path.join(realRoot, "node_modules"), realRoot));
  const pending = [first];
  for (let folder = pending.pop(); folder !== undefined; folder = pending.pop()) {
    for (const dependency of dependenciesOf(folder)) {
      const found = packageFolder(dependency, folder);
      if (found === undefined) continue;
      for (const place of placesLookedAtFirst(dependency, folder, realRoot)) earlier.add(place);
      if (seen.has(found)) continue;
      seen.add(found);
      pending.push(found);
    }
  }
  const folders = [...seen].filter(inside);
  // A missing place inside a package folder cannot be made: that folder is read-only already.
  const places = [...earlier].filter((place) => inside(place) && !folders.some((folder) => place.startsWith(folder + path.sep)));
  return [...folders, ...places].map((entry) => path.relative(realRoot, entry)).sort();
}

/**
 * The places where Node looks for `name` from `directory` before the one it found, inside the
 * workspace: `node_modules/<name>` in `directory` and in each folder above it up to the workspace
 * root (every folder, `node_modules` ones included, as Node's ESM resolver walks), up to the first
 * that is a directory. Those before it are missing now, and a package a command put in one would be
 * loaded instead of the installed one (`node_modules/@ai-sdk/node_modules/@ai-sdk/provider` comes
 * before `node_modules/@ai-sdk/provider` for `@ai-sdk/openai`'s import); the one found is returned
 * too when it is a symlink. They are approval paths: the sandbox removes a missing one again if a
 * command makes it, and puts a symlink back if a command changes it.
 */
function placesLookedAtFirst(name: string, directory: string, realRoot: string): string[] {
  const places: string[] = [];
  for (let folder = directory; folder === realRoot || folder.startsWith(realRoot + path.sep); folder = path.dirname(folder)) {
    const place = path.join(folder, "node_modules", name);
    if (!isDirectory(place)) {
      places.push(place);
      continue;
    }
    // Found here through a symlink (pnpm, npm link): the link too, or a command could point it elsewhere.
    if (lstatSync(place).isSymbolicLink()) places.push(place);
    break;
  }
  return places;
}

/** Whether `candidate` is a directory (through symlinks), as Node's resolver asks of each place. */
function isDirectory(candidate: string): boolean {
  try {
    return statSync(candidate).isDirectory();
  } catch {
    return false;
  }
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
