/**
 * The sessions of the worker tests (`runtime.resumeAll`, test/runtime/resume-all*.test.ts): a
 * `deploy` tool a person approves (`ask` mode) that records each run as a line
 * `<sessionId> <callId>` in a file outside the log, and a model that answers any number of
 * sessions from one script. Shared by the host that parks sessions, the process that answers them,
 * the workers that pick them up and the test that replays them, so all offer the same tools.
 */
import { appendFileSync } from "node:fs";
import { z } from "zod";
import { defineTool } from "../../src/index.js";
import type { PolicyInput, Provider, ToolDefinition } from "../../src/index.js";
import { scriptedProvider } from "../../src/testing/index.js";

export const workerFinalAnswer = "Deployed v2.";

/** `deploy` (asks a person) appends `<sessionId> <callId>` to `effectsFile` each time it runs. */
export function workerTools(effectsFile: string): ToolDefinition[] {
  return [
    defineTool({
      name: "deploy",
      description: "Deploy a version (a person approves it)",
      risk: "external-side-effect",
      input: z.object({ version: z.string() }),
      run: ({ version }, context) => {
        appendFileSync(effectsFile, `${context.sessionId} ${context.callId}\n`, { flag: "a" });
        return `deployed ${version}`;
      },
    }),
  ];
}

export function workerPolicy(workspaceRoot: string): PolicyInput {
  return { approvalMode: "ask", workspace: { root: workspaceRoot, trusted: true } };
}

/**
 * The model of every session: its next answer is the one after the answers the request's history
 * already holds (one assistant message each), so one provider serves many sessions, in any
 * process: first a `deploy` call, then the final answer.
 */
export function workerProvider(): Provider {
  const script = [{ content: "Deploying.", toolCalls: [{ name: "deploy", arguments: '{"version":"v2"}' }] }, { content: workerFinalAnswer }];
  return {
    id: "worker-scripted",
    format: "openai-chat",
    async complete(request, options) {
      const answered = request.messages.filter((message) => (message as { role?: string }).role === "assistant").length;
      return scriptedProvider(script.slice(answered)).complete(request, options);
    },
  };
}
