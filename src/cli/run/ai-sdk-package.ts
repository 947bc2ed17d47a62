import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { resolve as resolveImport } from "import-meta-resolve";
import { CliError, exitCodes } from "../../errors/cli-error.js";
import { modelPackageFormat } from "../../providers/formats.js";
import type { Provider } from "../../providers/provider.js";
import type { AiSdkRunRecord } from "./run-record.js";

/** What turnlog knows of an AI SDK provider package: where its key usually is, and its factory. */
export interface KnownAiSdkPackage {
  /** The variable the package reads its key from by itself. */
  apiKeyEnv: string;
  /** The `create…` export that takes `{ baseURL, apiKey }`. */
  factory: string;
  /**
   * Provider options sent with every request. `@ai-sdk/openai`'s `openai(id)` is the Responses API
   * (3.x), which keeps the conversation at OpenAI unless told otherwise (`store: true`), and then
   * sends reasoning back as references to what it kept; turnlog keeps the history in its log, so
   * the reasoning must travel in each request instead (`store: false`, and the package then asks
   * for `reasoning.encrypted_content` itself).
   */
  providerOptions?: Record<string, Record<string, unknown>>;
}

/**
 * The provider packages whose key variable turnlog knows (docs/cli-run.md, "An AI SDK provider
 * package"). Any other package works too; its key is then left to the package unless
 * `--api-key-env` names the variable.
 */
export const knownAiSdkPackages: Readonly<Record<string, KnownAiSdkPackage>> = {
  "@ai-sdk/openai": { apiKeyEnv: "OPENAI_API_KEY", factory: "createOpenAI", providerOptions: { openai: { store: false } } },
  "@ai-sdk/anthropic": { apiKeyEnv: "ANTHROPIC_API_KEY", factory: "createAnthropic" },
  "@ai-sdk/google": { apiKeyEnv: "GOOGLE_GENERATIVE_AI_API_KEY", factory: "createGoogleGenerativeAI" },
  "@ai-sdk/mistral": { apiKeyEnv: "MISTRAL_API_KEY", factory: "createMistral" },
  "@ai-sdk/groq": { apiKeyEnv: "GROQ_API_KEY", factory: "createGroq" },
  "@ai-sdk/xai": { apiKeyEnv: "XAI_API_KEY", factory: "createXai" },
  "@ai-sdk/deepseek": { apiKeyEnv: "DEEPSEEK_API_KEY", factory: "createDeepSeek" },
};

/**
 * What turnlog knows of a package, or `undefined` for one it does not.
 *
 * @example
 * knownAiSdkPackage("@ai-sdk/google")?.apiKeyEnv; // "GOOGLE_GENERATIVE_AI_API_KEY"
 */
export function knownAiSdkPackage(name: string): KnownAiSdkPackage | undefined {
  return Object.hasOwn(knownAiSdkPackages, name) ? knownAiSdkPackages[name] : undefined;
}

/** An npm package name (`openai-compatible`, `@ai-sdk/openai`), never a path or a URL. */
const packageName = /^(@[a-z0-9][a-z0-9._~-]*\/)?[a-z0-9][a-z0-9._~-]*$/;

/**
 * Checks the value of `--ai-sdk` (or the config file's `aiSdk`): a package name, never a path,
 * since the package is found in the workspace's `node_modules` as `import` would find it there.
 *
 * @example
 * checkAiSdkPackageName("@ai-sdk/openai", "--ai-sdk");
 */
export function checkAiSdkPackageName(name: string, label: string): void {
  if (!packageName.test(name)) {
    throw new CliError(`${label}: "${name}" is not a package name (e.g. @ai-sdk/openai); the package is loaded from this workspace's node_modules`, { exitCode: exitCodes.usage });
  }
}

