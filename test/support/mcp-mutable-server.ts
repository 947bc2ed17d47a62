/**
 * A small MCP server over stdio whose tool list changes while it runs, announced with
 * `notifications/tools/list_changed`: `add_tool` registers a tool, `remove_tool` drops one and
 * `set_listing` makes `tools/list` fail (or work again) without announcing anything. It lists one
 * tool per page, so a client that does not follow the cursor misses every tool but the first.
 *
 * Each added tool (and each name given as an argument, present from the start) is a read-only
 * echo: called with `{ text }`, it answers `<name>: <text>`. After answering the last page of a
 * listing it writes `listed: <names>` to stderr, and `refused to list` when listing fails, so a
 * test can tell a re-list has been answered.
 *
 * Run: node --import tsx test/support/mcp-mutable-server.ts [tool name...]
 */
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { CallToolRequestSchema, ListToolsRequestSchema } from "@modelcontextprotocol/sdk/types.js";
import type { CallToolResult, Tool } from "@modelcontextprotocol/sdk/types.js";

const named: Tool["inputSchema"] = { type: "object", properties: { name: { type: "string" } }, required: ["name"] };
const control: Tool[] = [
  { name: "add_tool", description: "Registers an echo tool by that name", inputSchema: named },
  { name: "remove_tool", description: "Drops the tool by that name", inputSchema: named },
  { name: "set_listing", description: "Makes tools/list fail, or work again", inputSchema: { type: "object", properties: { fail: { type: "boolean" } }, required: ["fail"] } },
];
const echo = (name: string): Tool => ({
  name,
  description: `Echoes its text, prefixed with "${name}"`,
  inputSchema: { type: "object", properties: { text: { type: "string" } }, required: ["text"] },
  annotations: { readOnlyHint: true },
});

const tools = new Map<string, Tool>([...control, ...process.argv.slice(2).map(echo)].map((tool) => [tool.name, tool]));
let listingFails = false;

const server = new Server({ name: "mutable-fixture", version: "1.0.0" }, { capabilities: { tools: { listChanged: true } } });
server.setRequestHandler(ListToolsRequestSchema, (request) => {
  if (listingFails) {
    process.stderr.write("refused to list\n");
    throw new Error("listing is switched off");
  }
  const listed = [...tools.values()];
  const index = request.params?.cursor === undefined ? 0 : Number(request.params.cursor);
  const last = index + 1 >= listed.length;
  if (last) process.stderr.write(`listed: ${listed.map((tool) => tool.name).join(", ")}\n`);
  return { tools: listed.slice(index, index + 1), ...(last ? {} : { nextCursor: String(index + 1) }) };
});
server.setRequestHandler(CallToolRequestSchema, async (request): Promise<CallToolResult> => {
  const { name, arguments: args = {} } = request.params;
  const text = (value: string): CallToolResult => ({ content: [{ type: "text", text: value }] });
  if (name === "add_tool" || name === "remove_tool") {
    const target = String(args.name);
    if (name === "add_tool") tools.set(target, echo(target));
    else tools.delete(target);
    await server.sendToolListChanged();
    return text(`${name === "add_tool" ? "added" : "removed"} ${target}`);
  }
  if (name === "set_listing") {
    listingFails = args.fail === true;
    return text(listingFails ? "listing fails" : "listing works");
  }
  if (!tools.has(name)) return { isError: true, content: [{ type: "text", text: `no tool "${name}"` }] };
  return text(`${name}: ${String(args.text)}`);
});
await server.connect(new StdioServerTransport());
