import { realpath } from "node:fs/promises";
import path from "node:path";
import { quote } from "shell-quote";
import type { ApprovalMode } from "../../contracts/policy.js";
import { containsSecret } from "../../policy/secrets/secret-detector.js";
import { canonicalJson, sha256 } from "../../util/digest.js";
import { isSecretVariableName } from "../../util/secret-names.js";
import type { CommandContext } from "../cli-io.js";
import type { Paint } from "../terminal-style.js";
import { confirmedConfigsFile, isConfirmed, rememberConfirmation, type ConfigConfirmation } from "./confirmed-configs.js";
import type { LoadedConfigFile, McpServerEntry, RunConfigFile } from "./run-config-file.js";
import type { RunFlags } from "./run-settings.js";
import { askInTerminal } from "./terminal-question.js";

/**
 * What a workspace config asks for that only the person may allow (DESIGN.md §8.3): a file in the
 * workspace may have been written by the model (a command it ran, or a repository it cloned), so
 * nothing in it may raise the model's permissions, start a program, or send the conversation and
 * the key elsewhere unless the person confirmed it.
 */
export type ConfigEscalation =
  | { kind: "mode"; mode: ApprovalMode; instead: ApprovalMode }
  | { kind: "mcp-server"; server: McpServerEntry }
  | { kind: "base-url"; url: string }
  | { kind: "api-key-env"; name: string };

/** The approval modes from the least to the most the model may do unasked. */
const modeRank: Record<ApprovalMode, number> = { "read-only": 0, ask: 1, "auto-edit": 2, "full-auto": 3 };

/** The mode a run has when neither a flag nor the file sets one. */
export const defaultRunMode: ApprovalMode = "ask";

/**
 * The parts of a config file that need the person's confirmation, given the flags (a flag wins over
 * the file, so what it sets is not the file's to raise):
 * - a `mode` above the default (`ask`) when no `--mode` is given — a lower or equal one is not;
 * - every MCP server: it starts a program, or connects to a server, at start-up;
 * - `baseURL` and `apiKeyEnv` when the flags do not set them: the conversation (files read
 *   included) and the key go where they say; a planted `baseURL` would hand the key to whoever
 *   listens there, though the model's own shell never gets it.
 * The model name, the provider kind, budgets and history settings are not escalations.
 *
 * @example
 * configEscalations({ model: "m", mode: "full-auto" }, {}); // [{ kind: "mode", mode: "full-auto", instead: "ask" }]
 * configEscalations({ model: "m", mode: "full-auto" }, { mode: "ask" }); // []
 */
export function configEscalations(config: RunConfigFile, flags: RunFlags): ConfigEscalation[] {
  const escalations: ConfigEscalation[] = [];
  if (flags.mode === undefined && config.mode !== undefined && modeRank[config.mode] > modeRank[defaultRunMode]) {
    escalations.push({ kind: "mode", mode: config.mode, instead: defaultRunMode });
  }
  for (const server of config.mcpServers ?? []) escalations.push({ kind: "mcp-server", server });
  if (flags.baseUrl === undefined && config.baseURL !== undefined) escalations.push({ kind: "base-url", url: config.baseURL });
  if (flags.apiKeyEnv === undefined && config.apiKeyEnv !== undefined) escalations.push({ kind: "api-key-env", name: config.apiKeyEnv });
  return escalations;
}

/**
 * The config without its escalations: what a run applies when the person did not confirm them.
 *
 * @example
 * withoutEscalations({ model: "m", mode: "full-auto", mcpServers: [x] }); // { model: "m" }
 */
export function withoutEscalations(config: RunConfigFile, escalations: readonly ConfigEscalation[]): RunConfigFile {
  const kinds = new Set(escalations.map((escalation) => escalation.kind));
  const { mode, mcpServers, baseURL, apiKeyEnv, ...rest } = config;
  return {
    ...rest,
    ...(mode !== undefined && !kinds.has("mode") ? { mode } : {}),
    ...(mcpServers !== undefined && !kinds.has("mcp-server") ? { mcpServers } : {}),
    ...(baseURL !== undefined && !kinds.has("base-url") ? { baseURL } : {}),
    ...(apiKeyEnv !== undefined && !kinds.has("api-key-env") ? { apiKeyEnv } : {}),
  };
}

/**
 * SHA-256 of exactly what is confirmed: the escalations, in canonical JSON, MCP servers' `env`
 * values included (a changed value asks again even though it is not shown when it looks secret).
 */
export function escalationDigest(escalations: readonly ConfigEscalation[]): string {
  return sha256(canonicalJson(escalations));
}

/**
 * One line per escalation, as the person is shown them.
 *
 * @example
 * describeEscalation({ kind: "mcp-server", server: { name: "x", command: "sh", args: ["-c", "touch pwned"] } });
 * // 'MCP server "x" starts: sh -c \'touch pwned\''
 */
