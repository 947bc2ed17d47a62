/**
 * A small MCP server over stdio whose `ship` tool has a side effect the log cannot undo, for the
 * `kill` soak family: `ship { order }` appends the order to the file named by argv[2] between two
 * 30 ms sleeps, so a host killed mid-call can die before the effect or after it (the server, an
 * orphan by then, finishes the call it was in). `ship` has no annotations, so turnlog treats it as
 * an external side effect; `stock { order }` is read-only and idempotent, with no effect.
 *
 * It tells stderr `mcp-begin <order>` when a `ship` starts and `mcp-effect <order>` once the order
 * is written, so the host can report where a call is.
 *
 * Run: node --import tsx test/support/mcp-effect-server.ts <effects file>
 */
import { appendFileSync } from "node:fs";
import { setTimeout as sleep } from "node:timers/promises";
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { CallToolRequestSchema, ListToolsRequestSchema } from "@modelcontextprotocol/sdk/types.js";
import type { CallToolResult, Tool } from "@modelcontextprotocol/sdk/types.js";

const effectsFile = process.argv[2];
if (effectsFile === undefined) throw new TypeError("usage: mcp-effect-server.ts <effects file>");

const order: Tool["inputSchema"] = { type: "object", properties: { order: { type: "string" } }, required: ["order"] };
const tools: Tool[] = [
  { name: "ship", description: "Ships an order (shipping twice ships twice)", inputSchema: order },
  { name: "stock", description: "Reads an order's stock", inputSchema: order, annotations: { readOnlyHint: true, idempotentHint: true } },
];

const server = new Server({ name: "effect-fixture", version: "1.0.0" }, { capabilities: { tools: {} } });
server.setRequestHandler(ListToolsRequestSchema, () => ({ tools }));
server.setRequestHandler(CallToolRequestSchema, async (request): Promise<CallToolResult> => {
  const { name, arguments: args = {} } = request.params;
  const id = String(args.order);
  if (name === "stock") return { content: [{ type: "text", text: `stock ${id}: 3 left` }] };
  if (name !== "ship") return { isError: true, content: [{ type: "text", text: `no tool "${name}"` }] };
  process.stderr.write(`mcp-begin ${id}\n`);
  await sleep(30);
  appendFileSync(effectsFile, `${id}\n`, { flag: "a" });
  process.stderr.write(`mcp-effect ${id}\n`);
  await sleep(30);
  return { content: [{ type: "text", text: `shipped ${id}` }] };
});
await server.connect(new StdioServerTransport());
