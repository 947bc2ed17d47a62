import { readFile } from "node:fs/promises";
import path from "node:path";
import { z } from "zod";
import { BudgetsSchema } from "../../contracts/budgets.js";
import { CliError, exitCodes } from "../../errors/cli-error.js";

/** The file `turnlog run` reads from its working directory when `--config` is not given. */
export const defaultConfigFileName = "turnlog.config.json";

/** The NAME of an environment variable: what `apiKeyEnv` holds, never the key itself. */
export const environmentVariableName = /^[A-Z_][A-Z0-9_]*$/;

/** The two provider kinds `turnlog run` speaks. */
export const ProviderKindSchema = z.enum(["openai", "anthropic"], { error: 'expected "openai" or "anthropic"' });
export type ProviderKind = z.infer<typeof ProviderKindSchema>;

const ApprovalModeFieldSchema = z.enum(["ask", "auto-edit", "full-auto", "read-only"], { error: 'expected "ask", "auto-edit", "full-auto" or "read-only"' });

/**
 * One MCP server of the file. One object shape with a refinement rather than a union, so that a
 * mistake inside an entry is reported at its own field (`mcpServers[0].args`) instead of as
 * "matches neither shape".
 */
const McpServerEntrySchema = z
  .strictObject({
    name: z.string().regex(/^[A-Za-z0-9_-]{1,40}$/, "expected letters, digits, _ or - (at most 40): it becomes part of each tool's name"),
    command: z.string().min(1, "expected a command").optional(),
    args: z.array(z.string()).optional(),
    env: z.record(z.string().regex(environmentVariableName, "expected an upper-case variable name"), z.string()).optional(),
    url: z.url({ protocol: /^https?$/, error: "expected an http or https URL" }).optional(),
  })
  .superRefine((entry, context) => {
    if ((entry.command === undefined) === (entry.url === undefined)) {
      context.addIssue({ code: "custom", message: "expected either a command (stdio) or a url (Streamable HTTP)" });
    }
    if (entry.url !== undefined && (entry.args !== undefined || entry.env !== undefined)) {
      context.addIssue({ code: "custom", message: "args and env are for a command; a url server takes neither" });
    }
  });

/**
 * `turnlog.config.json`: every field optional; flags given on the command line win over it.
 *
 * @example
 * { "provider": "openai", "baseURL": "http://localhost:11434/v1", "model": "qwen2.5-coder", "mode": "auto-edit",
 *   "mcpServers": [{ "name": "files", "command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "."] }] }
 */
export const RunConfigFileSchema = z.strictObject({
  /** Lets an editor find a JSON Schema; ignored. */
  $schema: z.string().optional(),
  provider: ProviderKindSchema.optional(),
  /** An AI SDK provider package installed in the workspace (`--ai-sdk`), instead of `provider`. */
  aiSdk: z.string().min(1, "expected a package name, e.g. @ai-sdk/openai").optional(),
  baseURL: z.url({ protocol: /^https?$/, error: "expected an http or https URL" }).optional(),
  model: z.string().min(1, "expected a model name").optional(),
  apiKeyEnv: z.string().regex(environmentVariableName, "expected the NAME of an environment variable (upper-case letters, digits, underscores), not a key").optional(),
  mode: ApprovalModeFieldSchema.optional(),
  mcpServers: z.array(McpServerEntrySchema).optional(),
  budgets: BudgetsSchema.partial().strict().optional(),
  history: z.strictObject({ maxTokens: z.number().int().positive().optional() }).optional(),
});
export type RunConfigFile = z.infer<typeof RunConfigFileSchema>;
export type McpServerEntry = NonNullable<RunConfigFile["mcpServers"]>[number];

/** A config file as read: its fields, and where it came from (absolute). */
export interface LoadedConfigFile {
  file: string;
  config: RunConfigFile;
}

/**
 * Reads and validates a config file. `explicit`: the user named it with `--config`, so a missing
 * file is their mistake; the default `turnlog.config.json` may simply not exist (`undefined`).
 * Every problem is one line naming the file and the field, exit 2.
 *
 * @example
 * await readRunConfigFile("turnlog.config.json", { explicit: false }); // undefined when there is none
 */
export async function readRunConfigFile(file: string, options: { explicit: boolean }): Promise<LoadedConfigFile | undefined> {
  let text: string;
  try {
    text = await readFile(file, "utf8");
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === "ENOENT" && !options.explicit) return undefined;
    throw new CliError(code === "ENOENT" ? `config file not found: ${file}` : `cannot read config file ${file}: ${code ?? String(error)}`, { exitCode: exitCodes.usage });
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    throw new CliError(`${file} is not valid JSON: ${(error as Error).message}`, { exitCode: exitCodes.usage });
  }
  const parsed = RunConfigFileSchema.safeParse(json);
  if (!parsed.success) throw new CliError(`${file}: ${describeIssue(parsed.error.issues[0])}`, { exitCode: exitCodes.usage });
  const names = new Set<string>();
  for (const [index, server] of (parsed.data.mcpServers ?? []).entries()) {
    if (names.has(server.name)) throw new CliError(`${file}: mcpServers[${index}].name: "${server.name}" names two servers; names must be unique`, { exitCode: exitCodes.usage });
    names.add(server.name);
  }
  return { file: path.resolve(file), config: parsed.data };
}

/** `provider: expected "openai" or "anthropic"`, `mcpServers[0]: unknown field "cmd"`. */
function describeIssue(issue: z.core.$ZodIssue | undefined): string {
  if (issue === undefined) return "invalid";
  const where = formatPath(issue.path);
  const message = issue.code === "unrecognized_keys" ? `unknown field${issue.keys.length > 1 ? "s" : ""} ${issue.keys.map((key) => `"${key}"`).join(", ")}` : issue.message;
  return where === "" ? message : `${where}: ${message}`;
}

function formatPath(segments: readonly PropertyKey[]): string {
  let text = "";
  for (const segment of segments) text += typeof segment === "number" ? `[${segment}]` : `${text === "" ? "" : "."}${String(segment)}`;
  return text;
}
