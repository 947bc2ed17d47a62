import path from "node:path";
import type { Budgets } from "../../contracts/budgets.js";
import type { ApprovalMode } from "../../contracts/policy.js";
import { containsSecret } from "../../policy/secrets/secret-detector.js";
import { CliError, exitCodes } from "../../errors/cli-error.js";
import { defaultRunMode } from "./config-confirmation.js";
import { mcpServerName, parseMcpFlag, uniqueName } from "./mcp-flag.js";
import { defaultConfigFileName, environmentVariableName, readRunConfigFile, type LoadedConfigFile, type ProviderKind } from "./run-config-file.js";
import type { AiSdkRunRecord, RecordedMcpServer, RunRecord } from "./run-record.js";
import { checkAiSdkPackageName, knownAiSdkPackage } from "./ai-sdk-package.js";

/** The flags of `turnlog run` that configure it (each wins over `turnlog.config.json`). */
export interface RunFlags {
  provider?: ProviderKind;
  /** `--ai-sdk <package>`: an AI SDK provider package installed in the workspace, instead of `--provider`. */
  aiSdk?: string;
  baseUrl?: string;
  model?: string;
  apiKeyEnv?: string;
  mode?: ApprovalMode;
  /** Repeatable: each adds a stdio MCP server. */
  mcp?: string[];
  config?: string;
}

/** Everything a run needs, resolved from flags, the config file and the defaults. */
export interface RunSettings {
  /** What is recorded for later commands (no secret in it). */
  record: RunRecord;
  mode: ApprovalMode;
  budgets: Partial<Budgets>;
  historyMaxTokens?: number;
  /** The values of each MCP server's environment, by server name: used, never recorded. */
  mcpEnvironment: Map<string, Record<string, string>>;
}

/** What each provider kind talks to when no base URL is given, and where its key usually is. */
export const providerDefaults: Record<ProviderKind, { baseURL: string; apiKeyEnv: string; label: string }> = {
  openai: { baseURL: "https://api.openai.com/v1", apiKeyEnv: "OPENAI_API_KEY", label: "OpenAI" },
  anthropic: { baseURL: "https://api.anthropic.com", apiKeyEnv: "ANTHROPIC_API_KEY", label: "Anthropic" },
};

/**
 * The wall-clock budget of a `turnlog run` message: a day, not the library's five minutes. The
 * budget counts from the user message, and a turn left awaiting approval (`exit 3`) may be
 * answered with `turnlog approve` / `resume` much later; iterations and tool calls still bound a
 * model that loops.
 */
export const runWallClockMs = 24 * 60 * 60 * 1000;

/**
 * Resolves a new run's settings: flags over the config file as applied (`turnlog.config.json` or
 * `--config`, read with {@link loadRunConfig}; `undefined` unless the person confirmed its content:
 * `confirmRunConfig`, and then `unconfirmed` names it for the messages) over defaults. Every mistake
 * is a one-line {@link CliError} with exit 2 that names the flag or field.
 *
 * @example
 * const settings = resolveRunSettings({ baseUrl: "http://localhost:11434/v1", model: "qwen2.5-coder" }, undefined);
 */
