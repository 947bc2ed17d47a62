import type { EventOf } from "../contracts/events.js";
import type { ProviderFormat } from "../contracts/provider.js";
import type { SessionState } from "../projections/session-state.js";
import type { HistoryCompressor } from "./history-compressor.js";
import type { HistoryFormat } from "./history-format.js";
import { buildFormatHistory, type NativeHistory } from "./native-history.js";
import { tokenEstimatorFor } from "./token-estimator.js";

/** A `session.diagnostic.recorded` payload: counts and reason enums only. */
export type DiagnosticRecord = EventOf<"session.diagnostic.recorded">["data"];

/** The token budget of a session that recorded none (sessions from before it was recorded). */
export const defaultHistoryMaxTokens = 100_000;

/**
 * The request history for the session's own provider, exactly as the turn loop builds it: the
 * recorded budget and system text, the echo kept for the provider that produced it, and tokens
 * counted as `decisionsVersion` counts them (default: the session's own; an upgrade preview passes
 * another). `formats` finds the provider's format by name (the registry, src/providers/formats.ts).
 *
 * @example
 * const built = buildRequestHistory(state, providerFormat, compressor);
 */
export function buildRequestHistory(
  state: SessionState,
  formats: (name: ProviderFormat) => HistoryFormat,
  compressor?: HistoryCompressor,
  decisionsVersion: number = state.decisionsVersion,
): NativeHistory {
  const provider = state.provider;
  if (provider === null) throw new Error("the session has no provider");
  return sessionHistory(state, formats(provider.format), {}, compressor, decisionsVersion);
}

/**
 * The history in any provider's format, for inspection (`session.history`, `turnlog history`):
 * a replay echo is kept only when the format is the session's own provider's. Tokens are counted
 * with the built-in estimator of the session's decisions version (`tokenEstimatorFor`): from
 * version 6 a long pre-tokenizer piece is counted in bounded chunks, before it the whole text.
 *
 * @example
 * const { messages, diagnostics } = sessionHistory(state, providerFormat("anthropic-messages"), { maxTokens: 8_000 });
 */
export function sessionHistory<Message>(
  state: SessionState,
  format: HistoryFormat<Message>,
  options: { maxTokens?: number },
  compressor?: HistoryCompressor,
  decisionsVersion: number = state.decisionsVersion,
): NativeHistory<Message> {
  const recorded = state.provider;
  const settings = state.history ?? { maxTokens: defaultHistoryMaxTokens };
  // Another format means another provider: its echo is never sent there.
  const target = recorded !== null && recorded.format === format.name ? { id: recorded.id, format: recorded.format } : { id: `other:${format.name}`, format: format.name };
  return buildFormatHistory(format, state, {
    provider: target,
    maxTokens: options.maxTokens ?? settings.maxTokens,
    estimator: tokenEstimatorFor(decisionsVersion),
    ...(settings.system !== undefined ? { system: settings.system } : {}),
    ...(compressor !== undefined ? { compressor } : {}),
  });
}
