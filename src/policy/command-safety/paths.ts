/**
 * What a path argument of a shell command refers to, for the rules that depend on it (`rm -r`,
 * `chmod -R`, `chown -R`, `mv`, `dd of=`, redirections, credential files). Paths are judged as
 * written, never looked up on disk: the classifier is a pure function of its input.
 */
import path from "node:path";
import { PLACEHOLDER_MARK } from "./scanner.js";

/**
 * - `root`: `/`, `/*`, or a glob over the top level (`/u*`, `/{bin,etc}`);
 * - `home`: a home directory itself or all its children (`~`, `~/`, `$HOME`, `~/*`, `~user`);
 * - `system`: a top-level system directory or all its children (`/etc`, `/usr/*`);
 * - `temp`: strictly inside a temporary directory (`/tmp/build`);
 * - `workspace`: inside the workspace (relative without escaping, or under the workspace root);
 * - `outside`: anywhere else (`/home/user/project`, `~/x`, `../x`);
 * - `unknown`: decided at run time (`$DIR`, `$(…)`, `{}`).
 */
export type PathClass = "root" | "home" | "system" | "temp" | "workspace" | "outside" | "unknown";

/** Where relative paths start: the workspace (`undefined`), a directory a `cd` went to, or unknown. */
export type WorkingDirectory = undefined | { kind: "path"; path: string } | { kind: "unknown" };

/** What paths are judged against: the workspace, the temporary directories, home, and the current `cd`. */
export interface PathContext {
  workspaceRoot: string | undefined;
  tempDirs: readonly string[];
  homeDir: string | undefined;
  cwd: WorkingDirectory;
}

/** Top-level directories the system needs (Linux and macOS): deleting, moving or re-owning one breaks the machine. */
export const SYSTEM_DIRECTORIES: ReadonlySet<string> = new Set([
  "bin",
  "boot",
  "dev",
  "etc",
  "home",
  "lib",
  "lib32",
  "lib64",
  "opt",
  "proc",
  "root",
  "sbin",
  "srv",
  "sys",
  "usr",
  "var",
  "Applications",
  "Library",
  "System",
  "Users",
  "Volumes",
  "private",
]);

const TEMP_VARIABLES = /^\$(?:TMPDIR|TMP|TEMP)(?=\/|$)/;
const HOME_VARIABLE = /^\$HOME(?=\/|$)/;

function escapeRegExp(text: string): string {
  return text.replace(/[\\^$.*+?()[\]{}|/]/g, "\\$&");
}

/**
 * The names one path segment matches when a shell expands it (`*`, `?`, `[…]`, `{a,b}`), or
 * `undefined` when it expands to nothing but itself (`[` without `]` is a literal bracket).
 *
 * @example
 * globPattern("u*")?.test("usr")          // true
 * globPattern("{bin,etc}")?.test("etc")   // true
 * globPattern("\u001b[0mhome")           // undefined
 */
export function globPattern(segment: string): RegExp | undefined {
  let source = "";
  let expands = false;
  for (let index = 0; index < segment.length; index += 1) {
    const character = segment[index] as string;
    if (character === "*" || character === "?") {
      source += character === "*" ? ".*" : ".";
      expands = true;
    } else if (character === "[") {
      const end = segment.indexOf("]", index + 2);
      if (end < 0) {
        source += "\\[";
        continue;
      }
      let body = segment.slice(index + 1, end);
      const negated = body.startsWith("!") || body.startsWith("^");
      if (negated) body = body.slice(1);
      source += `[${negated ? "^" : ""}${body.replace(/[\\\]]/g, "\\$&")}]`;
      index = end;
      expands = true;
    } else if (character === "{") {
      const end = segment.indexOf("}", index);
      const alternatives = end < 0 ? [] : segment.slice(index + 1, end).split(",");
      if (alternatives.length < 2) {
        source += "\\{";
        continue;
      }
      source += `(?:${alternatives.map(escapeRegExp).join("|")})`;
      index = end;
      expands = true;
    } else source += escapeRegExp(character);
  }
  if (!expands) return undefined;
  try {
    return new RegExp(`^${source}$`, "s");
  } catch {
    return /^/; // a pattern this reading cannot follow is assumed to match everything
  }
}

/** A word a shell would expand to several paths: `*`, `?`, `[…]`, `{a,b}`. */
export function isGlobLike(segment: string): boolean {
  return globPattern(segment) !== undefined;
}