export function resolveRunSettings(flags: RunFlags, loaded: LoadedConfigFile | undefined, options: { unconfirmed?: string } = {}): RunSettings {
  const file = loaded?.config ?? {};
  const fileName = loaded?.file ?? defaultConfigFileName;
  if (flags.provider !== undefined && flags.aiSdk !== undefined) {
    throw twoProviders();
  }
  if (file.provider !== undefined && file.aiSdk !== undefined) {
    throw new CliError(`${fileName}: "provider" and "aiSdk" name two providers — keep one`, { exitCode: exitCodes.usage });
  }
  // A flag that names a provider wins over the file's, of either kind.
  const aiSdk = flags.aiSdk ?? (flags.provider === undefined ? file.aiSdk : undefined);
  if (flags.aiSdk !== undefined) checkAiSdkPackageName(flags.aiSdk, "--ai-sdk");
  else if (aiSdk !== undefined) checkAiSdkPackageName(aiSdk, `${fileName}: aiSdk`);
  const provider = flags.provider ?? file.provider ?? "openai";
  const defaults = providerDefaults[provider];
  if (flags.baseUrl !== undefined) checkBaseUrl(flags.baseUrl, "--base-url");
  if (file.baseURL !== undefined) checkBaseUrl(file.baseURL, `${loaded?.file ?? defaultConfigFileName}: baseURL`);
  if (flags.apiKeyEnv !== undefined) checkEnvironmentName(flags.apiKeyEnv);
  const model = flags.model ?? file.model;
  if ((model === undefined || model.trim() === "") && options.unconfirmed !== undefined) {
    const file = path.relative(process.cwd(), options.unconfirmed) || options.unconfirmed;
    throw new CliError(`no model: ${file} is not confirmed, so none of its settings applies — pass --model, or confirm the file (--trust-config, or yes at a terminal)`, { exitCode: exitCodes.usage });
  }
  if (model === undefined || model.trim() === "") {
    const example = aiSdk !== undefined ? "gpt-5" : provider === "openai" ? "gpt-4.1-mini" : "claude-sonnet-4-5";
    throw new CliError(`no model: pass --model (e.g. --model ${example}) or set "model" in ${defaultConfigFileName}`, { exitCode: exitCodes.usage });
  }

  const mcpServers: RecordedMcpServer[] = [];
  const mcpEnvironment = new Map<string, Record<string, string>>();
  const taken = new Set<string>();
  for (const server of file.mcpServers ?? []) {
    taken.add(server.name);
    if (server.url !== undefined) {
      mcpServers.push({ name: server.name, url: server.url });
    } else {
      const env = server.env ?? {};
      mcpServers.push({ name: server.name, command: server.command ?? "", args: server.args ?? [], ...(Object.keys(env).length > 0 ? { env: Object.keys(env) } : {}) });
      if (Object.keys(env).length > 0) mcpEnvironment.set(server.name, { ...env });
    }
  }
  // Flags add to the file's servers: a server for one run should not mean retyping the others.
  for (const text of flags.mcp ?? []) {
    const command = parseMcpFlag(text);
    const name = uniqueName(mcpServerName(command), taken);
    taken.add(name);
    mcpServers.push({ name, command: command.command, args: command.args });
  }

  const configFile = loaded !== undefined ? { configFile: loaded.file } : {};
  return {
    record:
      aiSdk !== undefined
        ? { ...aiSdkRecord(aiSdk, model, flags.baseUrl ?? file.baseURL, flags.apiKeyEnv ?? file.apiKeyEnv), mcpServers, ...configFile }
        : {
            provider,
            baseURL: flags.baseUrl ?? file.baseURL ?? defaults.baseURL,
            model,
            apiKeyEnv: flags.apiKeyEnv ?? file.apiKeyEnv ?? defaults.apiKeyEnv,
            mcpServers,
            ...configFile,
          },
    mode: flags.mode ?? file.mode ?? defaultRunMode,
    budgets: { wallClockMs: runWallClockMs, ...file.budgets },
    ...(file.history?.maxTokens !== undefined ? { historyMaxTokens: file.history.maxTokens } : {}),
    mcpEnvironment,
  };
}

/**
 * The record a continued session (`turnlog run --session ID`) runs with: the recorded one, with
 * the provider flags given now over it. The mode and the MCP servers stay as recorded — the
 * session's policy and tool set are fixed in `session.started`, and replay judges every decision
 * against them — so a flag that would change them is refused; the config file is not read.
 *
 * @example
 * continuedRunRecord(recorded, { model: "gpt-4.1" }, "ask", "run-1");
 */
export function continuedRunRecord(recorded: RunRecord, flags: RunFlags, recordedMode: ApprovalMode, sessionId: string): RunRecord {
  if (flags.mode !== undefined && flags.mode !== recordedMode) {
    throw new CliError(`session "${sessionId}" runs in mode ${recordedMode}; a session keeps the policy it started with — leave out --mode, or start a new session`, { exitCode: exitCodes.usage });
  }
  if ((flags.mcp ?? []).length > 0) {
    throw new CliError(`session "${sessionId}" keeps the MCP servers it started with (its tool set is recorded) — leave out --mcp, or start a new session`, { exitCode: exitCodes.usage });
  }
  if (flags.baseUrl !== undefined) checkBaseUrl(flags.baseUrl, "--base-url");
  if (flags.apiKeyEnv !== undefined) checkEnvironmentName(flags.apiKeyEnv);
  if (flags.provider !== undefined && flags.aiSdk !== undefined) {
    throw twoProviders();
  }
  const { mcpServers } = recorded;
  const configFile = recorded.configFile !== undefined ? { configFile: recorded.configFile } : {};
  const aiSdk = flags.aiSdk ?? (flags.provider === undefined && "aiSdk" in recorded ? recorded.aiSdk : undefined);
  if (aiSdk !== undefined) {
    checkAiSdkPackageName(aiSdk, "--ai-sdk");
    // Another package without its own URL and key means that package's defaults, not the old server's.
    const same = "aiSdk" in recorded && recorded.aiSdk === aiSdk;
    const model = flags.model ?? recorded.model;
    return { ...aiSdkRecord(aiSdk, model, flags.baseUrl ?? (same ? recorded.baseURL : undefined), flags.apiKeyEnv ?? (same ? recorded.apiKeyEnv : undefined)), mcpServers, ...configFile };
  }
  const provider = flags.provider ?? ("provider" in recorded ? recorded.provider : "openai");
  // Another provider kind without its own URL and key means that provider's defaults, not the old server's.
  const same = "provider" in recorded && recorded.provider === provider;
  return {
    provider,
    baseURL: flags.baseUrl ?? (same ? recorded.baseURL : providerDefaults[provider].baseURL),
    model: flags.model ?? recorded.model,
    apiKeyEnv: flags.apiKeyEnv ?? (same ? recorded.apiKeyEnv : providerDefaults[provider].apiKeyEnv),
    mcpServers,
    ...configFile,
  };
}

