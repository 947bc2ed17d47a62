/**
 * A small MCP server over stdio whose listing and results hold lone UTF-16 surrogates — what a
 * server that cuts text mid-emoji sends (JSON writes each as a `\ud83d` escape). `half` answers
 * with half an emoji in its text, `broken` reports an error whose message ends in half of one;
 * the description and the input schema of `half` hold lone surrogates too.
 *
 * Run: node --import tsx test/support/mcp-odd-server.ts
 */
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { CallToolRequestSchema, ListToolsRequestSchema } from "@modelcontextprotocol/sdk/types.js";
import type { CallToolResult, Tool } from "@modelcontextprotocol/sdk/types.js";

const halfEmoji = "hello 😀".slice(0, 7);
const tools: Tool[] = [
  {
    name: "half",
    description: `Answers with ${halfEmoji}`,
    inputSchema: { type: "object", properties: { topic: { type: "string", description: `the topic \udc00` } } },
    annotations: { readOnlyHint: true },
  },
  { name: "broken", description: "Always fails", inputSchema: { type: "object", properties: {} }, annotations: { readOnlyHint: true } },
];

const server = new Server({ name: "odd-fixture", version: "1.0.0" }, { capabilities: { tools: {} } });
server.setRequestHandler(ListToolsRequestSchema, () => ({ tools }));
server.setRequestHandler(CallToolRequestSchema, (request): CallToolResult => {
  if (request.params.name === "half") return { content: [{ type: "text", text: `result ${halfEmoji}` }] };
  return { isError: true, content: [{ type: "text", text: `it broke ${halfEmoji}` }] };
});
await server.connect(new StdioServerTransport());