/** True when the word's value is only known when it runs: a substitution, a variable, `{}`. */
export function isDynamic(word: string): boolean {
  return word.includes(PLACEHOLDER_MARK) || word.includes("{}") || /\$[A-Za-z_0-9@*#?!{-]/.test(word);
}

function isInsideOrEqual(child: string, parent: string): boolean {
  const relative = path.posix.relative(parent, child);
  return relative === "" || (!relative.startsWith("..") && !path.posix.isAbsolute(relative));
}

function isStrictlyInside(child: string, parent: string): boolean {
  return child !== parent && isInsideOrEqual(child, parent);
}

/** `DIR/*` (or `DIR/.*`) names all of a directory's children: removing them empties the directory. */
function directoryAndChildren(normalized: string): { directory: string; children: boolean } {
  const segments = normalized.split("/");
  const last = segments.at(-1) ?? "";
  if (segments.length > 1 && (last === "*" || last === ".*")) {
    const directory = segments.slice(0, -1).join("/") || "/";
    return { directory, children: true };
  }
  return { directory: normalized, children: false };
}

function classifyAbsolute(normalized: string, context: PathContext): PathClass {
  const segments = normalized.split("/").filter((segment) => segment !== "");
  const first = segments[0];
  if (first === undefined) return "root";
  const firstPattern = globPattern(first);
  if (firstPattern !== undefined) {
    // `/*` or `/[a-z]*` takes everything; `/u*` or `/{bin,etc}` takes system directories; `/x*` neither.
    const matched = [...SYSTEM_DIRECTORIES].filter((directory) => firstPattern.test(directory)).length;
    if (matched >= 3) return "root";
    return matched > 0 ? "system" : "outside";
  }
  const second = segments[1];
  if (SYSTEM_DIRECTORIES.has(first) && (second === undefined || (segments.length === 2 && isGlobLike(second)))) {
    return "system";
  }
  const { directory } = directoryAndChildren(normalized);
  if (context.homeDir !== undefined && context.homeDir !== "/" && directory === path.posix.normalize(context.homeDir)) {
    return "home";
  }
  if (context.tempDirs.some((temp) => isStrictlyInside(normalized, temp))) return "temp";
  if (context.workspaceRoot !== undefined && isInsideOrEqual(normalized, path.posix.normalize(context.workspaceRoot))) {
    return "workspace";
  }
  return "outside";
}

function trimTrailingSlashes(value: string): string {
  return value.length > 1 ? value.replace(/\/+$/, "") || "/" : value;
}

/**
 * Classify a path argument as written.
 *
 * @example
 * classifyPath("/usr/*", context)        // "system"
 * classifyPath("./build", context)       // "workspace"
 * classifyPath("$TMPDIR/x", context)     // "temp"
 */
export function classifyPath(raw: string, context: PathContext): PathClass {
  if (raw === "") return "workspace";
  let written = raw.replace(HOME_VARIABLE, "~").replace(TEMP_VARIABLES, "/tmp");
  if (isDynamic(written)) return "unknown";

  if (written.startsWith("~")) {
    const slash = written.indexOf("/");
    const user = slash < 0 ? written.slice(1) : written.slice(1, slash);
    const rest = slash < 0 ? "" : written.slice(slash);
    const underHome = trimTrailingSlashes(path.posix.normalize(`/${rest}`));
    if (underHome === "/" || directoryAndChildren(underHome).directory === "/") return "home";
    if (user !== "" || context.homeDir === undefined) return "outside";
    written = path.posix.join(context.homeDir, underHome);
  }

  if (!written.startsWith("/")) {
    const cwd = context.cwd;
    if (cwd?.kind === "unknown") return "unknown";
    if (cwd?.kind === "path") return classifyPath(path.posix.join(cwd.path, written), { ...context, cwd: undefined });
    if (context.workspaceRoot !== undefined) {
      written = path.posix.resolve(context.workspaceRoot, written);
    } else {
      const normalized = path.posix.normalize(written);
      return normalized === ".." || normalized.startsWith("../") ? "outside" : "workspace";
    }
  }
  return classifyAbsolute(trimTrailingSlashes(path.posix.normalize(written)), context);
}

/** `/dev/sda`, `/dev/nvme0n1`, `/dev/mmcblk0p1`, `/dev/disk2`, `/dev/mapper/…`: a whole disk or partition. */
export function isBlockDevice(target: string): boolean {
  const normalized = path.posix.normalize(target);
  return /^\/dev\/(?:(?:sd|hd|vd|xvd)[a-z]|nvme\d|mmcblk\d|r?disk\d|disk\/|dm-\d|md\d|mapper\/)/.test(normalized);
}

/** `/proc/sysrq-trigger`: one character written there can reboot or crash the machine. */
export function isSysrqTrigger(target: string): boolean {
  return path.posix.normalize(target) === "/proc/sysrq-trigger";
}

/** Targets a write may harmlessly go to: `/dev/null`, the standard streams, the terminal. */
export function isHarmlessSink(target: string): boolean {
  return /^\/dev\/(?:null|stdout|stderr|tty|fd\/[0-2])$/.test(path.posix.normalize(target));
}

const ENV_EXAMPLES = /^\.env\.(?:example|sample|template|dist|defaults)$/;
const SECRET_FILE_NAMES = new Set([".npmrc", ".pypirc", ".netrc", "_netrc", ".pgpass", ".git-credentials"]);

/**
 * A path that names a credential file or directory: `.env*` (but not `.env.example`, `.env.sample`,
 * `.env.template`), anything under `.ssh/` or `.gnupg/`, private keys `id_rsa`/`id_ed25519`/
 * `id_ecdsa`/`id_dsa` (public `.pub` keys are fine), `.aws/credentials`, `.npmrc`, `.pypirc`,
 * `.netrc`, `.pgpass`, `.git-credentials`, `.docker/config.json`, `.kube/config`, `/etc/shadow`;
 * from decisions version 4 on also `.config/turnlog/`, `.config/gh/` and `/proc/<pid>/environ`.
 */
export function isCredentialPath(raw: string, decisionsVersion = 1): boolean {
  if (decisionsVersion >= 4 && isCredentialPathSince4(raw)) return true;
  const trimmed = raw.replace(/\/+$/, "");
  if (trimmed === "") return false;
  const segments = trimmed.split("/");
  const base = segments.at(-1) ?? "";
  if (base.endsWith(".pub")) return false;
  if (base.startsWith(".env") && !ENV_EXAMPLES.test(base)) return true;
  if (/^id_(?:rsa|dsa|ecdsa|ed25519)/.test(base)) return true;
  if (SECRET_FILE_NAMES.has(base)) return true;
  if (segments.includes(".ssh") || segments.includes(".gnupg")) return true;
  if (/(?:^|\/)\.aws(?:\/credentials)?$/.test(trimmed)) return true;
  if (/(?:^|\/)\.docker\/config\.json$/.test(trimmed) || /(?:^|\/)\.kube\/config$/.test(trimmed)) return true;
  return /^\/etc\/g?shadow$/.test(path.posix.normalize(trimmed));
}

/** Where turnlog keeps its seal key, the GitHub CLI its token, and a process its environment. */
function isCredentialPathSince4(raw: string): boolean {
  if (/(?:^|\/)\.config\/(?:turnlog|gh)(?:\/|$)/.test(raw)) return true;
  return /^\/proc\/[^/]+\/environ$/.test(path.posix.normalize(raw.replace(/\/+$/, "")));
}

/** Devices any command may read or write without harm: the sinks, `/dev/zero`, `/dev/urandom`, the standard streams. */
const HARMLESS_DEVICES = /^\/dev\/(?:null|zero|u?random|full|stdin|stdout|stderr|tty|fd\/\d+)$/;

/**
 * Where a file a command reads or writes lies, for containment (decisions version 4): `inside` the
 * workspace or a temporary directory (a temp directory itself included, and the harmless devices),
 * `outside` them, or `unknown` until it runs (`$FILE`, `$(…)`, a relative path after `cd $X`).
 *
 * @example
 * locate("/etc/passwd", context) // "outside"
 * locate("/tmp", context)        // "inside"
 */
export function locate(raw: string, context: PathContext): "inside" | "outside" | "unknown" {
  if (HARMLESS_DEVICES.test(path.posix.normalize(raw))) return "inside";
  const pathClass = classifyPath(raw, context);
  if (pathClass === "workspace" || pathClass === "temp") return "inside";
  if (pathClass === "unknown") return "unknown";
  const written = trimTrailingSlashes(path.posix.normalize(raw.replace(TEMP_VARIABLES, "/tmp")));
  return context.tempDirs.includes(written) ? "inside" : "outside";
}
