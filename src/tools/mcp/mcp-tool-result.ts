import type { CallToolResult, ContentBlock } from "@modelcontextprotocol/sdk/types.js";

/**
 * What the model reads of an MCP tool result (docs/mcp.md, "Results"):
 *
 * - `content` items, one per line: text as is; an image or audio clip as a short placeholder
 *   (`[image image/png, 1234 bytes base64]`), since a tool result is text and base64 would only
 *   spend the model's context; an embedded resource as its URI then its text (or a placeholder for
 *   a blob); a resource link as its URI, name and type.
 * - `structuredContent`, as JSON, only when no item is text: MCP asks a server that returns
 *   structured content to send the same JSON as text too, so appending it would say it twice.
 * - `isError: true` gives `ok: false`: the call ends `turn.tool.failed` (code `tool-error`) and the
 *   model reads the server's message.
 *
 * Long text is left whole; the packetizer bounds it like any tool's.
 *
 * @example
 * mcpToolResult({ content: [{ type: "text", text: "Echo: hi" }] }); // { ok: true, content: "Echo: hi" }
 * mcpToolResult({ content: [{ type: "text", text: "no such id" }], isError: true }); // { ok: false, ... }
 */
export function mcpToolResult(result: CallToolResult): { ok: boolean; content: string } {
  const items = result.content ?? [];
  const lines = items.map(describeContent);
  const hasText = items.some((item) => item.type === "text");
  if (!hasText && result.structuredContent !== undefined) lines.push(JSON.stringify(result.structuredContent));
  const ok = result.isError !== true;
  const text = lines.join("\n");
  // An empty result still tells the model something happened, and some providers refuse empty tool text.
  if (text === "") return { ok, content: ok ? "(the tool returned no content)" : "(the tool reported an error and gave no details)" };
  return { ok, content: text };
}

function describeContent(item: ContentBlock): string {
  switch (item.type) {
    case "text":
      return item.text;
    case "image":
    case "audio":
      return `[${item.type} ${item.mimeType}, ${item.data.length} bytes base64]`;
    case "resource": {
      const resource = item.resource;
      const head = `[resource ${resource.uri}${resource.mimeType ? ` ${resource.mimeType}` : ""}]`;
      if ("text" in resource && typeof resource.text === "string") return `${head}\n${resource.text}`;
      if ("blob" in resource && typeof resource.blob === "string") return `${head.slice(0, -1)}, ${resource.blob.length} bytes base64]`;
      return head;
    }
    case "resource_link":
      return `[resource link ${item.uri} "${item.name}"${item.mimeType ? ` ${item.mimeType}` : ""}]${item.description ? ` ${item.description}` : ""}`;
    default:
      // A content type newer than this code: say that something was there rather than drop it.
      return `[${String((item as { type?: unknown }).type)} content]`;
  }
}