export function describeEscalation(escalation: ConfigEscalation): string {
  switch (escalation.kind) {
    case "mode":
      return `mode ${escalation.mode} instead of ${escalation.instead}${escalation.mode === "full-auto" ? " (commands run without asking)" : " (file edits run without asking)"}`;
    case "base-url":
      return `the model's endpoint ${escalation.url} (the conversation, with what the tools read, and the key are sent there)`;
    case "api-key-env":
      return `the key is read from $${escalation.name} and sent to the endpoint`;
    case "mcp-server": {
      const { server } = escalation;
      if (server.url !== undefined) return `MCP server "${server.name}" connects to ${server.url}`;
      const environment = Object.entries(server.env ?? {}).map(([name, value]) => `${name}=${isSecretVariableName(name) || containsSecret(value) ? "[hidden: looks like a secret]" : quote([value])}`);
      return `MCP server "${server.name}" starts: ${quote([server.command ?? "", ...(server.args ?? [])])}${environment.length > 0 ? ` with ${environment.join(" ")}` : ""}`;
    }
  }
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
 * The config a new run applies. Without escalations it is the file as read. With them, it is the
 * file as read when the person confirmed exactly these before (`confirmed-configs.json` in their
 * own config directory), confirms them now with `--trust-config`, or answers yes at the terminal —
 * each confirmation remembered, so the next run does not ask until they change. Otherwise (piped,
 * declined, Ctrl-D) the run goes on without the escalations and says what it left out and how to
 * confirm it.
 *
 * @example
 * const applied = await confirmRunConfig(loaded, flags, { context, workspace: process.cwd(), trust: false });
 */
export async function confirmRunConfig(loaded: LoadedConfigFile, flags: RunFlags, options: ConfirmationContext): Promise<LoadedConfigFile> {
  const escalations = configEscalations(loaded.config, flags);
  if (escalations.length === 0) return loaded;
  const { io, print, paint } = options.context;
  const confirmation: ConfigConfirmation = {
    workspace: await realpath(options.workspace),
    file: await realpath(loaded.file),
    digest: escalationDigest(escalations),
  };
  if (await isConfirmed(io.env, confirmation)) return loaded;
  const shown = path.relative(options.workspace, loaded.file) || loaded.file;
  const lines = [`${paint("warn", "!")} ${paint("bold", shown)} asks for what only you can allow:`, ...escalations.map((escalation) => `    ${describeEscalation(escalation)}`)];
  if (options.trust) {
    await rememberConfirmation(io.env, confirmation);
    for (const line of lines) print(line);
    print(paint("dim", `  confirmed with --trust-config; remembered in ${confirmedConfigsFile(io.env)} until the file asks for something else`));
    print();
    return loaded;
  }
  for (const line of lines) print(line);
  if (io.stdin?.isTTY === true && io.stdout.isTTY === true) {
    const answer = await askYesNo(io.stdin, io.stdout as unknown as NodeJS.WritableStream, paint);
    if (answer === "yes") {
      await rememberConfirmation(io.env, confirmation);
      print(paint("dim", `  remembered in ${confirmedConfigsFile(io.env)} until the file asks for something else`));
      print();
      return loaded;
    }
  }
  print(paint("warn", `  not applied: this run goes on without them (${notAppliedSummary(escalations)}).`));
  print(paint("dim", `  If you wrote this file, confirm it: run again with --trust-config, or answer yes at a terminal.`));
  print();
  return { ...loaded, config: withoutEscalations(loaded.config, escalations) };
}

function notAppliedSummary(escalations: readonly ConfigEscalation[]): string {
  const parts: string[] = [];
  if (escalations.some((escalation) => escalation.kind === "mode")) parts.push(`mode ${defaultRunMode}`);
  if (escalations.some((escalation) => escalation.kind === "mcp-server")) parts.push("no MCP server from the file");
  if (escalations.some((escalation) => escalation.kind === "base-url")) parts.push("the provider's own endpoint");
  if (escalations.some((escalation) => escalation.kind === "api-key-env")) parts.push("the provider's usual key variable");
  return parts.join(", ");
}

async function askYesNo(input: NodeJS.ReadableStream, output: NodeJS.WritableStream, paint: Paint): Promise<"yes" | "no"> {
  const prompt = `  ${paint("warn", "?")} apply them? ${paint("bold", "[y]es")} ${paint("dim", "(and remember this content)")} · ${paint("bold", "[n]o")} ${paint("dim", "(run without them)")} › `;
  for (;;) {
    const line = await askInTerminal(input, output, prompt);
    if (line === undefined) return "no";
    const answer = line.trim().toLowerCase();
    if (answer === "y" || answer === "yes") return "yes";
    if (answer === "n" || answer === "no") return "no";
  }
}
