import fc from "fast-check";
import type { ScriptStep } from "../../src/testing/index.js";

/**
 * A scripted provider's tool call, for property tests of whole sessions: valid and invalid
 * arguments, unknown and prototype-named tools, and provider IDs that repeat or that turnlog
 * must replace.
 */
export const scriptedToolCall = fc.oneof(
  fc.record({ name: fc.constant("read_file"), arguments: fc.constantFrom('{"path":"a.txt"}', '{"path":"b.txt"}', '{"path":"nope.txt"}', "{bad", "[]", "") }),
  fc.record({ name: fc.constant("write_file"), arguments: fc.constantFrom('{"path":"c.txt","content":"x"}', '{"path":"a.txt","content":"y"}', '{"path":1}') }),
  fc.record({ name: fc.constantFrom("unknown_tool", "__proto__", "constructor", ""), arguments: fc.constant("{}") }),
  fc.record({ id: fc.constantFrom("call_1", "call_1", "bad id!", "x".repeat(50)), name: fc.constant("read_file"), arguments: fc.constant('{"path":"a.txt"}') }),
);

/** One step of a scripted provider: mostly tool calls, sometimes a failed attempt (retryable or not). */
export const scriptedStep: fc.Arbitrary<ScriptStep> = fc.oneof(
  { weight: 5, arbitrary: fc.record({ content: fc.constantFrom("", "working"), toolCalls: fc.array(scriptedToolCall, { minLength: 1, maxLength: 4 }) }) },
  { weight: 1, arbitrary: fc.record({ error: fc.record({ kind: fc.constantFrom("transport" as const, "http-status" as const), retryable: fc.boolean() }) }) },
);
