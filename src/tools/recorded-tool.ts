import type { ToolSnapshot } from "../contracts/tools.js";
import type { ToolDefinition } from "./define-tool.js";
import { jsonSchemaInput } from "./json-schema-input.js";

/** Definitions built from a log rather than from host code. */
const recordedTools = new WeakSet<ToolDefinition>();

/**
 * A tool rebuilt from what a session recorded of it (`session.started`, `session.tools.changed`):
 * its name, description, risk class, flags, limits, and the JSON Schema the model was offered,
 * which validates arguments as the MCP tools' schemas do. It is for replay without the host's code
 * (the CLI replaying a host's session): it can be planned against and gated, never run.
 *
 * What a recorded definition cannot say is what the host's code computed: the shell text of a
 * command tool and the path arguments of a tool that declares them. Their `command` and `paths`
 * throw, so the tool still counts as a command tool where that matters (it never runs alongside
 * others), and replay takes such a call's gate decision as logged (`isRecordedTool`). Returns
 * `undefined` for a tool recorded without its schema (logs from before schemas were recorded).
 *
 * @example
 * const tool = recordedTool(state.tools[0]); // plans `{ "path": "a.txt" }` against the recorded schema
 */
export function recordedTool(snapshot: ToolSnapshot): ToolDefinition | undefined {
  const parameters = snapshot.parameters;
  if (parameters === undefined) return undefined;
  const needsHostCode = (what: string) => () => {
    throw new Error(`tool "${snapshot.name}" was rebuilt from the log: its ${what} is computed by the host's code`);
  };
  const tool: ToolDefinition = {
    name: snapshot.name,
    description: snapshot.description,
    risk: snapshot.riskClass,
    input: jsonSchemaInput(parameters),
    parameters,
    run: needsHostCode("run"),
    maxResultChars: snapshot.maxResultChars,
    timeoutMs: snapshot.timeoutMs,
    serial: snapshot.flags.serial,
    idempotent: snapshot.flags.idempotent,
    ...(snapshot.flags.command ? { command: needsHostCode("shell text") } : {}),
    ...(snapshot.flags.paths ? { paths: needsHostCode("path arguments") } : {}),
    ...(snapshot.flags.contained === true ? { contained: true } : {}),
  };
  recordedTools.add(tool);
  return tool;
}

/** Whether a definition was rebuilt from the log by `recordedTool`. */
export function isRecordedTool(tool: ToolDefinition | undefined): boolean {
  return tool !== undefined && recordedTools.has(tool);
}

/** Whether the gate's decision on this tool's calls depends on host code a recorded definition lacks. */
export function gateNeedsHostCode(tool: ToolDefinition | undefined): boolean {
  return isRecordedTool(tool) && (tool?.command !== undefined || tool?.paths !== undefined);
}

/**
 * Whether a host's tool is the one a session recorded, as far as decisions can tell: the same
 * risk class, input schema, flags and limits.
 */
export function matchesRecorded(live: ToolSnapshot, recorded: ToolSnapshot): boolean {
  return (
    live.name === recorded.name &&
    live.riskClass === recorded.riskClass &&
    live.schemaDigest === recorded.schemaDigest &&
    live.flags.serial === recorded.flags.serial &&
    live.flags.idempotent === recorded.flags.idempotent &&
    live.flags.command === recorded.flags.command &&
    (live.flags.paths ?? false) === (recorded.flags.paths ?? false) &&
    (live.flags.contained ?? false) === (recorded.flags.contained ?? false) &&
    live.maxResultChars === recorded.maxResultChars &&
    live.timeoutMs === recorded.timeoutMs
  );
}
