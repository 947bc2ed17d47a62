import { homedir } from "node:os";
import path from "node:path";
import type { Budgets } from "../../contracts/budgets.js";
import { isPostgresUrl } from "../../log/postgres/connection-string.js";
import { KnownSecrets } from "../../policy/secrets/secret-patterns.js";
import { createSecretRedactor } from "../../policy/secrets/secret-detector.js";
import { isSecretVariableName } from "../../util/secret-names.js";
import type { ApprovalMode } from "../../contracts/policy.js";
import type { ToolSnapshot } from "../../contracts/tools.js";
import type { EventLog } from "../../log/event-log.js";
import type { SealOptions } from "../../log/seal/stream-sealer.js";
import { DirectoryWitness } from "../../log/seal/directory-witness.js";
import { formatOfRunKind } from "../../providers/formats.js";
import type { Provider } from "../../providers/provider.js";
import { createRuntime, type Runtime } from "../../runtime/create-runtime.js";
import { logDirectoryOf } from "../../runtime/tool-plan-runner.js";
import type { DiscardedAttempt } from "../../runtime/provider-turn-loop.js";
import { sealKeyDirectory, turnlogStateDirectory } from "../../util/state-directories.js";
import type { ToolDefinition } from "../../tools/define-tool.js";
import { connectMcpServers, type McpServerConfig } from "../../tools/mcp/mcp-tools.js";
import { ToolRegistry, type ToolProvider } from "../../tools/tool-registry.js";
import { bubblewrapSandbox, type CommandSandbox } from "../../tools/workspace/command-sandbox.js";
import { withoutSecretVariables, workspaceTools } from "../../tools/workspace/workspace-tools.js";
import { CliError, exitCodes } from "../../errors/cli-error.js";
import { isConfigConfirmed } from "./config-confirmation.js";
import { readRunConfigFile } from "./run-config-file.js";
import type { RunRecord } from "./run-record.js";
import { loadAiSdkProvider } from "./ai-sdk-package.js";
import { aiSdkPackageFolders } from "./ai-sdk-package-folders.js";

/**
 * The provider a run record names. turnlog's adapters read the key from the environment at each
 * request (never stored); an AI SDK provider package is loaded from the workspace `root`, where the
 * user installed it (ai-sdk-package.ts). A bad option is the user's mistake here, so one line, exit 2.
 *
 * @example
 * await runProvider({ provider: "openai", baseURL: "http://localhost:11434/v1", model: "qwen2.5-coder", apiKeyEnv: "OPENAI_API_KEY", mcpServers: [] }, "/work/app", process.env);
 */
export async function runProvider(record: RunRecord, root: string, env: NodeJS.ProcessEnv): Promise<Provider> {
  if ("aiSdk" in record) return loadAiSdkProvider(record, root, env);
  const options = { model: record.model, baseURL: record.baseURL, apiKeyEnv: record.apiKeyEnv, env };
  // The record's kind is checked when it is read, so every kind has its format's SDK adapter.
  const sdk = formatOfRunKind(record.provider)?.sdk;
  if (sdk === undefined) throw new CliError(`--provider ${record.provider}: no provider format has an SDK adapter for it`, { exitCode: exitCodes.usage });
  try {
    return sdk.create(options);
  } catch (error) {
    if (error instanceof TypeError) throw new CliError(error.message, { exitCode: exitCodes.usage, cause: error });
    throw error;
  }
}

/**
 * The values of the recorded MCP servers' environment variables, by server name. The record keeps
 * only the names; the values are read again from the config file the run used, when it still
 * sets them and the person confirmed its content as it is now for this workspace (a file changed
 * since — by a command the model ran — must not hand a server `NODE_OPTIONS` of its choosing), else
 * from this process's environment.
 *
 * @example
 * await mcpEnvironmentFor(record, "/work/app", process.env); // Map { "github" => { GITHUB_TOKEN: "…" } }
 */
