/**
 * Shells and language interpreters: where a given invocation takes its code from (an inline
 * string, a file, standard input), and whether inline code spawns processes or deletes files.
 */

/** Where an interpreter invocation reads the code it runs. */
export type CodeSource =
  | { kind: "stdin" }
  | { kind: "inline"; code: string }
  | { kind: "file"; path: string }
  | { kind: "none" };

export type InterpreterFamily = "shell" | "python" | "node" | "perl" | "ruby" | "php";

const SHELLS = new Set(["sh", "bash", "zsh", "dash", "ksh", "mksh", "pdksh", "ash", "yash", "fish", "csh", "tcsh"]);

/** The interpreter family of a command name, if it is one. */
export function interpreterFamily(name: string): InterpreterFamily | undefined {
  if (SHELLS.has(name)) return "shell";
  if (/^(?:python[0-9.]*|pypy[0-9.]*)$/.test(name)) return "python";
  if (name === "node" || name === "nodejs" || name === "bun") return "node";
  if (/^perl[0-9.]*$/.test(name)) return "perl";
  if (/^ruby[0-9.]*$/.test(name)) return "ruby";
  if (/^php[0-9.]*$/.test(name)) return "php";
  return undefined;
}

const STDIN_PATHS = new Set(["-", "/dev/stdin", "/dev/fd/0", "/proc/self/fd/0"]);

function fileOrStdin(word: string | undefined): CodeSource {
  if (word === undefined || STDIN_PATHS.has(word)) return { kind: "stdin" };
  return { kind: "file", path: word };
}

function shellSource(args: readonly string[]): CodeSource {
  let inline = false;
  let fromStdin = false;
  let index = 0;
  while (index < args.length) {
    const arg = args[index] as string;
    if (arg === "--" || arg === "-") {
      index += 1;
      break;
    }
    if (arg.startsWith("--")) {
      if (arg === "--version" || arg === "--help") return { kind: "none" };
      index += arg === "--rcfile" || arg === "--init-file" ? 2 : 1;
      continue;
    }
    if (/^[-+][A-Za-z]+$/.test(arg)) {
      const letters = arg.slice(1);
      if (letters.includes("c")) inline = true;
      if (letters.includes("s")) fromStdin = true;
      index += /[oO]/.test(letters) ? 2 : 1;
      continue;
    }
    break;
  }
  const rest = args.slice(index);
  if (inline) return { kind: "inline", code: rest[0] ?? "" };
  if (fromStdin) return { kind: "stdin" };
  return fileOrStdin(rest[0]);
}

/**
 * Bundled short options (`-Sc`, `-lne`, `-pe`) where `codeLetters` take the code and
 * `valueLetters` take some other value, either attached or in the next word.
 */
function bundledSource(
  args: readonly string[],
  options: { codeLetters: string; valueLetters: string; versionFlags: readonly string[]; longCode?: readonly string[]; longValue?: readonly string[] },
): CodeSource {
  let index = 0;
  while (index < args.length) {
    const arg = args[index] as string;
    if (options.versionFlags.includes(arg)) return { kind: "none" };
    if (arg === "-") return { kind: "stdin" };
    if (arg === "--") return fileOrStdin(args[index + 1]);
    if (arg.startsWith("--")) {
      const [name, value] = arg.split(/=(.*)/s, 2) as [string, string | undefined];
      if ((options.longCode ?? []).includes(name)) return { kind: "inline", code: value ?? args[index + 1] ?? "" };
      index += value === undefined && (options.longValue ?? []).includes(name) ? 2 : 1;
      continue;
    }
    if (arg.startsWith("-") && arg.length > 1) {
      let consumed = 1;
      for (let letter = 1; letter < arg.length; letter += 1) {
        const character = arg[letter] as string;
        const attached = arg.slice(letter + 1);
        if (options.codeLetters.includes(character)) {
          return { kind: "inline", code: attached !== "" ? attached : (args[index + 1] ?? "") };
        }
        if (options.valueLetters.includes(character)) {
          if (character === "m" && options.codeLetters === "c") return { kind: "none" }; // python -m: a module, data on stdin
          if (attached === "") consumed = 2;
          break;
        }
      }
      index += consumed;
      continue;
    }
    return fileOrStdin(arg);
  }
  return { kind: "stdin" };
}

