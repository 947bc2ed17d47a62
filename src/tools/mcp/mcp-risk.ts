import type { RiskClass } from "../../contracts/risk.js";

/**
 * The MCP tool annotations that decide a risk class (MCP calls them hints); a tool's
 * `annotations` object fits as it is.
 *
 * @example
 * const hints: McpToolHints = { readOnlyHint: true, openWorldHint: false };
 */
export interface McpToolHints {
  readOnlyHint?: boolean;
  destructiveHint?: boolean;
  openWorldHint?: boolean;
}

/**
 * The risk class of an MCP tool, from its annotations (docs/mcp.md has the table):
 *
 * - `readOnlyHint: true` → `read-only-local`, or `read-only-network` with `openWorldHint: true`;
 * - else `destructiveHint: true` → `destructive-local`;
 * - else (a tool that writes, or says nothing) → `external-side-effect`.
 *
 * Only an explicit `true` counts: an unannotated tool is never taken for read-only, since what it
 * does happens outside this process and nothing else vouches for it. MCP's own default for
 * `destructiveHint` is `true`, but a tool that makes no claim is classed by what turnlog can be
 * sure of — a side effect somewhere else — which `ask` mode puts before a person all the same.
 *
 * @example
 * mcpRiskClass({ readOnlyHint: true, openWorldHint: true }); // "read-only-network"
 * mcpRiskClass(undefined);                                    // "external-side-effect"
 */
export function mcpRiskClass(annotations: McpToolHints | undefined): RiskClass {
  if (annotations?.readOnlyHint === true) return annotations.openWorldHint === true ? "read-only-network" : "read-only-local";
  if (annotations?.destructiveHint === true) return "destructive-local";
  return "external-side-effect";
}
