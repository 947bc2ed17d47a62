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