export async function mcpEnvironmentFor(record: RunRecord, workspace: string, env: NodeJS.ProcessEnv): Promise<Map<string, Record<string, string>>> {
  const environment = new Map<string, Record<string, string>>();
  const wanted = record.mcpServers.filter((server) => "command" in server && (server.env ?? []).length > 0);
  if (wanted.length === 0) return environment;
  const read = record.configFile === undefined ? undefined : await readRunConfigFile(record.configFile, { explicit: false }).catch(() => undefined);
  const file = read !== undefined && (await isConfigConfirmed(read, workspace, env)) ? read : undefined;
  for (const server of wanted) {
    if (!("command" in server)) continue;
    const fromFile = file?.config.mcpServers?.find((candidate) => candidate.name === server.name)?.env ?? {};
    const values: Record<string, string> = {};
    for (const name of server.env ?? []) {
      const value = Object.hasOwn(fromFile, name) ? fromFile[name] : env[name];
      if (value !== undefined) values[name] = value;
    }
    environment.set(server.name, values);
  }
  return environment;
}

/**
 * The recorded MCP servers as `createRuntime` takes them. A stdio server starts in the workspace
 * root, so that a relative path in its arguments (`server-filesystem .`) means the same directory
 * whichever directory a later `resume` or `replay` runs from.
 *
 * @example
 * liveMcpServers(record, "/work/app", new Map()); // [{ name: "files", command: "npx", args: [...], cwd: "/work/app" }]
 */
export function liveMcpServers(record: RunRecord, root: string, environment: ReadonlyMap<string, Record<string, string>>): McpServerConfig[] {
  return record.mcpServers.map((server) =>
    "url" in server
      ? { name: server.name, url: server.url }
      : { name: server.name, command: server.command, args: server.args, cwd: root, ...(environment.has(server.name) ? { env: environment.get(server.name) ?? {} } : {}) },
  );
}

/**
 * The system text of a run session, recorded in `session.started` (so a continued session and
 * its replay build the same requests).
 *
 * @example
 * runSystemText("/work/app"); // "You are a coding agent working in the directory /work/app. …"
 */
export function runSystemText(root: string): string {
  return [
    `You are a coding agent working in the directory ${root}.`,
    "Use the tools to read, search and change files there and to run commands; paths are relative to that directory.",
    "Some calls wait for the user's approval; a denied call did not run. When you are done, answer briefly.",
  ].join(" ");
}

/** What a run runtime is made from. */
export interface RunRuntimeOptions {
  log: EventLog;
  record: RunRecord;
  /** The workspace root (trusted): the tools' root and the policy's. */
  root: string;
  mcpEnvironment: ReadonlyMap<string, Record<string, string>>;
  /**
   * The command's environment (`CliIo.env`): where the provider's key, the seal key and state
   * directories and the tools' command environment are read from — never `process.env` directly,
   * so an embedder's `runCli(args, { env })` is honoured.
   */
  env: NodeJS.ProcessEnv;
  /** For a new session; an existing one keeps its recorded policy, budgets and history settings. */
  mode?: ApprovalMode;
  budgets?: Partial<Budgets>;
  historyMaxTokens?: number;
  onDelta?: (text: string) => void;
  /** Told when an attempt whose text was streamed failed and was thrown away. */
  onAttemptDiscarded?: (attempt: DiscardedAttempt) => void;
  /**
   * The tools a continued session recorded: it keeps running its commands the way it started,
   * contained or not. Absent for a new session, which is contained when this machine can.
   */
  recordedTools?: readonly ToolSnapshot[];
  /** The key and witness the session is sealed with (the CLI passes the user's). */
  seals?: SealOptions;
}

/** A run runtime and the tool set it registered. */
export interface RunRuntime {
  runtime: Runtime;
  /** What `session.started` records of these tools (or would, for a new session). */
  toolSet: ToolSnapshot[];
  /** Why `run_command` runs uncontained, when it does (no bubblewrap here, or a session that started so). */
  uncontained?: string;
  /** What the sandbox cannot bound on this machine (`CommandSandbox.caveats()`), for the header. */
  sandboxCaveats?: readonly string[];
  /** Redacts text as the runtime redacts what it logs, the run's key included: for what the CLI shows live. */
  redact: (text: string) => string;
}

