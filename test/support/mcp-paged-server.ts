/**
 * A small MCP server over stdio, for what @modelcontextprotocol/server-everything does not show:
 * tools listed over several pages, a name that is not a valid model-visible name, a tool with no
 * annotations, a destructive one and an open-world reader. Every call answers with the MCP name
 * it was called by and its arguments. `loop` as the first argument makes it repeat its cursor.
 *
 * Run: node --import tsx test/support/mcp-paged-server.ts [loop]
 */
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { CallToolRequestSchema, ListToolsRequestSchema } from "@modelcontextprotocol/sdk/types.js";

const loop = process.argv[2] === "loop";

const pages = [
  [
    { name: "files.read", description: "Reads a file; says nothing of its effects", inputSchema: { type: "object", properties: { path: { type: "string" } }, required: ["path"] } },
    { name: "wipe", description: "Deletes a directory", inputSchema: { type: "object", properties: { path: { type: "string" } } }, annotations: { destructiveHint: true } },
  ],
  [{ name: "fetch", description: "Fetches a URL", inputSchema: { type: "object", properties: { url: { type: "string", format: "uri" } } }, annotations: { readOnlyHint: true, openWorldHint: true } }],
];

const server = new Server({ name: "paged-fixture", version: "1.0.0" }, { capabilities: { tools: {} } });
server.setRequestHandler(ListToolsRequestSchema, (request) => {
  const index = request.params?.cursor === undefined ? 0 : Number(request.params.cursor);
  const next = loop ? "0" : index + 1 < pages.length ? String(index + 1) : undefined;
  return { tools: pages[index] ?? [], ...(next !== undefined ? { nextCursor: next } : {}) };
});
server.setRequestHandler(CallToolRequestSchema, (request) => ({
  content: [{ type: "text", text: `${request.params.name} ${JSON.stringify(request.params.arguments ?? {})}` }],
}));
await server.connect(new StdioServerTransport());
