import type { FinishReason, ProviderFailureKind, ProviderFormat, Usage } from "../contracts/provider.js";
import type { ProviderToolSchema } from "../contracts/tools.js";

/** What the runtime asks of a provider: messages in the provider's own format, tools, system. */
export interface ProviderRequest {
  messages: unknown[];
  tools: ProviderToolSchema[];
  system?: string;
}

/** A tool call of a finalized response. `arguments` is the JSON text as the model wrote it. */
export interface FinalizedToolCall {
  id?: string;
  name?: string;
  arguments: string;
}

/** A provider's response once its stream (if any) has ended properly. */
export interface FinalizedResponse {
  content: string;
  toolCalls: FinalizedToolCall[];
  /** Default: `tool_calls` when there are tool calls, else `stop`. */
  finishReason?: FinishReason;
  usage?: Usage;
  echo?: Record<string, unknown>;
  /**
   * The strings in `echo` that are the provider's ciphertext — encrypted reasoning, thinking and
   * thought signatures, redacted thinking — which only the provider can read and which must go back
   * byte for byte. They are recorded as they are and left out of the echo's secret scan: random
   * base64 of a few kilobytes matches some key format often enough to drop a turn's reasoning, and
   * no text the model wrote can be read out of them (docs/security.md, "Provider ciphertext").
   */
  echoCiphertext?: readonly string[];
}

/**
 * What a host implements to plug in any model. Streaming adapters run their chunks through the
 * finalizers and resolve with the finalized response.
 */
export interface Provider {
  id: string;
  format: ProviderFormat;
  complete(request: ProviderRequest, options: { signal: AbortSignal; onDelta?: (text: string) => void }): Promise<FinalizedResponse>;
}
