import { realpath } from "node:fs/promises";
import path from "node:path";
import { quote } from "shell-quote";
import type { ApprovalMode } from "../../contracts/policy.js";
import { containsSecret } from "../../policy/secrets/secret-detector.js";
import { canonicalJson, sha256 } from "../../util/digest.js";
import { isSecretVariableName } from "../../util/secret-names.js";
import type { CommandContext } from "../cli-io.js";
import type { Paint } from "../terminal-style.js";
import { terminalText } from "../terminal-text.js";
import { confirmedConfigsFile, confirmedContent, rememberConfirmation, type ConfigConfirmation } from "./confirmed-configs.js";
import type { LoadedConfigFile, McpServerEntry, RunConfigFile } from "./run-config-file.js";
import { askInTerminal } from "./terminal-question.js";

/** The mode a run has when neither a flag nor a confirmed file sets one. */
export const defaultRunMode: ApprovalMode = "ask";

/** What a setting of the file is shown as when its value looks like a secret. */
const hiddenValue = "[hidden: looks like a secret]";

const modeEffects: Record<ApprovalMode, string> = {
  "read-only": "nothing is written or run",
  ask: "every write and command asks",
  "auto-edit": "file edits run without asking",
  "full-auto": "commands run without asking",
};

/**
 * SHA-256 of a config file's content in canonical JSON (RFC 8785: key order and number forms do
 * not matter, so reformatting the file does not ask again), `$schema` left out (it has no effect).
 * Every setting is in it, hidden `env` values included: any change asks again.
 *
 * @example
 * configDigest({ model: "m", budgets: { maxIterations: 5 } }) === configDigest({ budgets: { maxIterations: 5 }, model: "m" }); // true
 */
export function configDigest(config: RunConfigFile): string {
  const { $schema: _schema, ...settings } = config;
  return sha256(canonicalJson(settings));
}

/**
 * The file's settings as the person is shown them, one line each, in the file's order: a server's
 * command line as a shell would read it, what a mode or an endpoint means, every other field by
 * its dotted name — fields added to the schema later included. A value that looks like a secret is
 * hidden (it still counts in {@link configDigest}); every value has its terminal controls escaped.
 *
 * @example
 * configSettings({ mode: "full-auto", budgets: { maxIterations: 500 } });
 * // ["mode full-auto (commands run without asking)", "budgets.maxIterations 500"]
 */
export function configSettings(config: RunConfigFile): string[] {
  const lines: string[] = [];
  for (const [name, value] of Object.entries(config)) {
    if (name === "$schema" || value === undefined) continue;
    switch (name) {
      case "mode":
        lines.push(`mode ${value as ApprovalMode} (${modeEffects[value as ApprovalMode]})`);
        break;
      case "baseURL":
        lines.push(`baseURL ${shownValue(value)} (the conversation, with what the tools read, and the key are sent there)`);
        break;
      case "aiSdk":
        lines.push(`aiSdk ${shownValue(value)} (this package is loaded from the workspace's node_modules and runs inside turnlog, with the key)`);
        break;
      case "apiKeyEnv":
        lines.push(`apiKeyEnv ${shownValue(value)} (the value of $${shownValue(value)} is sent as the key)`);
        break;
      case "mcpServers":
        for (const server of value as McpServerEntry[]) lines.push(describeMcpServer(server));
        break;
      default:
        lines.push(...flatten(name, value));
    }
  }
  return lines.map(terminalText);
}

/**
 * One MCP server as it is shown: what it starts or connects to.
 *
 * @example
 * describeMcpServer({ name: "x", command: "sh", args: ["-c", "touch pwned"] }); // 'MCP server "x" starts: sh -c \'touch pwned\''
 */
export function describeMcpServer(server: McpServerEntry): string {
  if (server.url !== undefined) return `MCP server "${server.name}" connects to ${server.url}`;
  const environment = Object.entries(server.env ?? {}).map(([name, value]) => `${name}=${isSecretVariableName(name) || containsSecret(value) ? hiddenValue : quote([value])}`);
  return `MCP server "${server.name}" starts: ${quote([server.command ?? "", ...(server.args ?? [])])}${environment.length > 0 ? ` with ${environment.join(" ")}` : ""}`;
}

function flatten(name: string, value: unknown): string[] {
  if (value !== null && typeof value === "object" && !Array.isArray(value)) {
    return Object.entries(value).flatMap(([key, item]) => (item === undefined ? [] : flatten(`${name}.${key}`, item)));
  }
  return [`${name} ${shownValue(value)}`];
}

function shownValue(value: unknown): string {
  if (typeof value === "string") return containsSecret(value) ? hiddenValue : value;
  const json = JSON.stringify(value) ?? String(value);
  return containsSecret(json) ? hiddenValue : json;
}

/**
 * How the settings now differ from the ones confirmed before: `+` for a new or changed line, `-` for
 * one that is gone, and the unchanged ones indented; every line marked `+` when nothing was
 * confirmed before. When only a hidden value changed, a line says so.
 *
 * @example
 * settingsDifference(["budgets.maxIterations 20"], ["budgets.maxIterations 500"]);
 * // ["+ budgets.maxIterations 500", "- budgets.maxIterations 20"]
 */
