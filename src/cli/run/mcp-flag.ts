import path from "node:path";
import { parse, type ParseEntry } from "shell-quote";
import { containsSecret } from "../../policy/secrets/secret-detector.js";
import { CliError, exitCodes } from "../../errors/cli-error.js";
import { describeThrown } from "../../util/json-value.js";

/** An MCP server started from a `--mcp "command args"` flag, before it is named. */
export interface McpCommand {
  command: string;
  args: string[];
}

/**
 * Splits a `--mcp` value into a command and its arguments the way a shell splits words (quotes and
 * escapes), with `shell-quote`. Nothing is expanded — no variables, globs or operators — since the
 * server is started without a shell; such text is refused rather than passed on literally. A
 * command line holding a secret is refused too: it is recorded so that later commands can start
 * the server again, and a secret belongs in the server's environment (`mcpServers[].env`).
 *
 * @example
 * parseMcpFlag('npx -y @modelcontextprotocol/server-filesystem "my dir"');
 * // { command: "npx", args: ["-y", "@modelcontextprotocol/server-filesystem", "my dir"] }
 */
export function parseMcpFlag(text: string): McpCommand {
  const usage = (reason: string) => new CliError(`--mcp "${text}": ${reason}`, { exitCode: exitCodes.usage });
  let entries: (ParseEntry | { variable: string })[];
  try {
    // Variables come back as objects, so that they can be refused instead of silently emptied.
    entries = parse(text, (name) => ({ variable: name }));
  } catch (error) {
    throw usage(`cannot split it into words (${describeThrown(error)})`);
  }
  const words: string[] = [];
  for (const entry of entries) {
    if (typeof entry === "string") {
      words.push(entry);
      continue;
    }
    if ("variable" in entry) throw usage(`$${entry.variable} is not expanded (the server starts without a shell); let your shell expand it`);
    if ("comment" in entry) throw usage("a # comment is not allowed");
    if ("op" in entry && entry.op === "glob") throw usage(`the pattern ${entry.pattern} is not expanded (the server starts without a shell)`);
    throw usage(`"${"op" in entry ? entry.op : "?"}" is shell syntax; --mcp takes one command and its arguments`);
  }
  const [command, ...args] = words;
  if (command === undefined || command === "") throw new CliError("--mcp needs a command, e.g. --mcp \"npx -y @modelcontextprotocol/server-filesystem .\"", { exitCode: exitCodes.usage });
  // The message must not quote a command line that holds a secret.
  if (containsSecret(words.join(" "))) {
    throw new CliError("--mcp: the command line holds what looks like a secret, and it would be recorded in the log — give it to the server in its environment (mcpServers[].env in turnlog.config.json)", {
      exitCode: exitCodes.usage,
    });
  }
  return { command, args };
}

/** Launchers whose first non-option argument names the package that is the server. */
const packageRunners = new Set(["npx", "bunx", "pnpx", "uvx", "pipx", "dlx"]);
/** Interpreters whose first non-option argument is the server's script. */
const interpreters = new Set(["node", "nodejs", "bun", "deno", "python", "python3", "uv", "ruby", "java"]);
/** Folder names that say where a script sits in a package, not which package it is. */
const buildFolders = new Set(["dist", "build", "lib", "bin", "src", "out", "esm", "cjs"]);

/**
 * A server name for a `--mcp` command, from the package or program it starts, short enough to
 * read in tool names (`mcp__<name>__<tool>`): `npx -y @modelcontextprotocol/server-filesystem .`
 * → `filesystem`, `node …/server-everything/dist/index.js stdio` → `everything`, `uvx mcp-server-git`
 * → `git`, `./bin/my-tools` → `my-tools`.
 *
 * @example
 * mcpServerName({ command: "npx", args: ["-y", "@modelcontextprotocol/server-github"] }); // "github"
 */
export function mcpServerName({ command, args }: McpCommand): string {
  const program = path.basename(command);
  let subject = program;
  if (packageRunners.has(program) || interpreters.has(program) || ((program === "pnpm" || program === "yarn") && args[0] === "dlx")) {
    const operands = args.filter((arg, index) => !arg.startsWith("-") && !(index === 0 && arg === "dlx") && !(program === "deno" && arg === "run") && !(program === "uv" && arg === "run"));
    subject = operands[0] ?? program;
  }
  return cleanName(packageOrScriptName(subject)) || "mcp";
}

/** `@scope/server-x@1.2` → `server-x`; `/a/server-y/dist/index.js` → `server-y`; `tool.py` → `tool`. */
function packageOrScriptName(subject: string): string {
  if (/^@[^/]+\/[^/]+/.test(subject)) return (subject.split("/")[1] ?? subject).replace(/@.*$/, "");
  if (!subject.includes("/") && !subject.includes("\\")) return subject.replace(/@[^@]*$/, "").replace(/\.(m?js|cjs|ts|py)$/, "");
  const parts = subject.split(/[\\/]+/).filter((part) => part !== "" && part !== ".");
  let base = (parts.pop() ?? subject).replace(/\.(m?js|cjs|ts|py)$/, "");
  // `…/server-everything/dist/index.js` says "index"; the package folder says what it is.
  if (["index", "main", "cli", "server", "__main__"].includes(base)) {
    while (parts.length > 0 && buildFolders.has(parts.at(-1) ?? "")) parts.pop();
    base = parts.at(-1) ?? base;
  }
  return base;
}

/** Letters, digits, `_` and `-` only, without the usual `mcp-server-` / `server-` / `-mcp` decoration. */
function cleanName(name: string): string {
  const plain = name.replace(/[^A-Za-z0-9_-]+/g, "-").replace(/^-+|-+$/g, "");
  const bare = plain.replace(/^(mcp[-_]server[-_]|server[-_]|mcp[-_])/i, "").replace(/([-_]mcp[-_]server|[-_]mcp|[-_]server)$/i, "");
  return (bare || plain).slice(0, 40);
}

/**
 * `name`, or `name-2`, `name-3`, … when it is already taken, so two servers never share a name
 * (it is part of each tool's name).
 *
 * @example
 * uniqueName("files", new Set(["files"])); // "files-2"
 */
export function uniqueName(name: string, taken: ReadonlySet<string>): string {
  if (!taken.has(name)) return name;
  for (let suffix = 2; ; suffix += 1) if (!taken.has(`${name}-${suffix}`)) return `${name}-${suffix}`;
}