/**
 * The file a package's `import` loads, found from `directory` as Node's own resolution finds a
 * package for a module there (the `node_modules` folders from `directory` up, the `import` / `node`
 * conditions of its `exports`; never the workspace itself, `aiSdkResolutionBase`). Node 20 cannot resolve an import on behalf of another directory
 * without a flag, so this is import-meta-resolve, Node's resolver as a library. `undefined` when the
 * package is not installed there.
 *
 * @example
 * aiSdkPackageEntry("@ai-sdk/openai", "/work/app"); // "/work/app/node_modules/@ai-sdk/openai/dist/index.mjs"
 */
export function aiSdkPackageEntry(name: string, directory: string): string | undefined {
  let resolved: string;
  try {
    resolved = resolveImport(name, aiSdkResolutionBase(directory));
  } catch (error) {
    if (isNotFound(error)) return undefined;
    throw new CliError(`--ai-sdk ${name}: the package in ${directory} cannot be loaded: ${error instanceof Error ? error.message.split("\n")[0] : String(error)}`, { exitCode: exitCodes.usage, cause: error });
  }
  return fileURLToPath(resolved);
}

/**
 * The module an `--ai-sdk` package is resolved from: a file in the workspace's `node_modules`, not
 * its package.json. From the workspace's own package.json, a package.json naming itself
 * `@ai-sdk/openai` with `exports` would resolve to the workspace's own code (Node's self-reference),
 * which a model may write; inside `node_modules` there is no package scope to refer to, and the
 * lookup is the `node_modules` folders from the workspace up, as before.
 *
 * @example
 * aiSdkResolutionBase("/work/app"); // "file:///work/app/node_modules/package.json"
 */
export function aiSdkResolutionBase(directory: string): string {
  return pathToFileURL(path.join(directory, "node_modules", "package.json")).href;
}

/** Whether Node's resolver found no such package (as opposed to a package it cannot load). */
function isNotFound(error: unknown): boolean {
  return error instanceof Error && (error as NodeJS.ErrnoException).code === "ERR_MODULE_NOT_FOUND";
}

/**
 * The export of a loaded package that is its provider: of the exports that are providers of
 * models (callable, with `languageModel`), the only one, else the one named like the package's
 * last path segment (`@ai-sdk/openai` → `openai`). A package with none, or several and none so
 * named, is a usage error naming what it exports.
 *
 * @example
 * findProviderExport(await import("@ai-sdk/openai"), "@ai-sdk/openai", isModelProvider); // { name: "openai", value: openai }
 */
export function findProviderExport(exports: Record<string, unknown>, name: string, isModelProvider: (value: unknown) => boolean): { name: string; value: unknown } {
  const providers = Object.keys(exports).filter((key) => key !== "default" && isModelProvider(exports[key]));
  const segment = (name.split("/").at(-1) ?? name).replace(/[^a-zA-Z0-9]/g, "").toLowerCase();
  const chosen = providers.length === 1 ? providers[0] : providers.find((key) => key.toLowerCase() === segment);
  if (chosen !== undefined) return { name: chosen, value: exports[chosen] };
  const listed = Object.keys(exports).filter((key) => key !== "default");
  if (providers.length === 0) {
    throw new CliError(`--ai-sdk ${name}: the package exports no AI SDK provider (a function with languageModel); it exports ${listed.length === 0 ? "nothing" : listed.slice(0, 12).join(", ")}`, { exitCode: exitCodes.usage });
  }
  throw new CliError(`--ai-sdk ${name}: the package exports several AI SDK providers (${providers.join(", ")}) and none is named after it; turnlog cannot tell which to use`, { exitCode: exitCodes.usage });
}

/**
 * The factory that makes a provider with options (`createOpenAI` for `openai`): the one turnlog
 * knows for the package, else the export named `create` + the provider's name capitalized (in any
 * case: `createDeepSeek` for `deepseek`).
 */
