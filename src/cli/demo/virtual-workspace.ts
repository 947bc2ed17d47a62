import path from "node:path";

/**
 * A tiny in-memory file tree for the demo's tools, so that running `turnlog demo` can never read
 * or change the user's real files. Paths are POSIX, relative to the workspace root; a path that
 * is absolute or climbs out with `..` does not exist here.
 *
 * @example
 * const workspace = new VirtualWorkspace({ "notes.md": "# Notes" });
 * workspace.read("./notes.md"); // "# Notes"
 */
export class VirtualWorkspace {
  readonly #files = new Map<string, string>();

  constructor(files: Readonly<Record<string, string>> = {}) {
    for (const [file, content] of Object.entries(files)) {
      const key = VirtualWorkspace.normalize(file);
      if (key === undefined || key === ".") throw new TypeError(`"${file}" is not a path inside the workspace`);
      this.#files.set(key, content);
    }
  }

  /**
   * The workspace-relative form of `file` (`"."` for the root), or `undefined` when it points
   * outside the workspace.
   */
  static normalize(file: string): string | undefined {
    if (file === "" || path.posix.isAbsolute(file) || path.win32.isAbsolute(file)) return undefined;
    const normalized = path.posix.normalize(file.replaceAll("\\", "/")).replace(/\/+$/, "");
    if (normalized === ".." || normalized.startsWith("../")) return undefined;
    return normalized === "" ? "." : normalized;
  }

  read(file: string): string | undefined {
    const key = VirtualWorkspace.normalize(file);
    return key === undefined ? undefined : this.#files.get(key);
  }

  /** Writes a file; returns false (and writes nothing) for a path outside the workspace. */
  write(file: string, content: string): boolean {
    const key = VirtualWorkspace.normalize(file);
    if (key === undefined || key === ".") return false;
    this.#files.set(key, content);
    return true;
  }

  /**
   * The entries directly inside a directory, sorted, folders with a trailing `/`; `undefined`
   * when there is no such directory.
   */
  list(directory: string): string[] | undefined {
    const key = VirtualWorkspace.normalize(directory);
    if (key === undefined) return undefined;
    const prefix = key === "." ? "" : `${key}/`;
    const entries = new Set<string>();
    for (const file of this.#files.keys()) {
      if (!file.startsWith(prefix)) continue;
      const [first, ...rest] = file.slice(prefix.length).split("/");
      if (first !== undefined && first !== "") entries.add(rest.length > 0 ? `${first}/` : first);
    }
    if (entries.size === 0 && key !== ".") return undefined;
    return [...entries].sort();
  }

  /** Every file path, sorted. */
  files(): string[] {
    return [...this.#files.keys()].sort();
  }
}
