import { parse } from "shell-quote";
import type { ParseEntry } from "shell-quote";

/** Programs whose second word names what they do (`git push`, `npm test`): a prefix keeps it. */
const programsWithSubcommands: ReadonlySet<string> = new Set([
  "git", "npm", "pnpm", "yarn", "npx", "bun", "deno", "cargo", "go", "docker", "podman", "kubectl", "helm",
  "pip", "pip3", "poetry", "uv", "make", "gh", "terraform", "dotnet", "mvn", "gradle", "rustup", "brew", "apt", "systemctl",
]);

/**
 * What an "always" approval of a command tool covers (decisions version 3): the program, and its
 * subcommand for programs that have them. A later command is covered when its prefix is the same
 * (and, in the gate, only when it is known-safe). `undefined` for text with no first word.
 *
 * @example
 * commandPrefix("git status --short"); // "git status"
 * commandPrefix("ls -la src");         // "ls"
 * commandPrefix("npm test -- --watch"); // "npm test"
 */
export function commandPrefix(text: string): string | undefined {
  const words = text.trim().split(/\s+/).filter((word) => word !== "");
  const [program, second] = words;
  if (program === undefined) return undefined;
  if (second !== undefined && programsWithSubcommands.has(program) && /^[a-z][a-z0-9:_-]*$/.test(second)) return `${program} ${second}`;
  return program;
}

/** A word of a command scope: literal text, or a glob the shell expands. */
type Word = string | { glob: string };

/**
 * What an "always" approval of a command tool covers from decisions version 5: the exact command
 * the person saw, as the shell will read it — each word with its quotes and escapes resolved, each
 * operator and redirection, every assignment — in canonical JSON. Spacing and quoting that change
 * nothing (`npm  test`, `'npm' test`) give the same scope; any other option, argument, assignment
 * or redirection (`npm test --prefix=/other`) gives another, so the later command asks again.
 * Comments are kept: the tokenizer reads a `#` inside a word, and a line break after one, otherwise
 * than a shell does, so `npm test #x⏎…` must not be `npm test`. `undefined` for text with no word,
 * or that cannot be tokenized.
 *
 * @example
 * commandScope("npm test");                  // '[["npm","test"]]'
 * commandScope("npm test --prefix=/other");  // '[["npm","test","--prefix=/other"]]'
 * commandScope("ls -la | head -n 3");        // '[["ls","-la"],{"op":"|"},["head","-n","3"]]'
 */
export function commandScope(text: string): string | undefined {
  let entries: ParseEntry[];
  try {
    // Variables stay as written: `$HOME` is part of what the person saw, not this process's value.
    entries = parse(text, (name: string) => `$${name}`);
  } catch {
    return undefined;
  }
  const scope: (Word[] | { op: string } | { comment: string })[] = [];
  let words: Word[] | undefined;
  for (const entry of entries) {
    if (typeof entry === "string" || (typeof entry === "object" && "op" in entry && entry.op === "glob")) {
      // A glob is not the same word quoted: `ls *.ts` lists what the shell expands it to.
      const word: Word = typeof entry === "string" ? entry : { glob: (entry as { pattern: string }).pattern };
      if (words === undefined) {
        words = [];
        scope.push(words);
      }
      words.push(word);
    } else if ("op" in entry) {
      words = undefined;
      scope.push({ op: entry.op });
    } else if ("comment" in entry) {
      words = undefined;
      scope.push({ comment: entry.comment });
    }
  }
  return scope.some((part) => Array.isArray(part)) ? JSON.stringify(scope) : undefined;
}

/**
 * How a command scope reads for a person and in a rule (`approval:command=npm test`).
 *
 * @example
 * describeCommandScope('[["npm","test"]]'); // "npm test"
 */
export function describeCommandScope(scope: string): string {
  try {
    const parts = JSON.parse(scope) as (Word[] | { op: string } | { comment: string })[];
    return parts.map((part) => (Array.isArray(part) ? part.map((word) => (typeof word === "string" ? word : word.glob)).join(" ") : "op" in part ? part.op : `#${part.comment}`)).join(" ");
  } catch {
    return scope;
  }
}