/**
 * The runtime `turnlog run` (and `approve`, `deny`, `resume` for a run session) works with: the
 * record's provider, the built-in workspace tools over `root`, and the record's MCP servers.
 *
 * @example
 * const { runtime, toolSet } = await createRunRuntime({ log, record, root: process.cwd(), mcpEnvironment: new Map(), env: process.env, mode: "ask" });
 */
export async function createRunRuntime(options: RunRuntimeOptions): Promise<RunRuntime> {
  const { record, root, env } = options;
  // Commands run in bubblewrap where it works (docs/security.md#the-command-sandbox-bubblewrap); the log is out of its reach.
  // Hidden from it: the log, the seal key and witnesses, and every run log (wherever XDG puts them).
  // A PostgreSQL log has no directory to hide: its password files are hidden instead, and
  // commandEnvironment keeps the URL and PG* variables out of every command's environment.
  // A witness directory given with --witness too (docs/security.md, "Where the witness is kept").
  const witnessDirectory = options.seals?.witness instanceof DirectoryWitness ? [options.seals.witness.file] : [];
  const sandbox = runSandbox(options.recordedTools, [...logDirectoryOf(options.log), sealKeyDirectory(env), turnlogStateDirectory(env), ...witnessDirectory, ...postgresPasswordFiles(env)], homeOf(env));
  // The key's value is redacted wherever it appears — a model echoing it, a tool printing it —
  // whatever variable holds it; so are the MCP servers' secret-named variables.
  const secrets = runSecrets(record, env, options.mcpEnvironment);
  const redactor = createSecretRedactor({ secrets });
  let registered: readonly ToolDefinition[] = [];
  // Adds nothing: it only sees every tool registered before the last phase, MCP tools included.
  const witness: ToolProvider = {
    name: "turnlog-run",
    phase: "post-tool-executor",
    register: ({ registered: list }) => {
      registered = list();
    },
  };
  const runtime = await createRuntime({
    log: options.log,
    provider: await runProvider(record, root, env),
    // The log's own directory is often inside the workspace (./.turnlog): never a write target.
    // The model's shell never holds the provider's key, whatever its variable is called
    // (`--api-key-env LLM_AUTH` is not a secret-looking name).
    // The files that would let a model raise its own permissions or run code on the person's next
    // step — the run's config (mode, MCP servers), git's hooks and config — are written only in a
    // call a person approved (the gate asks for them from decisions version 5; docs/security.md).
    // So is the code of an --ai-sdk package and of what it loads: it runs in this process, with
    // the key, on the next run or resume (docs/cli-run.md, "What a model cannot change of the package").
    tools: workspaceTools({
      root,
      protectedPaths: logDirectoryOf(options.log),
      approvalPaths: runApprovalPaths(record, root),
      env: commandEnvironment(env, record.apiKeyEnv),
      ...(sandbox.sandbox !== undefined ? { sandbox: sandbox.sandbox } : {}),
    }),
    toolProviders: [witness],
    mcpServers: liveMcpServers(record, root, options.mcpEnvironment),
    policy: { approvalMode: options.mode ?? "ask", workspace: { root, trusted: true } },
    ...(options.budgets !== undefined ? { budgets: options.budgets } : {}),
    history: { system: runSystemText(root), ...(options.historyMaxTokens !== undefined ? { maxTokens: options.historyMaxTokens } : {}) },
    ...(options.onDelta !== undefined ? { onDelta: options.onDelta } : {}),
    ...(options.onAttemptDiscarded !== undefined ? { onAttemptDiscarded: options.onAttemptDiscarded } : {}),
    ...(options.seals !== undefined ? { seals: options.seals } : {}),
    secrets,
  });
  return {
    runtime,
    toolSet: new ToolRegistry(registered).snapshot(),
    ...(sandbox.uncontained !== undefined ? { uncontained: sandbox.uncontained } : {}),
    ...(sandbox.sandbox !== undefined && sandbox.sandbox.caveats().length > 0 ? { sandboxCaveats: sandbox.sandbox.caveats() } : {}),
    redact: (text) => redactor.redactText(text).text,
  };
}

/**
 * The command sandbox of a run: bubblewrap when this machine can run it, with the log's directory
 * hidden besides the credential stores; none (every command but a known-safe read then asks, from
 * decisions version 4) when it cannot. A continued session keeps what it recorded.
 */
