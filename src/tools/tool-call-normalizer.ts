import type { EventOf, NormalizedCall } from "../contracts/events.js";
import type { FinishReason, RawToolCall } from "../contracts/provider.js";
import { isPortableToolCallId, stableToolCallId } from "./stable-tool-call-id.js";

export interface NormalizeToolCallsInput {
  sessionId: string;
  turnId: string;
  turnSeq: number;
  content: string;
  toolCalls: readonly RawToolCall[];
  finishReason: FinishReason;
  /** IDs already used earlier in the session (only `has` is asked: no copy of a long session's IDs). */
  usedIds: { has(id: string): boolean };
}

/**
 * Turns a provider's raw tool calls into the persisted provider tool-call turn: every call gets
 * one ID that flows everywhere after (docs/design.md#3-events-and-the-deciders). The provider's ID is kept when it is valid
 * for both providers and not yet used in the session; otherwise one is derived, and the original
 * is recorded.
 */
export function normalizeToolCalls(input: NormalizeToolCallsInput): EventOf<"turn.tool_calls.normalized">["data"] {
  const taken = new Set<string>();
  const used = { has: (id: string) => taken.has(id) || input.usedIds.has(id) };
  const calls: NormalizedCall[] = [...input.toolCalls]
    .sort((a, b) => a.index - b.index)
    .map((call) => {
      const name = call.name ?? "";
      const keep = call.id !== undefined && isPortableToolCallId(call.id) && !used.has(call.id);
      let id = keep ? (call.id as string) : stableToolCallId({ ...input, index: call.index, name, argumentsText: call.argumentsText });
      // A derived ID can only collide with a provider ID that happens to look derived; salt until free.
      for (let salt = 1; used.has(id); salt += 1) {
        id = stableToolCallId({ ...input, index: call.index, name: `${name}#${salt}`, argumentsText: call.argumentsText });
      }
      taken.add(id);
      const normalized: NormalizedCall = {
        index: call.index,
        id,
        idSource: keep ? "provider" : "derived",
        name,
        argumentsText: call.argumentsText,
      };
      if (call.argumentsRedacted) normalized.argumentsRedacted = true;
      if (call.id !== undefined) normalized.providerId = call.id;
      return normalized;
    });
  // A group is replayed natively only when nothing in it makes the provider's copy unsafe.
  const unsafeReasons = [
    ...(input.finishReason === "length" ? ["length_truncated"] : []),
    ...(calls.some((call) => call.argumentsRedacted) ? ["unsafe_arguments"] : []),
  ];
  return { turnId: input.turnId, content: input.content, calls, nativeReplaySafe: unsafeReasons.length === 0, unsafeReasons };
}