function findFactory(exports: Record<string, unknown>, name: string, providerName: string): { name: string; value: (settings: Record<string, unknown>) => unknown } {
  const wanted = `create${providerName}`.toLowerCase();
  const known = knownAiSdkPackage(name)?.factory;
  const factory = known !== undefined && typeof exports[known] === "function" ? known : Object.keys(exports).find((key) => key.toLowerCase() === wanted && typeof exports[key] === "function");
  if (factory === undefined) {
    throw new CliError(`--ai-sdk ${name}: found no factory create${providerName.charAt(0).toUpperCase()}${providerName.slice(1)} to pass the base URL and key to — leave out --base-url and --api-key-env to let the package's ${providerName} read its own settings`, { exitCode: exitCodes.usage });
  }
  return { name: factory, value: exports[factory] as (settings: Record<string, unknown>) => unknown };
}

/** The key sent to a server on this machine when the key's variable is unset: no secret. */
const noKey = "turnlog-no-key";

/**
 * The provider of an `--ai-sdk` run: the package loaded from the workspace `root` (the user's
 * installed copy, not turnlog's), its provider export found, and its model wrapped with the AI SDK
 * bridge. With a base URL or a key variable, the provider is made by the package's factory with
 * them (the key read from `env`, the command's environment); otherwise the package's default
 * instance reads its own settings. Every mistake is one line, exit 2.
 *
 * @example
 * await loadAiSdkProvider({ aiSdk: "@ai-sdk/openai", model: "gpt-5", apiKeyEnv: "OPENAI_API_KEY", mcpServers: [] }, "/work/app", process.env);
 */
export async function loadAiSdkProvider(record: AiSdkRunRecord, root: string, env: NodeJS.ProcessEnv): Promise<Provider> {
  const name = record.aiSdk;
  const bridge = modelPackageFormat()?.modelPackage;
  if (bridge === undefined) throw new CliError("--ai-sdk: no provider format drives AI SDK models", { exitCode: exitCodes.usage });
  checkAiSdkPackageName(name, "--ai-sdk");
  const entry = aiSdkPackageEntry(name, root);
  if (entry === undefined) {
    throw new CliError(`--ai-sdk ${name}: the package is not installed in ${root} (it is loaded from the workspace's node_modules, as your code would import it) — npm install ${name}`, { exitCode: exitCodes.usage });
  }
  let exports: Record<string, unknown>;
  try {
    exports = (await import(pathToFileURL(entry).href)) as Record<string, unknown>;
  } catch (error) {
    throw new CliError(`--ai-sdk ${name}: loading ${entry} failed: ${error instanceof Error ? error.message.split("\n")[0] : String(error)}`, { exitCode: exitCodes.usage, cause: error });
  }
  const found = findProviderExport(exports, name, bridge.isModelProvider);
  let provider = found.value as { languageModel: (id: string) => unknown };
  if (record.baseURL !== undefined || record.apiKeyEnv !== undefined) {
    const factory = findFactory(exports, name, found.name);
    const key = record.apiKeyEnv !== undefined ? env[record.apiKeyEnv] : undefined;
    const settings = {
      ...(record.baseURL !== undefined ? { baseURL: record.baseURL } : {}),
      // requireApiKey let an unset key through only for a server on this machine.
      ...(record.apiKeyEnv !== undefined ? { apiKey: key !== undefined && key !== "" ? key : noKey } : {}),
    };
    const made = factory.value(settings);
    if (!bridge.isModelProvider(made)) throw new CliError(`--ai-sdk ${name}: ${factory.name}(…) did not return an AI SDK provider`, { exitCode: exitCodes.usage });
    provider = made as typeof provider;
  }
  try {
    const options = knownAiSdkPackage(name)?.providerOptions;
    return bridge.create(provider.languageModel(record.model), options !== undefined ? { providerOptions: options } : {});
  } catch (error) {
    throw new CliError(`--ai-sdk ${name} --model ${record.model}: ${error instanceof Error ? error.message.split("\n")[0] : String(error)}`, { exitCode: exitCodes.usage, cause: error });
  }
}
