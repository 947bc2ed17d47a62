import { z } from "zod";
import type { RiskClass } from "../contracts/risk.js";
import { RiskClassSchema } from "../contracts/risk.js";

/** What a tool handler receives besides its input. */
export interface ToolContext {
  signal: AbortSignal;
  callId: string;
  sessionId: string;
  workspace: { root: string; trusted: boolean };
  /**
   * Absolute paths no tool may change, set by the runtime: its own log's directory (docs/security.md#protected-paths). The workspace tools refuse to write there and their sandbox mounts them read-only,
   * whatever the host passed as `protectedPaths`.
   */
  protectedPaths?: readonly string[];
  /**
   * How the runtime cleared the call to run: the rule of its gate decision (`command=safe:read-only`,
   * `mode:full-auto`, `protected:.git`, …) and, when a person approved it, who. Absent when the
   * tool is run outside the runtime. `run_command` runs a command the gate let through as a
   * known-safe read with git's hooks and `fsmonitor` off; the file tools write a protected path only
   * once a person approved the call.
   */
  clearance?: { rule: string; approvedBy?: string };
}

/** What a tool's `needsApproval` is told besides the call's arguments. */
export interface NeedsApprovalContext {
  sessionId: string;
  callId: string;
  tool: string;
  /** `model`: a call the model proposed; `host`: a host-routed call (`session.runTool`). */
  source: "model" | "host";
}

/** A handler returns a string, or an explicit result. */
export type ToolResult = string | { ok: boolean; content: string; metadata?: Record<string, unknown> };

export interface ToolOptions<Input extends z.ZodType> {
  name: string;
  description: string;
  risk: RiskClass;
  /** The zod schema every model-proposed argument object must satisfy. */
  input: Input;
  /**
   * The JSON Schema offered to providers (and digested in `session.started`) instead of one
   * derived from `input` — for a tool whose schema comes from elsewhere, such as an MCP server,
   * where a round trip through zod would lose detail. `input` must accept exactly what it
   * describes; `jsonSchemaInput(parameters)` builds such an `input`.
   */
  parameters?: Record<string, unknown>;
  run(input: z.infer<Input>, ctx: ToolContext): ToolResult | Promise<ToolResult>;
  /** Model-visible result size; head and tail are kept. Default {@link defaultMaxResultChars}. */
  maxResultChars?: number;
  /** Default 120 000. */
  timeoutMs?: number;
  /** Never overlaps any other call. */
  serial?: boolean;
  /** Safe to run again after a crash (only honoured for read-only tools). */
  idempotent?: boolean;
  /** The shell text a command tool will run (checked by command safety). */
  command?(input: z.infer<Input>): string;
  /** The path arguments of a call, confined to the workspace by the gate. */
  paths?(input: z.infer<Input>): string[];
  /**
   * A command tool whose commands run inside an OS sandbox (docs/security.md#the-command-sandbox-bubblewrap): the workspace the
   * only writable place, no network, credential directories and the log out of reach, nothing
   * outliving the command. From decisions version 4 only such a tool runs a command that is not
   * known-safe unasked (in `full-auto`); `workspaceTools({ sandbox })` sets it on `run_command`.
   * A host whose tool runs commands in its own container may declare it too — it is a promise
   * the gate relies on.
   */
  contained?: boolean;
  /**
   * The host's per-call rule (decisions version 7 on): `true` makes the gate ask a person about
   * this call where the policy would let it run (rule `host:needs-approval`); `false` leaves the
   * policy to decide. It never loosens what the policy asks, denies or blocks. It runs once per
   * call, before the gate decides, with the arguments as planned (when they held a secret, the real
   * ones while this process has them) — or a host-routed call's, as the host gave them — and its answer
   * is recorded as an input (`session.environment.observed.hostRules`), which replay takes as
   * logged. One that throws, or answers anything but a boolean, asks (`host:needs-approval-failed`)
   * and its error is recorded (docs/policy.md, "Per-call rules from the host").
   */
  needsApproval?(input: z.infer<Input>, ctx: NeedsApprovalContext): boolean | Promise<boolean>;
}

/** A tool as the runtime holds it: options resolved, defaults applied. */
export interface ToolDefinition<Input extends z.ZodType = z.ZodType> extends ToolOptions<Input> {
  maxResultChars: number;
  timeoutMs: number;
  serial: boolean;
  idempotent: boolean;
}

/**
 * The most characters of one tool result the model is shown (its head and tail) when the tool sets
 * no `maxResultChars`. Written only here: `defineTool`, the built-in workspace tools' output bound,
 * and the packetizing decision, the tool runner and host-routed calls (for a call whose tool the
 * registry no longer holds) all read it.
 *
 * @example
 * defineTool({ name: "read_file", input, run }).maxResultChars === defaultMaxResultChars; // true
 */
export const defaultMaxResultChars = 12_000;
export const defaultToolTimeoutMs = 120_000;

const toolNamePattern = /^[a-zA-Z0-9_-]{1,64}$/;

/**
 * Declares a tool the model may call.
 *
 * @example
 * const readFile = defineTool({
 *   name: "read_file", description: "Read a UTF-8 file", risk: "read-only-local",
 *   input: z.object({ path: z.string() }),
 *   run: async ({ path }) => fs.readFile(path, "utf8"),
 *   paths: ({ path }) => [path],
 * });
 */
export function defineTool<Input extends z.ZodType>(options: ToolOptions<Input>): ToolDefinition<Input> {
  if (!toolNamePattern.test(options.name)) {
    throw new TypeError(`tool name "${options.name}" must match ${toolNamePattern} (both providers accept only these)`);
  }
  if (!RiskClassSchema.safeParse(options.risk).success) {
    throw new TypeError(`tool "${options.name}" has an unknown risk class "${String(options.risk)}"`);
  }
  if (!(options.input instanceof z.ZodType)) {
    throw new TypeError(`tool "${options.name}" needs a zod schema as its input`);
  }
  if (typeof options.run !== "function") throw new TypeError(`tool "${options.name}" needs a run function`);
  if (options.needsApproval !== undefined && typeof options.needsApproval !== "function") throw new TypeError(`tool "${options.name}" has a needsApproval that is not a function`);
  // Both providers take only an object schema for a tool's arguments.
  const parameters: unknown = options.parameters;
  if (parameters !== undefined && (typeof parameters !== "object" || parameters === null || Array.isArray(parameters) || (parameters as { type?: unknown }).type !== "object")) {
    throw new TypeError(`tool "${options.name}" has parameters that are not a JSON Schema of an object ({ type: "object", ... })`);
  }
  return {
    ...options,
    maxResultChars: options.maxResultChars ?? defaultMaxResultChars,
    timeoutMs: options.timeoutMs ?? defaultToolTimeoutMs,
    serial: options.serial ?? false,
    idempotent: options.idempotent ?? false,
  };
}
