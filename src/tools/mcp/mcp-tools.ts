import { isDeepStrictEqual } from "node:util";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import type { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import type { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { CallToolResult, Tool } from "@modelcontextprotocol/sdk/types.js";
import packageJson from "../../../package.json" with { type: "json" };
import type { RiskClass } from "../../contracts/risk.js";
import { McpServerError } from "../../errors/mcp-server-error.js";
import { defaultToolTimeoutMs, defineTool, type ToolDefinition } from "../define-tool.js";
import { jsonSchemaInput, schemaValidator } from "../json-schema-input.js";
import { mcpRiskClass } from "./mcp-risk.js";
import { mcpToolName } from "./mcp-tool-name.js";
import { mcpToolResult } from "./mcp-tool-result.js";
import { wellFormedText, wellFormedValue } from "../../util/well-formed-text.js";
import { describeThrown } from "../../util/json-value.js";

/** What every MCP server entry of `createRuntime({ mcpServers })` may say. */
interface McpServerOptions {
  /**
   * Names the server in its tools' names (`mcp__<name>__<tool>`), in errors, and in
   * `session.started` (`source: "mcp:<name>"`). Unique among a runtime's servers.
   */
  name: string;
  /**
   * Risk classes by the tool's own MCP name, over what its annotations say — for a server whose
   * hints you do not trust, or that gives none. Naming a tool the server does not list is an error.
   */
  risk?: Record<string, RiskClass>;
  /** Per-call timeout of this server's tools, in ms. Default 120 000, as for any tool. */
  timeoutMs?: number;
  /**
   * How long starting the server, the MCP handshake and listing its tools may take, in ms; also how
   * long each re-list after `tools/list_changed` may take. Default 30 000.
   */
  connectTimeoutMs?: number;
}

/**
 * An MCP server turnlog starts as a child process and speaks to over stdin/stdout.
 *
 * @example
 * { name: "files", command: "npx", args: ["-y", "@modelcontextprotocol/server-filesystem", "/srv/data"] }
 */
export interface McpStdioServerConfig extends McpServerOptions {
  command: string;
  args?: readonly string[];
  /**
   * Added to the small default environment the MCP SDK passes (`HOME`, `PATH`, `SHELL`, `TERM`,
   * `USER`, `LOGNAME`): a server does not inherit the host's secrets unless given them here.
   */
  env?: Record<string, string>;
  cwd?: string;
  /**
   * Receives the server's stderr. Without it, stderr is kept only to explain a failed start (its
   * last 2 000 characters go into the error).
   */
  onStderr?: (text: string) => void;
}

/**
 * An MCP server reached over Streamable HTTP.
 *
 * @example
 * { name: "tickets", url: "https://mcp.example.com/mcp", headers: { authorization: `Bearer ${token}` } }
 */
export interface McpHttpServerConfig extends McpServerOptions {
  url: string | URL;
  /** Sent with every request, e.g. `authorization`. Never logged. */
  headers?: Record<string, string>;
}

/**
 * One entry of `createRuntime({ mcpServers })`: a command to start (stdio) or a URL (Streamable
 * HTTP). docs/mcp.md describes both.
 *
 * @example
 * const servers: McpServerConfig[] = [
 *   { name: "everything", command: "npx", args: ["-y", "@modelcontextprotocol/server-everything", "stdio"] },
 *   { name: "tickets", url: "https://mcp.example.com/mcp", risk: { close_ticket: "shared-state-mutation" } },
 * ];
 */
export type McpServerConfig = McpStdioServerConfig | McpHttpServerConfig;

/**
 * A connected MCP server: its tools, ready to register, news of changes to them, and how to let it go.
 *
 * @example
 * const files = await connectMcpServer({ name: "files", command: "mcp-files" });
 * files.tools.map((tool) => tool.name); // ["mcp__files__read", ...]
 * const stop = files.onToolsChanged((tools) => console.log(tools.map((tool) => tool.name)));
 * stop();
 * await files.close();
 */
export interface McpServerConnection {
  readonly name: string;
  /**
   * The server's tools as turnlog tools, in the order the server listed them: always its latest
   * list, which changes when the server announces `tools/list_changed`.
   */
  readonly tools: readonly ToolDefinition[];
  /**
   * Calls `listener` with the server's whole new tool list, wrapped as at connect, each time that
   * list changed. Returns a function that unsubscribes. A listener that throws affects neither the
   * connection nor the other listeners.
   *
   * @example
   * const stop = files.onToolsChanged((tools) => console.log(`files now offers ${tools.length} tools`));
   */
  onToolsChanged(listener: (tools: readonly ToolDefinition[]) => void): () => void;
  /** Closes the client, which ends a stdio server's process. Never throws; safe to call twice. */
  close(): Promise<void>;
}

const defaultConnectTimeoutMs = 30_000;
/** The SDK's own request timeout sits just past the tool's, so turnlog's timeout is the one that fires and is reported. */
const sdkTimeoutGraceMs = 1_000;
const stderrTailChars = 2_000;
/** A server that registers several tools in a row announces each; one re-list after a short quiet spell covers them all. */
const listChangedDebounceMs = 300;

/**
 * Connects to one MCP server with the official SDK client, lists its tools (following pagination
 * cursors) and wraps each as a turnlog tool: named by `mcpToolName`, classed by `mcpRiskClass` (or
 * the config's `risk`), validated by the server's own JSON Schema, which is also what providers are
 * offered. A tool that requires task-based execution is left out: turnlog calls tools and waits.
 *
 * The connection follows `tools/list_changed` (when the server advertises it): after a short
 * debounce it lists the tools again, all pages, wraps them the same way and tells `onToolsChanged`
 * listeners. A re-list that fails, or that yields tools turnlog cannot use (a `risk` override naming
 * a tool the server dropped, a schema that does not compile), keeps the previous list.
 *
 * Throws `McpServerError` naming the server if it does not start, does not complete the handshake
 * or cannot list its tools (the connection is closed first).
 *
 * @example
 * const everything = await connectMcpServer({ name: "everything", command: "npx", args: ["-y", "@modelcontextprotocol/server-everything"] });
 * const runtime = await createRuntime({ provider, tools: everything.tools }); // or pass mcpServers to createRuntime
 */
export async function connectMcpServer(config: McpServerConfig): Promise<McpServerConnection> {
  const name = checkConfig(config);
  const connectTimeoutMs = config.connectTimeoutMs ?? defaultConnectTimeoutMs;
  const stderr = { tail: "" };
  // The SDK's client and transports load on first use: a runtime without MCP servers (and every
  // CLI command but run) does not pay for them at start-up.
  const [{ Client }, { StdioClientTransport }, { StreamableHTTPClientTransport }] = await Promise.all([
    import("@modelcontextprotocol/sdk/client/index.js"),
    import("@modelcontextprotocol/sdk/client/stdio.js"),
    import("@modelcontextprotocol/sdk/client/streamableHttp.js"),
  ]);
  const transport = createTransport(config, stderr, { StdioClientTransport, StreamableHTTPClientTransport });
  let current: { listed: readonly Tool[]; tools: readonly ToolDefinition[] } = { listed: [], tools: [] };
  const listeners = new Set<(tools: readonly ToolDefinition[]) => void>();
  // Re-lists run one after another, so the list kept is the one read after the last notification.
  // The first waits for the listing below: a server may register tools right after the handshake.
  let listedAtConnect!: () => void;
  let relisting = new Promise<void>((resolve) => (listedAtConnect = resolve));
  const client = new Client(
    { name: "turnlog", version: packageJson.version },
    {
      capabilities: {},
      listChanged: {
        tools: {
          // Off: the SDK's own refresh reads only the first page; listAllTools follows the cursors.
          autoRefresh: false,
          debounceMs: listChangedDebounceMs,
          onChanged: () => {
            relisting = relisting.then(relist);
          },
        },
      },
    },
  );
  let closed: Promise<void> | undefined;
  const close = () =>
    (closed ??= (async () => {
      // Ends the HTTP session on the server too; a server that cannot be reached is closed anyway.
      if (transport instanceof StreamableHTTPClientTransport) await transport.terminateSession().catch(() => undefined);
      await client.close().catch(() => undefined);
    })());
  const fail = async (doing: string, error: unknown): Promise<never> => {
    await close();
    const detail = describeThrown(error);
    const tail = stderr.tail.trim();
    throw new McpServerError(name, `MCP server "${name}" ${doing}: ${detail}${tail ? ` (its stderr ended with: ${tail})` : ""}`, { cause: error });
  };

  const deadline = AbortSignal.timeout(connectTimeoutMs);
  try {
    await client.connect(transport, { signal: deadline, timeout: connectTimeoutMs });
  } catch (error) {
    return fail(deadline.aborted ? `did not start within ${connectTimeoutMs} ms` : "could not be started", error);
  }
  let listed: Tool[];
  try {
    listed = await listAllTools(client, { signal: deadline, timeout: connectTimeoutMs });
  } catch (error) {
    return fail(deadline.aborted ? `did not list its tools within ${connectTimeoutMs} ms` : "could not list its tools", error);
  }
  try {
    current = { listed, tools: toTurnlogTools(client, config, listed) };
  } catch (error) {
    return fail("offers tools turnlog cannot use", error);
  }
  listedAtConnect();
  return {
    name,
    get tools() {
      return current.tools;
    },
    onToolsChanged(listener) {
      if (typeof listener !== "function") throw new TypeError("onToolsChanged needs a function");
      // Each subscription is its own entry, so one function subscribed twice is called twice and
      // each unsubscribe ends only its own.
      const subscription = (tools: readonly ToolDefinition[]) => listener(tools);
      listeners.add(subscription);
      return () => {
        listeners.delete(subscription);
      };
    },
    close,
  };

  async function relist(): Promise<void> {
    if (closed !== undefined) return;
    let next: typeof current;
    try {
      const listed = await listAllTools(client, { signal: AbortSignal.timeout(connectTimeoutMs), timeout: connectTimeoutMs });
      // An announcement that changed nothing (or that the listing at connect already saw) is no change.
      if (isDeepStrictEqual(listed, current.listed)) return;
      next = { listed, tools: toTurnlogTools(client, config, listed) };
    } catch {
      // A notification has no caller to fail: a server that cannot list now, or now lists tools
      // turnlog cannot use, keeps the tools it had, which still work as far as turnlog can tell.
      return;
    }
    if (closed !== undefined) return;
    current = next;
    for (const listener of [...listeners]) {
      try {
        listener(next.tools);
      } catch {
        // A listener's bug is its host's: it must not keep the other listeners from hearing of the
        // change, nor surface as an unhandled rejection from inside the SDK's notification handler.
      }
    }
  }
}

/**
 * Connects to several MCP servers at once and returns them in the order given. If any fails, the
 * others are closed and the first failure, in that order, is thrown.
 *
 * @example
 * const servers = await connectMcpServers([{ name: "a", command: "mcp-a" }, { name: "b", url: "http://localhost:3001/mcp" }]);
 */
export async function connectMcpServers(configs: readonly McpServerConfig[]): Promise<McpServerConnection[]> {
  const names = new Set<string>();
  for (const config of configs) {
    const name = checkConfig(config);
    // The name is each tool's `source` and part of its name; two servers under one name would blur both.
    if (names.has(name)) throw new TypeError(`two MCP servers are named "${name}"; server names must be unique`);
    names.add(name);
  }
  const settled = await Promise.allSettled(configs.map((config) => connectMcpServer(config)));
  const connected = settled.flatMap((outcome) => (outcome.status === "fulfilled" ? [outcome.value] : []));
  const failure = settled.find((outcome): outcome is PromiseRejectedResult => outcome.status === "rejected");
  if (failure !== undefined) {
    await Promise.all(connected.map((connection) => connection.close()));
    throw failure.reason;
  }
  return connected;
}

function checkConfig(config: McpServerConfig): string {
  const name: unknown = config?.name;
  if (typeof name !== "string" || name === "") throw new TypeError("an MCP server needs a name");
  const hasCommand = "command" in config && config.command !== undefined;
  const hasUrl = "url" in config && config.url !== undefined;
  if (hasCommand === hasUrl) throw new TypeError(`MCP server "${name}" needs either a command (stdio) or a url (Streamable HTTP)`);
  const url = hasUrl ? String((config as McpHttpServerConfig).url) : "";
  if (hasUrl && !URL.canParse(url)) throw new TypeError(`MCP server "${name}" has a url that is not a URL: ${url}`);
  return name;
}

function createTransport(
  config: McpServerConfig,
  stderr: { tail: string },
  sdk: { StdioClientTransport: typeof StdioClientTransport; StreamableHTTPClientTransport: typeof StreamableHTTPClientTransport },
): StdioClientTransport | StreamableHTTPClientTransport {
  const { StdioClientTransport: Stdio, StreamableHTTPClientTransport: StreamableHttp } = sdk;
  if ("url" in config) {
    return new StreamableHttp(new URL(config.url), config.headers ? { requestInit: { headers: config.headers } } : undefined);
  }
  const transport = new Stdio({
    command: config.command,
    args: [...(config.args ?? [])],
    ...(config.env ? { env: config.env } : {}),
    ...(config.cwd !== undefined ? { cwd: config.cwd } : {}),
    // Piped, not inherited: a library should not write a child's chatter into its host's stderr.
    stderr: "pipe",
  });
  // The SDK hands out the stream before the process starts, so nothing it writes early is lost.
  transport.stderr?.on("data", (chunk: Buffer | string) => {
    const text = String(chunk);
    stderr.tail = (stderr.tail + text).slice(-stderrTailChars);
    config.onStderr?.(text);
  });
  return transport;
}

async function listAllTools(client: Client, options: { signal: AbortSignal; timeout: number }): Promise<Tool[]> {
  const tools: Tool[] = [];
  const cursors = new Set<string>();
  let cursor: string | undefined;
  do {
    const page = await client.listTools(cursor === undefined ? {} : { cursor }, options);
    tools.push(...page.tools);
    cursor = page.nextCursor;
    // A server that hands back a cursor it already gave would have us list forever.
    if (cursor !== undefined && cursors.has(cursor)) throw new Error(`the server repeated the pagination cursor "${cursor}"`);
    if (cursor !== undefined) cursors.add(cursor);
  } while (cursor !== undefined);
  return tools;
}

function toTurnlogTools(client: Client, config: McpServerConfig, listed: readonly Tool[]): ToolDefinition[] {
  const server = config.name;
  const overrides = config.risk ?? {};
  const unknown = Object.keys(overrides).filter((toolName) => !listed.some((tool) => tool.name === toolName));
  // A misspelt override would leave a tool with the risk class it was meant to replace.
  if (unknown.length > 0) throw new Error(`the risk overrides name tools the server does not list: ${unknown.join(", ")}`);
  const timeoutMs = config.timeoutMs ?? defaultToolTimeoutMs;
  // One validator (one ajv) per server compiles all of its schemas.
  const validator = schemaValidator();
  return listed
    .filter((tool) => tool.execution?.taskSupport !== "required")
    .map((tool) => {
      // A server's JSON can hold lone surrogates (`\ud800` escapes); the schema and the description
      // are recorded in the log and hashed, so they are made valid Unicode here, where they enter.
      const parameters = wellFormedValue(tool.inputSchema as Record<string, unknown>);
      let input: ReturnType<typeof jsonSchemaInput>;
      try {
        input = jsonSchemaInput(parameters, { validator });
      } catch (error) {
        throw new Error(`the input schema of tool "${tool.name}" cannot be compiled: ${describeThrown(error)}`, { cause: error });
      }
      return defineTool({
        name: mcpToolName(server, tool.name),
        description: wellFormedText(tool.description ?? tool.title ?? tool.annotations?.title ?? `The "${tool.name}" tool of MCP server "${server}".`),
        risk: Object.hasOwn(overrides, tool.name) ? (overrides[tool.name] as RiskClass) : mcpRiskClass(tool.annotations),
        input,
        parameters,
        timeoutMs,
        // Honoured only for read-only tools (a call cut off by a crash runs again on resume).
        idempotent: tool.annotations?.idempotentHint === true,
        run: async (args, ctx) => {
          let result: Awaited<ReturnType<Client["callTool"]>>;
          try {
            result = await client.callTool({ name: tool.name, arguments: args }, undefined, { signal: ctx.signal, timeout: timeoutMs + sdkTimeoutGraceMs });
          } catch (error) {
            // A protocol or transport failure (not a tool's own `isError`): the call fails as a thrown tool would.
            throw new Error(`MCP server "${server}": ${describeThrown(error)}`, { cause: error });
          }
          // Only the pre-2024-11-05 compatibility schema yields `toolResult`; the default schema never does.
          return mcpToolResult(result as CallToolResult);
        },
      });
    });
}