export function settingsDifference(before: readonly string[] | undefined, now: readonly string[]): string[] {
  const previous = new Set(before ?? []);
  const current = new Set(now);
  const lines = [...now.map((line) => (previous.has(line) ? `  ${line}` : `+ ${line}`)), ...[...previous].filter((line) => !current.has(line)).map((line) => `- ${line}`)];
  if (before !== undefined && lines.every((line) => line.startsWith("  "))) lines.push(`! a value shown as ${hiddenValue} changed`);
  return lines;
}

/** What `confirmRunConfig` needs of the command it runs in. */
export interface ConfirmationContext {
  context: CommandContext;
  /** The workspace (the run's working directory). */
  workspace: string;
  /** `--trust-config`: the person confirms on the command line. */
  trust: boolean;
}

/**
 * Whether the person confirmed exactly this content of this file, for this workspace (an
 * authenticated entry of `confirmed-configs.json`, see `confirmedContent`).
 *
 * @example
 * if (await isConfigConfirmed(loaded, "/work/app", process.env)) useItsValues();
 */
export async function isConfigConfirmed(loaded: LoadedConfigFile, workspace: string, env: NodeJS.ProcessEnv): Promise<boolean> {
  let where: { workspace: string; file: string };
  try {
    where = { workspace: await realpath(workspace), file: await realpath(loaded.file) };
  } catch {
    // A workspace or file that is gone has no confirmation.
    return false;
  }
  return (await confirmedContent(env, where))?.digest === configDigest(loaded.config);
}

/**
 * The config a new run applies (docs/cli-run.md, "What the file may not do without you"): a config
 * file may have been written by the model — a command it ran, a repository it cloned — so none of
 * its settings applies until the person confirmed exactly this content. It applies when they
 * confirmed it before (an authenticated entry in their own config directory, bound to this user,
 * workspace and file), confirm it now with `--trust-config`, or answer yes at a terminal — each
 * confirmation remembered, so the next run does not ask until the file changes. Otherwise (no
 * terminal, declined, Ctrl-D) nothing of the file applies: `undefined`, and the run starts with the
 * defaults and the flags, and says so. A file that sets nothing needs no confirmation.
 *
 * @example
 * const applied = await confirmRunConfig(loaded, { context, workspace: process.cwd(), trust: false });
 */
export async function confirmRunConfig(loaded: LoadedConfigFile, options: ConfirmationContext): Promise<LoadedConfigFile | undefined> {
  const settings = configSettings(loaded.config);
  if (settings.length === 0) return loaded;
  const { io, print, paint } = options.context;
  const shown = terminalText(path.relative(options.workspace, loaded.file) || loaded.file);
  const where = { workspace: await realpath(options.workspace), file: await realpath(loaded.file) };
  const confirmation: ConfigConfirmation = { ...where, digest: configDigest(loaded.config), settings };
  const before = await confirmedContent(io.env, where);
  if (before?.digest === confirmation.digest) {
    print(paint("dim", `config ${shown}: applied as you confirmed it`));
    return loaded;
  }
  print(
    `${paint("warn", "!")} ${paint("bold", shown)} ${before === undefined ? "is not confirmed" : "changed since you confirmed it"}: its settings apply only once you confirm them ${paint("dim", "(a command or a cloned repository may have written it)")}`,
  );
  for (const line of settingsDifference(before?.settings, settings)) print(`    ${paintDifference(line, paint)}`);
  if (options.trust) {
    await rememberConfirmation(io.env, confirmation);
    print(paint("dim", `  confirmed with --trust-config; remembered in ${confirmedConfigsFile(io.env)} until the file changes`));
    print();
    return loaded;
  }
  if (io.stdin?.isTTY === true && io.stdout.isTTY === true) {
    const answer = await askYesNo(io.stdin, io.stdout as unknown as NodeJS.WritableStream, paint);
    if (answer === "yes") {
      await rememberConfirmation(io.env, confirmation);
      print(paint("dim", `  remembered in ${confirmedConfigsFile(io.env)} until the file changes`));
      print();
      return loaded;
    }
  }
  print(paint("warn", `  not applied: this run starts with the defaults and the flags you gave (mode ${defaultRunMode} unless --mode, no MCP server but --mcp, default budgets).`));
  print(paint("dim", `  If you wrote this file, confirm it: run again with --trust-config, or answer yes at a terminal.`));
  print();
  return undefined;
}

function paintDifference(line: string, paint: Paint): string {
  if (line.startsWith("+ ")) return paint("good", line);
  if (line.startsWith("- ")) return paint("bad", line);
  if (line.startsWith("! ")) return paint("warn", line);
  return paint("dim", line);
}

async function askYesNo(input: NodeJS.ReadableStream, output: NodeJS.WritableStream, paint: Paint): Promise<"yes" | "no"> {
  const prompt = `  ${paint("warn", "?")} apply this content? ${paint("bold", "[y]es")} ${paint("dim", "(and remember it)")} · ${paint("bold", "[n]o")} ${paint("dim", "(run with the defaults and flags)")} › `;
  for (;;) {
    const line = await askInTerminal(input, output, prompt);
    if (line === undefined) return "no";
    const answer = line.trim().toLowerCase();
    if (answer === "y" || answer === "yes") return "yes";
    if (answer === "n" || answer === "no") return "no";
  }
}