function twoProviders(): CliError {
  return new CliError("--provider and --ai-sdk name two providers — give one: --provider for turnlog's own adapters, --ai-sdk for an AI SDK provider package", { exitCode: exitCodes.usage });
}

/**
 * The provider half of an `--ai-sdk` run's record: the key variable given, else the one turnlog
 * knows the package reads (none for a package it does not know: the key is then left to it).
 */
function aiSdkRecord(aiSdk: string, model: string, baseURL: string | undefined, apiKeyEnv: string | undefined): Omit<AiSdkRunRecord, "mcpServers"> {
  const keyVariable = apiKeyEnv ?? knownAiSdkPackage(aiSdk)?.apiKeyEnv;
  return { aiSdk, model, ...(baseURL !== undefined ? { baseURL } : {}), ...(keyVariable !== undefined ? { apiKeyEnv: keyVariable } : {}) };
}

/**
 * Refuses to go on without the key a hosted API needs: one line naming the variable (never its
 * value). A server on this machine (Ollama, llama.cpp, LM Studio) usually needs none.
 *
 * @example
 * requireApiKey(record, process.env); // throws 'OPENAI_API_KEY is not set — …' for api.openai.com
 */
export function requireApiKey(record: RunRecord, env: NodeJS.ProcessEnv): void {
  // A package turnlog knows no variable of reads its key itself, or needs none.
  if (record.apiKeyEnv === undefined) return;
  const value = env[record.apiKeyEnv];
  if ((value !== undefined && value !== "") || (record.baseURL !== undefined && isLocalUrl(record.baseURL))) return;
  const label = "aiSdk" in record ? `${record.aiSdk} ` : record.baseURL === providerDefaults[record.provider].baseURL ? `${providerDefaults[record.provider].label} ` : "";
  throw new CliError(`${record.apiKeyEnv} is not set — export your ${label}API key in it, or name another variable with --api-key-env (a server on localhost needs none)`, { exitCode: exitCodes.usage });
}

/**
 * Whether a URL points at this machine, where model servers usually take no key.
 *
 * @example
 * isLocalUrl("http://localhost:11434/v1"); // true
 */
export function isLocalUrl(url: string): boolean {
  let hostname: string;
  try {
    hostname = new URL(url).hostname;
  } catch {
    return false;
  }
  return hostname === "localhost" || hostname.endsWith(".localhost") || hostname === "[::1]" || hostname === "0.0.0.0" || /^127(\.\d{1,3}){3}$/.test(hostname);
}

/**
 * An http(s) URL without anything secret in it: it is recorded, and shown in the run's header.
 * The messages do not repeat the URL, which may hold the very credential they refuse.
 */
function checkBaseUrl(value: string, label: string): void {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new CliError(`${label}: not a URL`, { exitCode: exitCodes.usage });
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") throw new CliError(`${label}: expected an http or https URL`, { exitCode: exitCodes.usage });
  if (url.username !== "" || url.password !== "" || containsSecret(value)) {
    throw new CliError(`${label}: the URL carries a credential, and it would be recorded — put the key in an environment variable and name it with --api-key-env`, { exitCode: exitCodes.usage });
  }
}

function checkEnvironmentName(name: string): void {
  // The message does not repeat the value: it may be a key pasted in the wrong place.
  if (!environmentVariableName.test(name)) {
    throw new CliError("--api-key-env takes the NAME of an environment variable (upper-case letters, digits, underscores), not the key itself", { exitCode: exitCodes.usage });
  }
}

/**
 * Reads the config file of a new run: `--config`, else `turnlog.config.json` in `cwd` if there is one.
 *
 * @example
 * const loaded = await loadRunConfig({}, process.cwd()); // undefined when there is none
 */
export async function loadRunConfig(flags: RunFlags, cwd: string): Promise<LoadedConfigFile | undefined> {
  if (flags.config !== undefined) return readRunConfigFile(flags.config, { explicit: true });
  // Named relative to the working directory in messages, as the user would type it.
  const file = path.relative(process.cwd(), path.join(cwd, defaultConfigFileName)) || defaultConfigFileName;
  return readRunConfigFile(file, { explicit: false });
}
