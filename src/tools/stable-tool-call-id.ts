import { canonicalJson, sha256 } from "../util/digest.js";

export interface StableToolCallIdInput {
  sessionId: string;
  turnSeq: number;
  index: number;
  name: string;
  argumentsText: string;
}

/**
 * A deterministic tool call ID (docs/design.md#3-events-and-the-deciders): the same on every replay, distinct for the same
 * call in two turns, and valid for both OpenAI (≤ 40 characters) and Anthropic
 * (`^[a-zA-Z0-9_-]+$`): `call_` + 32 hex digits of SHA-256.
 *
 * @example
 * stableToolCallId({ sessionId: "s1", turnSeq: 2, index: 0, name: "read_file", argumentsText: "{}" })
 */
export function stableToolCallId(input: StableToolCallIdInput): string {
  const { sessionId, turnSeq, index, name, argumentsText } = input;
  return `call_${sha256(canonicalJson({ sessionId, turnSeq, index, name, argumentsText })).slice(0, 32)}`;
}

const portableIdPattern = /^[a-zA-Z0-9_-]{1,40}$/;

/** True when a provider's ID can be replayed to either provider unchanged. */
export function isPortableToolCallId(id: string): boolean {
  return portableIdPattern.test(id);
}