/**
 * Where `name args…` reads its code.
 *
 * @example
 * codeSource("shell", ["-lc", "ls"])        // { kind: "inline", code: "ls" }
 * codeSource("python", ["-m", "json.tool"]) // { kind: "none" }
 * codeSource("shell", ["-s", "--", "-x"])   // { kind: "stdin" }
 */
export function codeSource(family: InterpreterFamily, args: readonly string[]): CodeSource {
  switch (family) {
    case "shell":
      return shellSource(args);
    case "python":
      return bundledSource(args, { codeLetters: "c", valueLetters: "mWXQ", versionFlags: ["-V", "--version", "-h", "--help"] });
    case "node":
      return bundledSource(args, {
        codeLetters: "ep",
        valueLetters: "rC",
        versionFlags: ["-v", "--version", "-h", "--help"],
        longCode: ["--eval", "--print"],
        longValue: ["--require", "--import", "--loader", "--experimental-loader", "--conditions", "--env-file", "--title"],
      });
    case "perl":
      return bundledSource(args, { codeLetters: "eE", valueLetters: "IMm", versionFlags: ["-v", "-V", "--version", "-h", "--help"] });
    case "ruby":
      return bundledSource(args, { codeLetters: "e", valueLetters: "IrCEF", versionFlags: ["-v", "--version", "-h", "--help"] });
    case "php":
      return bundledSource(args, { codeLetters: "r", valueLetters: "cdzt", versionFlags: ["-v", "--version", "-h", "--help"] });
  }
}

/** Calls that start another process, in any of the languages above. */
const SPAWNS: readonly RegExp[] = [
  /child_process/,
  /(?<![.\w])exec(?:Sync|File|FileSync|a)?\s*\(/,
  /\bspawn(?:Sync)?\s*\(/,
  /\bfork\b/,
  /\bsubprocess\b/,
  /\bos\s*\.\s*(?:system|popen|exec\w*|spawn\w*|fork\w*|posix_spawn\w*|remove|unlink|rmdir|removedirs)\b/,
  /\bpty\s*\.\s*spawn\b/,
  /(?<![.\w])(?:system|exec|spawn)\b\s*[("'`]/,
  /\bpopen\w*\b/,
  /\bIO\s*\.\s*popen\b|\bOpen3\b|\bProcess\s*\.\s*spawn\b|%x[({[<|!]/,
  /\bqx\s*[({[<|!/]/,
  /\bDeno\s*\.\s*(?:run|Command)\b|\bBun\s*\.\s*spawn/,
];

/** Calls that delete files or directories. */
const DELETES: readonly RegExp[] = [
  /\bfs(?:\s*\.\s*promises)?\s*\.\s*(?:rm|rmdir|unlink)\w*\b/,
  /\b(?:rmSync|rmdirSync|unlinkSync)\b/,
  /\.\s*(?:unlink|rmdir|rmtree)\s*\(/,
  /\b(?:unlink|rmdir)\b\s*[("'$@]/,
  /\bshutil\s*\.\s*(?:rmtree|move)\b|\brmtree\b|\bremove_tree\b/,
  /\bFileUtils\b|\bFile\s*\.\s*(?:delete|unlink)\b|\bDir\s*\.\s*(?:delete|rmdir|unlink)\b|\brm_rf?\b/,
];

/**
 * True when inline code spawns a process or deletes files. Backticks count in Perl, Ruby and PHP,
 * where they run a shell command; in JavaScript they are template strings.
 *
 * @example
 * inlineCodeIsDangerous("python", "import os; os.system('ls')") // true
 * inlineCodeIsDangerous("node", "console.log(`hi`)")            // false
 */
export function inlineCodeIsDangerous(family: InterpreterFamily, code: string): boolean {
  if ((family === "perl" || family === "ruby" || family === "php") && code.includes("`")) return true;
  return SPAWNS.some((pattern) => pattern.test(code)) || DELETES.some((pattern) => pattern.test(code));
}