function runSandbox(recordedTools: readonly ToolSnapshot[] | undefined, hide: readonly string[], home?: string): { sandbox?: CommandSandbox; uncontained?: string } {
  const sandbox = bubblewrapSandbox({ hide, ...(home !== undefined ? { home } : {}) });
  if (recordedTools !== undefined) {
    const contained = recordedTools.find((tool) => tool.name === "run_command")?.flags.contained === true;
    return contained ? { sandbox } : { uncontained: "the session started without the command sandbox" };
  }
  const usable = sandbox.available();
  return usable.ok ? { sandbox } : { uncontained: usable.reason };
}

/**
 * The values a run registers as known secrets (`createRuntime({ secrets })`): the provider's key,
 * read from the recorded variable, and the values of the MCP servers' secret-named variables
 * (`GITHUB_TOKEN`). Values shorter than 8 characters are left out: they are no real keys (a local
 * server's `ollama` or `none`), and redacting them would shred ordinary text. An unset key
 * variable registers nothing (the placeholder the adapters send then is no secret).
 *
 * @example
 * runSecrets(record, { LLM_AUTH: "sk-…" }, new Map()); // ["sk-…"]
 */
export function runSecrets(record: RunRecord, env: Readonly<Record<string, string | undefined>>, mcpEnvironment: ReadonlyMap<string, Record<string, string>>): string[] {
  const values = new Set<string>();
  const key = record.apiKeyEnv !== undefined ? env[record.apiKeyEnv] : undefined;
  if (key !== undefined) values.add(key.trim());
  for (const variables of mcpEnvironment.values()) {
    for (const [name, value] of Object.entries(variables)) if (isSecretVariableName(name)) values.add(value.trim());
  }
  return [...values].filter((value) => value.length >= KnownSecrets.minimumLength);
}

/**
 * `run_command`'s environment in a run: this process's, without secret-named variables, without
 * the one holding the provider's key, and without the way to the log's database — libpq's `PG*`
 * variables (`PGPASSWORD`, `PGPASSFILE`, `PGHOST`, …), `TURNLOG_LOG` and `TURNLOG_SCHEMA`, and any
 * variable holding a `postgres://` URL (`DATABASE_URL`). (Inside the bubblewrap sandbox the
 * environment is an allowlist anyway; this matters when commands run uncontained.)
 *
 * @example
 * commandEnvironment({ PATH: "/usr/bin", LLM_AUTH: "sk-…", GH_TOKEN: "…", PGPASSWORD: "…" }, "LLM_AUTH"); // { PATH: "/usr/bin" }
 */
export function commandEnvironment(env: Readonly<Record<string, string | undefined>>, apiKeyEnv: string | undefined): Record<string, string | undefined> {
  const rest = withoutSecretVariables(env);
  if (apiKeyEnv !== undefined) delete rest[apiKeyEnv];
  return Object.fromEntries(Object.entries(rest).filter(([name, value]) => !leadsToTheLogDatabase(name, value)));
}

function leadsToTheLogDatabase(name: string, value: string | undefined): boolean {
  return name.startsWith("PG") || name === "TURNLOG_LOG" || name === "TURNLOG_SCHEMA" || (value !== undefined && isPostgresUrl(value.trim()));
}

/**
 * libpq's password files, hidden from the command sandbox besides the other credential stores:
 * `~/.pgpass` and `$PGPASSFILE`.
 */
function postgresPasswordFiles(env: NodeJS.ProcessEnv): string[] {
  const home = homeOf(env);
  const files = [path.join(home, ".pgpass")];
  if (env.PGPASSFILE !== undefined && env.PGPASSFILE !== "") files.push(path.resolve(env.PGPASSFILE));
  return files;
}

/** The home directory of the command's environment: its `HOME` when absolute, else this user's. */
function homeOf(env: NodeJS.ProcessEnv): string {
  return env.HOME !== undefined && path.isAbsolute(env.HOME) ? env.HOME : homedir();
}

