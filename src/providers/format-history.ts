import type { ProviderFormat } from "../contracts/provider.js";
import { buildFormatHistory, buildFormatHistoryFromScratch, type FormatHistoryOptions, type NativeHistory } from "../history/native-history.js";
import type { HistoryCompressor } from "../history/history-compressor.js";
import type { HistorySource } from "../history/history-units.js";
import { buildRequestHistory as buildRequestHistoryIn, sessionHistory as sessionHistoryIn } from "../history/session-history.js";
import type { SessionState } from "../projections/session-state.js";
import { providerFormat, type FormatMessage } from "./formats.js";

/*
 * The history builders that take a format by its recorded name. history/ is format-neutral and
 * takes a format's adapter; these find it in the registry (formats.ts), so the read API, the
 * runtime, the decider and a host name a format the way the log does.
 */

export interface NativeHistoryOptions extends FormatHistoryOptions {
  /** The wire format to write, by name. */
  format: ProviderFormat;
}

/**
 * Builds a provider request history from the session-state projection in a named format
 * (`buildFormatHistory`, src/history/native-history.ts, with the format's adapter).
 *
 * @example
 * const { messages, diagnostics, compaction } = buildNativeHistory(session.state(), {
 *   format: "openai-chat", provider: { id: "openai", format: "openai-chat" }, maxTokens: 8_000,
 * });
 */
export function buildNativeHistory<Name extends ProviderFormat>(source: HistorySource, options: NativeHistoryOptions & { format: Name }): NativeHistory<FormatMessage<Name>> {
  return buildFormatHistory(providerFormat(options.format), source, options);
}

/**
 * `buildNativeHistory` from scratch: the reference the incremental build is tested against
 * (`buildFormatHistoryFromScratch`).
 *
 * @example
 * const reference = buildNativeHistoryFromScratch(state, { format: "openai-chat", provider, maxTokens: 8_000 });
 */
export function buildNativeHistoryFromScratch<Name extends ProviderFormat>(source: HistorySource, options: NativeHistoryOptions & { format: Name }): NativeHistory<FormatMessage<Name>> {
  return buildFormatHistoryFromScratch(providerFormat(options.format), source, options);
}

/**
 * The request history for the session's own provider, in its recorded format (see
 * src/history/session-history.ts).
 *
 * @example
 * const built = buildRequestHistory(state, compressor);
 */
export function buildRequestHistory(state: SessionState, compressor?: HistoryCompressor, decisionsVersion: number = state.decisionsVersion): NativeHistory {
  return buildRequestHistoryIn(state, providerFormat, compressor, decisionsVersion);
}

/**
 * The history in any format, by name, for inspection (`session.history`, `turnlog history`; see
 * src/history/session-history.ts).
 *
 * @example
 * const { messages, diagnostics } = sessionHistory(state, { format: "anthropic-messages", maxTokens: 8_000 });
 */
export function sessionHistory<Name extends ProviderFormat>(
  state: SessionState,
  options: { format: Name; maxTokens?: number },
  compressor?: HistoryCompressor,
  decisionsVersion: number = state.decisionsVersion,
): NativeHistory<FormatMessage<Name>> {
  return sessionHistoryIn(state, providerFormat(options.format), options.maxTokens !== undefined ? { maxTokens: options.maxTokens } : {}, compressor, decisionsVersion);
}
