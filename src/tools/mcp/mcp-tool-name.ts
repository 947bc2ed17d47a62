import { sha256 } from "../../util/digest.js";

/** What both providers accept as a tool name. */
const modelVisibleName = /^[a-zA-Z0-9_-]{1,64}$/;
const maxLength = 64;
const hashLength = 8;

/**
 * The model-visible name of an MCP tool: `mcp__<server>__<tool>` when that is a valid tool name
 * (`/^[a-zA-Z0-9_-]{1,64}$/`). Otherwise every other character becomes `_`, the name is cut to
 * leave room, and `_` plus 8 hex digits of a SHA-256 of the original (server, tool) pair is
 * appended — so two tools whose names differ only in replaced characters, or only past the cut,
 * still get different names, and the same tool gets the same name in every process (replay and
 * approvals depend on that). The call itself always uses the tool's own MCP name.
 *
 * @example
 * mcpToolName("everything", "get-sum");   // "mcp__everything__get-sum"
 * mcpToolName("github", "issues.create");  // "mcp__github__issues_create_" + 8 hex digits
 */
export function mcpToolName(server: string, tool: string): string {
  const plain = `mcp__${server}__${tool}`;
  if (modelVisibleName.test(plain)) return plain;
  // Per code point (`u`), so a character outside the BMP becomes one `_`, not two.
  const cleaned = plain.replace(/[^a-zA-Z0-9_-]/gu, "_");
  const hash = sha256(JSON.stringify([server, tool])).slice(0, hashLength);
  return `${cleaned.slice(0, maxLength - hashLength - 1)}_${hash}`;
}
