import { z } from "zod";

export const FinishReasonSchema = z.enum(["stop", "tool_calls", "length", "content_filter", "incomplete", "unknown"]);
export type FinishReason = z.infer<typeof FinishReasonSchema>;

export const ProviderFormatSchema = z.enum(["openai-chat", "anthropic-messages", "ai-sdk"]);
export type ProviderFormat = z.infer<typeof ProviderFormatSchema>;

/** A tool call as the provider finalized it, before turnlog normalizes its ID. */
export const RawToolCallSchema = z.object({
  index: z.number().int().nonnegative(),
  id: z.string().optional(),
  name: z.string().optional(),
  /** Redacted text when `argumentsRedacted`: the raw secret is never written. */
  argumentsText: z.string(),
  /** The arguments held a secret; the real text lives only in memory for the run. */
  argumentsRedacted: z.boolean().optional(),
}).meta({ id: "RawToolCall" });
export type RawToolCall = z.infer<typeof RawToolCallSchema>;

export const UsageSchema = z.object({
  inputTokens: z.number().int().nonnegative().optional(),
  outputTokens: z.number().int().nonnegative().optional(),
});
export type Usage = z.infer<typeof UsageSchema>;

export const ProviderFailureKindSchema = z.enum([
  "incomplete-stream",
  "transport",
  "timeout",
  "http-status",
  "truncated-tool-calls",
  "script-exhausted",
  "cancelled",
  /** The process died between `turn.provider.requested` and the response (written by recovery). */
  "interrupted",
]);
export type ProviderFailureKind = z.infer<typeof ProviderFailureKindSchema>;