/**
 * The tool registry a run session is replayed with: the workspace tools over the recorded root
 * and the recorded MCP servers, connected again and registered in the same order and phases as
 * `createRuntime` does. The caller closes the servers.
 *
 * @example
 * const { registry, close } = await runReplayRegistry(record, root, process.env);
 */
export async function runReplayRegistry(
  record: RunRecord,
  root: string,
  env: NodeJS.ProcessEnv,
  recordedTools: readonly ToolSnapshot[] = [],
): Promise<{ registry: ToolRegistry; close(): Promise<void> }> {
  const servers = await connectMcpServers(liveMcpServers(record, root, await mcpEnvironmentFor(record, root, env)));
  const close = async () => {
    await Promise.all(servers.map((server) => server.close()));
  };
  try {
    // Replay never runs a command: the sandbox only has to be declared as the session recorded it.
    const { sandbox } = runSandbox(recordedTools, []);
    const tools = workspaceTools({ root, ...(sandbox !== undefined ? { sandbox } : {}) });
    const registry = await ToolRegistry.build({ mcp: servers.map((server) => ({ source: server.name, tools: server.tools })), tools });
    return { registry, close };
  } catch (error) {
    await close();
    throw error;
  }
}

/**
 * How the tools in force now differ from the ones a session recorded — by name, input schema,
 * risk class and flags — one phrase each; empty when they match. The decisions of a session are
 * judged against its recorded tools, so a changed tool (an upgraded MCP server) must not be
 * mistaken for the one the session started with.
 *
 * @example
 * toolSetDifferences(recorded, live); // ["mcp__everything__echo: its input schema changed", "mcp__everything__zip: new"]
 */
export function toolSetDifferences(recorded: readonly ToolSnapshot[], live: readonly ToolSnapshot[]): string[] {
  const now = new Map(live.map((tool) => [tool.name, tool]));
  const differences: string[] = [];
  for (const tool of recorded) {
    const current = now.get(tool.name);
    now.delete(tool.name);
    if (current === undefined) differences.push(`${tool.name}: gone`);
    else if (current.schemaDigest !== tool.schemaDigest) differences.push(`${tool.name}: its input schema changed`);
    else if (current.riskClass !== tool.riskClass) differences.push(`${tool.name}: its risk class changed (${tool.riskClass} → ${current.riskClass})`);
    else if ((current.flags.contained ?? false) !== (tool.flags.contained ?? false)) {
      differences.push(`${tool.name}: ${tool.flags.contained === true ? "it ran in the command sandbox, which is not available now" : "it runs in the command sandbox now, and did not"}`);
    } else if (!sameFlags(current.flags, tool.flags)) differences.push(`${tool.name}: its flags changed`);
  }
  for (const name of now.keys()) differences.push(`${name}: new`);
  return differences;
}

function sameFlags(a: ToolSnapshot["flags"], b: ToolSnapshot["flags"]): boolean {
  return a.serial === b.serial && a.idempotent === b.idempotent && a.command === b.command && (a.paths ?? false) === (b.paths ?? false);
}

/**
 * The approval paths of a run (`workspaceTools({ approvalPaths })`): the self-escalation paths,
 * and for an `--ai-sdk` run the folders inside the workspace of the provider package and of every
 * package it loads, with the places Node would look for them first (`aiSdkPackageFolders`). They
 * change no decision of the gate: the file tools refuse them unapproved, and the sandbox mounts
 * them read-only (removes what a command makes at a missing one, puts a changed symlink back).
 *
 * @example
 * runApprovalPaths({ aiSdk: "@ai-sdk/openai", model: "gpt-5", mcpServers: [] }, "/work/app");
 * // ["turnlog.config.json", ".git/hooks", ".git/config", "node_modules/@ai-sdk/openai", …]
 */
export function runApprovalPaths(record: RunRecord, root: string): string[] {
  return [...selfEscalationPaths, ...("aiSdk" in record ? aiSdkPackageFolders(record.aiSdk, root) : [])];
}

/**
 * Workspace files the file tools write only in a call a person approved, and the sandbox mounts
 * read-only (relative to the workspace root): `workspaceTools({ approvalPaths })`.
 */
export const selfEscalationPaths: readonly string[] = ["turnlog.config.json", ".git/hooks", ".git/config"];

