import { z } from "zod";
import { RiskClassSchema } from "./risk.js";

/**
 * What `session.started` records of each tool: enough to tell, at replay, whether the tool set
 * a decision was made under is the one in force now.
 */
export const ToolSnapshotSchema = z.object({
  name: z.string(),
  description: z.string(),
  riskClass: RiskClassSchema,
  /** SHA-256 of the canonical JSON Schema of the tool's input. */
  schemaDigest: z.string(),
  /**
   * The JSON Schema of the tool's input, as the provider was offered it (recorded since decision
   * versions exist): replay without the host's code plans against it.
   */
  parameters: z.record(z.string(), z.unknown()).optional(),
  flags: z.object({
    serial: z.boolean(),
    idempotent: z.boolean(),
    /** A command tool: its shell text goes through command safety. */
    command: z.boolean(),
    /** Declares path arguments, confined to the workspace. */
    paths: z.boolean().optional(),
    /** A command tool that runs its commands in an OS sandbox (written only when true). */
    contained: z.boolean().optional(),
  }),
  maxResultChars: z.number().int().positive(),
  timeoutMs: z.number().int().positive(),
  /** The registration phase and who registered it (`host`, `mcp:<server>`, a provider's name). */
  phase: z.string().optional(),
  source: z.string().optional(),
}).meta({ id: "ToolSnapshot" });
export type ToolSnapshot = z.infer<typeof ToolSnapshotSchema>;

/** A tool as offered to a provider: name, description and JSON Schema of its input. */
export interface ProviderToolSchema {
  name: string;
  description: string;
  parameters: Record<string, unknown>;
}
