/**
 * The sessions the multi-host race test drives from several processes at once: their tools,
 * policy and provider script. Shared by the children that race (`race-session-child.ts`) and the
 * parent that checks and replays the log, so both hold the same tool registry snapshot.
 */
import { appendFileSync } from "node:fs";
import { setTimeout as sleep } from "node:timers/promises";
import { z } from "zod";
import { defineTool } from "../../src/index.js";
import type { PolicyInput, Provider, ToolDefinition } from "../../src/index.js";
import { scriptedProvider } from "../../src/testing/index.js";
import type { ScriptStep } from "../../src/testing/index.js";

export const raceFinalAnswer = "Charged A and D, looked up B and C, charged E.";

/**
 * Both tools record each run as one line `<sessionId> <callId>`, appended with O_APPEND (flag
 * "a"), so lines from racing processes never interleave. `charge` is not idempotent; `lookup` is
 * read-only and idempotent (the kind a crash recovery may run again: a race must not).
 */
export function raceTools(effectsFile: string, pause: () => number): ToolDefinition[] {
  const record = async (sessionId: string, callId: string) => {
    await sleep(pause());
    appendFileSync(effectsFile, `${sessionId} ${callId}\n`, { flag: "a" });
    await sleep(pause());
  };
  const charge = defineTool({
    name: "charge",
    description: "Charge an order (charging twice charges twice)",
    risk: "external-side-effect",
    input: z.object({ id: z.string() }),
    run: async ({ id }, context) => {
      await record(context.sessionId, context.callId);
      return `charged ${id}`;
    },
  });
  const lookup = defineTool({
    name: "lookup",
    description: "Look an order up",
    risk: "read-only-local",
    idempotent: true,
    input: z.object({ id: z.string() }),
    run: async ({ id }, context) => {
      await record(context.sessionId, context.callId);
      return `order ${id}: unpaid`;
    },
  });
  return [charge, lookup];
}

/** full-auto in a trusted workspace: every call runs without asking. */
export function racePolicy(workspaceRoot: string): PolicyInput {
  return { approvalMode: "full-auto", workspace: { root: workspaceRoot, trusted: true } };
}

const call = (name: string, id: string) => ({ name, arguments: JSON.stringify({ id }) });

/** The model's answers, by the number of responses the session already holds. */
export const raceScript: readonly ScriptStep[] = [
  { content: "Working.", toolCalls: [call("charge", "A"), call("lookup", "B"), call("lookup", "C"), call("charge", "D")] },
  { toolCalls: [call("charge", "E")] },
  { content: raceFinalAnswer },
];

/**
 * A scripted model shared by every process: its next answer is the one after the responses the
 * session's log already holds, so whichever host asks, the session follows one script. A child
 * drives one session at a time, so `responsesSoFar` counts those of the session it drives.
 */
export function raceProvider(responsesSoFar: () => Promise<number>, pause: () => number): Provider {
  return {
    id: "race-scripted",
    format: "openai-chat",
    async complete(request, options) {
      const answered = await responsesSoFar();
      await sleep(pause(), undefined, { signal: options.signal });
      return scriptedProvider(raceScript.slice(answered)).complete(request, options);
    },
  };
}
