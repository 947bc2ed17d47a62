/**
 * The session of the two-process approval test: a `deploy` tool that asks for approval (in `ask`
 * mode) and records each run as a line in a file, and a model that continues its script from the
 * log. Shared by the host that parks the session (`approval-host-child.ts`) and the test process
 * that answers it, so both offer the same tools and provider.
 */
import { appendFileSync } from "node:fs";
import { z } from "zod";
import { defineTool, sessionStream } from "../../src/index.js";
import type { EventLog, PolicyInput, Provider, ToolDefinition } from "../../src/index.js";
import { scriptedProvider } from "../../src/testing/index.js";

export const approvalSessionId = "deploy-1";
export const approvalFinalAnswer = "Deployed v2.";

export function approvalTools(effectsFile: string): ToolDefinition[] {
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

export function approvalPolicy(workspaceRoot: string): PolicyInput {
  return { approvalMode: "ask", workspace: { root: workspaceRoot, trusted: true } };
}

/** The model: its next answer is the one after the responses the session's log already holds. */
export function approvalProvider(log: EventLog): Provider {
  const script = [{ content: "Deploying.", toolCalls: [{ name: "deploy", arguments: '{"version":"v2"}' }] }, { content: approvalFinalAnswer }];
  return {
    id: "approval-scripted",
    format: "openai-chat",
    async complete(request, options) {
      const answered = (await log.readStream(sessionStream(approvalSessionId))).filter((event) => event.type === "turn.provider.responded").length;
      return scriptedProvider(script.slice(answered)).complete(request, options);
    },
  };
}
