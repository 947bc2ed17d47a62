import { hasCode, TurnlogError } from "./turnlog-error.js";

/**
 * An MCP server could not be used: it did not start, did not complete the MCP handshake, or
 * could not list its tools. Names the server (`server`) so that a host with several knows which
 * one to fix; the underlying error is the `cause`.
 *
 * @example
 * try {
 *   await createRuntime({ provider, mcpServers: [{ name: "files", command: "mcp-files" }] });
 * } catch (error) {
 *   if (McpServerError.isInstance(error)) console.error(error.server, error.message);
 * }
 */
export class McpServerError extends TurnlogError {
  readonly code = "TURNLOG_MCP_SERVER";

  constructor(
    readonly server: string,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }

  static isInstance(value: unknown): value is McpServerError {
    return hasCode(value, "TURNLOG_MCP_SERVER");
  }
}
