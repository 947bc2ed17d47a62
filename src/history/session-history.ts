import type { EventOf } from "../contracts/events.js";
import type { ProviderFormat } from "../contracts/provider.js";
import type { SessionState } from "../projections/session-state.js";
import type { HistoryCompressor } from "./history-compressor.js";
import { buildNativeHistory } from "./native-history.js";
import { tokenEstimatorFor } from "./token-estimator.js";

/** A `session.diagnostic.recorded` payload: counts and reason enums only. */
export type DiagnosticRecord = EventOf<"session.diagnostic.recorded">["data"];

/** The token budget of a session that recorded none (sessions from before it was recorded). */
export const defaultHistoryMaxTokens = 100_000;

/**
 * The request history for the session's own provider, exactly as the turn loop builds it: the
 * recorded budget and system text, the echo kept for the provider that produced it, and tokens
 * counted as `decisionsVersion` counts them (default: the session's own; an upgrade preview passes
 * another).
 */
export function buildRequestHistory(state: SessionState, compressor?: HistoryCompressor, decisionsVersion: number = state.decisionsVersion) {
  const provider = state.provider;
  if (provider === null) throw new Error("the session has no provider");
  return sessionHistory(state, { format: provider.format }, compressor, decisionsVersion);
}

/**
 * The history in any provider's format, for inspection (`session.history`, `turnlog history`):
 * a replay echo is kept only when the format is the session's own provider's. Tokens are counted
 * with the built-in estimator of the session's decisions version (`tokenEstimatorFor`): from
 * version 6 a long pre-tokenizer piece is counted in bounded chunks, before it the whole text.
 */
export function sessionHistory(
  state: SessionState,
  options: { format: ProviderFormat; maxTokens?: number },
  compressor?: HistoryCompressor,
  decisionsVersion: number = state.decisionsVersion,
) {
  const recorded = state.provider;
  const settings = state.history ?? { maxTokens: defaultHistoryMaxTokens };
  // Another format means another provider: its echo is never sent there.
  const target = recorded !== null && recorded.format === options.format ? { id: recorded.id, format: recorded.format } : { id: `other:${options.format}`, format: options.format };
  return buildNativeHistory(state, {
    format: options.format,
    provider: target,
    maxTokens: options.maxTokens ?? settings.maxTokens,
    estimator: tokenEstimatorFor(decisionsVersion),
    ...(settings.system !== undefined ? { system: settings.system } : {}),
    ...(compressor !== undefined ? { compressor } : {}),
  });
}
