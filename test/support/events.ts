import type { EventOf, TurnlogEvent } from "../../src/contracts/events.js";
import { resolveBudgets } from "../../src/contracts/budgets.js";
import { resolvePolicy } from "../../src/policy/default-policy.js";

/** Small builders for the events of a session, so specs read as the story they tell. */
export const sessionStarted = (overrides: Partial<EventOf<"session.started">["data"]> = {}): EventOf<"session.started"> => ({
  type: "session.started",
  data: {
    sessionId: "s1",
    policy: resolvePolicy({ workspace: { root: "/workspace", trusted: true } }),
    tools: [],
    budgets: resolveBudgets(),
    concurrency: 4,
    provider: { id: "scripted", format: "openai-chat", maxAttempts: 2 },
    ...overrides,
  },
});

export const userMessage = (content = "hello"): TurnlogEvent => ({ type: "session.user_message.added", data: { content } });

export const turnStarted = (turnSeq = 1, iteration = turnSeq): TurnlogEvent => ({
  type: "turn.started",
  data: { turnId: `turn-${turnSeq}`, turnSeq, iteration },
});

export const providerRequested = (attempt = 1, turnId = "turn-1"): TurnlogEvent => ({
  type: "turn.provider.requested",
  data: { turnId, attempt, providerId: "scripted", format: "openai-chat", messageCount: 1, toolNames: [] },
});

export const providerResponded = (
  toolCalls: { id?: string; name?: string; argumentsText: string }[] = [],
  content = "",
  turnId = "turn-1",
  attempt = 1,
): TurnlogEvent => ({
  type: "turn.provider.responded",
  data: {
    turnId,
    attempt,
    content,
    toolCalls: toolCalls.map((call, index) => ({ index, ...call })),
    finishReason: toolCalls.length > 0 ? "tool_calls" : "stop",
  },
});

export const providerFailed = (retryable: boolean, attempt = 1): TurnlogEvent => ({
  type: "turn.provider.failed",
  data: { turnId: "turn-1", attempt, kind: retryable ? "transport" : "http-status", retryable },
});

export const normalized = (ids: string[], names: string[] = ids.map(() => "read_file")): TurnlogEvent => ({
  type: "turn.tool_calls.normalized",
  data: {
    turnId: "turn-1",
    content: "",
    calls: ids.map((id, index) => ({ index, id, idSource: "provider", providerId: id, name: names[index] ?? "read_file", argumentsText: "{}" })),
    nativeReplaySafe: true,
    unsafeReasons: [],
  },
});

export const planned = (ids: string[]): TurnlogEvent => ({
  type: "turn.tool_calls.planned",
  data: { turnId: "turn-1", plans: ids.map((callId) => ({ callId, status: "planned", tool: "read_file", input: {} })) },
});

export const gated = (decisions: Record<string, "allow" | "ask" | "deny" | "block">): TurnlogEvent => ({
  type: "turn.tool_calls.gated",
  data: {
    turnId: "turn-1",
    approvalMode: "ask",
    decisions: Object.entries(decisions).map(([callId, decision]) => ({ callId, decision, rule: "mode:ask", riskClass: "read-only-local", fingerprint: "f" })),
  },
});

export const granted = (callId: string): TurnlogEvent => ({
  type: "turn.approval.granted",
  data: { turnId: "turn-1", callId, fingerprint: "f", by: "reviewer", scope: "call" },
});

export const denied = (callId: string): TurnlogEvent => ({
  type: "turn.approval.denied",
  data: { turnId: "turn-1", callId, fingerprint: "f", by: "reviewer", scope: "call" },
});

export const toolStarted = (callId: string, group = 0): TurnlogEvent => ({
  type: "turn.tool.started",
  data: { turnId: "turn-1", callId, tool: "read_file", group },
});

export const toolSucceeded = (callId: string): TurnlogEvent => ({
  type: "turn.tool.succeeded",
  data: { turnId: "turn-1", callId, output: "ok", durationMs: 1 },
});

export const toolFailed = (callId: string): TurnlogEvent => ({
  type: "turn.tool.failed",
  data: { turnId: "turn-1", callId, code: "tool-exception", message: "boom", durationMs: 1 },
});

export const toolInterrupted = (callId: string): TurnlogEvent => ({ type: "turn.tool.interrupted", data: { turnId: "turn-1", callId } });

export const packetized = (): TurnlogEvent => ({ type: "turn.results.packetized", data: { turnId: "turn-1", packets: [] } });

export const turnCompleted = (text = "done"): TurnlogEvent => ({ type: "turn.completed", data: { turnId: "turn-1", text } });
export const turnContinued = (): TurnlogEvent => ({ type: "turn.continued", data: { turnId: "turn-1", reason: "tool-results" } });
export const turnStopped = (reason = "cancelled"): TurnlogEvent => ({ type: "turn.stopped", data: { turnId: "turn-1", reason } });
export const turnFailed = (reason = "provider:http-status"): TurnlogEvent => ({ type: "turn.failed", data: { turnId: "turn-1", reason } });
