/**
 * The model of the worker tests (`runtime.resumeAll`, test/runtime/resume-all*.test.ts), which
 * answers any number of sessions from one script; their tools and policy are the approval tests'
 * (test/support/approval-host-script.ts: a `deploy` a person approves, each run a line
 * `<sessionId> <callId>` in a file outside the log).
 */
import { approvalFinalAnswer } from "./approval-host-script.js";
import type { Provider } from "../../src/index.js";
import { scriptedProvider } from "../../src/testing/index.js";

/**
 * The model of every session: its next answer is the one after the answers the request's history
 * already holds (one assistant message each), so one provider serves many sessions, in any
 * process: first a `deploy` call, then the final answer.
 */
export function workerProvider(): Provider {
  const script = [{ content: "Deploying.", toolCalls: [{ name: "deploy", arguments: '{"version":"v2"}' }] }, { content: approvalFinalAnswer }];
  return {
    id: "worker-scripted",
    format: "openai-chat",
    async complete(request, options) {
      const answered = request.messages.filter((message) => (message as { role?: string }).role === "assistant").length;
      return scriptedProvider(script.slice(answered)).complete(request, options);
    },
  };
}
