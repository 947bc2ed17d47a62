/**
 * The sessions of the `kill` soak family (soak/families/kill.ts): three sessions one host runs at
 * once on one LevelDB log, each with a runtime of its own (its policy, tools and model script).
 * Shared by the host child (`kill-host-child.ts`), the approver child (`kill-approver-child.ts`)
 * and the parent that checks and replays the log, so all hold the same tool registry snapshots.
 *
 * - `pay`: local tools, a model whose attempts fail transiently (so `turn.provider.failed` and a
 *   retry happen) and a history budget so small that the second message's turn compacts the first
 *   (`session.history.compacted`);
 * - `ship`: the tools of a real MCP server process (`mcp-effect-server.ts`), one with a side effect;
 * - `deploy`: `ask` mode, so its deploy waits for an approval another process gives.
 */
import { appendFileSync } from "node:fs";
import { setTimeout as sleep } from "node:timers/promises";
import { z } from "zod";
import { defineTool, ProviderError, sessionStream } from "../../src/index.js";
import type { EventLog, McpServerConfig, Provider, RuntimeOptions, ToolDefinition } from "../../src/index.js";
import { scriptedProvider } from "../../src/testing/index.js";
import type { ScriptStep } from "../../src/testing/index.js";

export const killSessionIds = ["pay", "ship", "deploy"] as const;
export type KillSessionId = (typeof killSessionIds)[number];

/** The user messages each session is sent, one `send` each, in order. */
export const killMessages: Record<KillSessionId, readonly string[]> = {
  pay: ["pay the orders", "and one more"],
  ship: ["ship the orders"],
  deploy: ["deploy v2"],
};

/** The answer of each session's last turn when it completes. */
export const killFinalAnswers: Record<KillSessionId, string> = {
  pay: "Paid P4.",
  ship: "Shipped S1, S2 and S3.",
  deploy: "Deployed v2.",
};

/** What a tool tells its host while it runs. */
export interface KillToolHooks {
  onBegin?(sessionId: string, callId: string, tool: string): void;
  onEffect?(sessionId: string, callId: string): void;
}

/** A step of a session's script: the answer, and how many attempts at it fail first (transiently). */
interface KillStep {
  answer: ScriptStep;
  failFirst?: number;
}

const call = (name: string, args: Record<string, string>) => ({ name, arguments: JSON.stringify(args) });
/** Enough words that a few answers overflow the `pay` session's history budget. */
const chatter = (text: string) => `${text} `.repeat(30).trim();

const scripts: Record<KillSessionId, readonly KillStep[]> = {
  pay: [
    { answer: { content: chatter("Charging P1."), toolCalls: [call("charge", { id: "P1" }), call("read_order", { id: "P1" })] }, failFirst: 1 },
    { answer: { content: chatter("Charging P2."), toolCalls: [call("read_order", { id: "P2" }), call("charge", { id: "P2" })] } },
    { answer: { content: chatter("Charging P3."), toolCalls: [call("charge", { id: "P3" })] }, failFirst: 2 },
    { answer: { content: "Paid P1, P2 and P3." } },
    { answer: { content: chatter("Charging P4."), toolCalls: [call("read_order", { id: "P4" }), call("charge", { id: "P4" })] }, failFirst: 1 },
    { answer: { content: killFinalAnswers.pay } },
  ],
  ship: [
    { answer: { content: "Shipping.", toolCalls: [call("mcp__effects__stock", { order: "S1" }), call("mcp__effects__ship", { order: "S1" }), call("mcp__effects__ship", { order: "S2" })] } },
    { answer: { toolCalls: [call("mcp__effects__ship", { order: "S3" }), call("mcp__effects__stock", { order: "S3" })] }, failFirst: 1 },
    { answer: { content: killFinalAnswers.ship } },
  ],
  deploy: [
    { answer: { content: "Deploying.", toolCalls: [call("read_order", { id: "D1" }), call("deploy", { version: "v2" })] } },
    { answer: { content: killFinalAnswers.deploy } },
  ],
};

/** What the model's n-th answer of a session costs it to think: 20–50 ms, fixed per answer. */
const thinkingMs = (answer: number) => 20 + ((answer * 17) % 31);

/** How a host learns where the model is, to report it. */
export interface KillProviderHooks {
  onCall?(sessionId: string, answer: number): void;
  onTransientFailure?(sessionId: string, answer: number): void;
}

/**
 * A slow scripted model that continues the session's script where the log says it is (the
 * answers the stream already holds), failing the first `failFirst` attempts at an answer with a
 * retryable transport error — counted from the log too, so a restarted host does not fail them
 * again. A crash-interrupted attempt counts as a failed one.
 */
export function killProvider(log: EventLog, sessionId: KillSessionId, hooks: KillProviderHooks = {}): Provider {
  const script = scripts[sessionId];
  return {
    id: `kill-${sessionId}`,
    format: "openai-chat",
    async complete(request, options) {
      const events = await log.readStream(sessionStream(sessionId), { maxCount: Number.MAX_SAFE_INTEGER });
      const lastAnswer = events.findLastIndex((event) => event.type === "turn.provider.responded");
      const answered = events.filter((event) => event.type === "turn.provider.responded").length;
      const failedSince = events.slice(lastAnswer + 1).filter((event) => event.type === "turn.provider.failed").length;
      hooks.onCall?.(sessionId, answered);
      await sleep(thinkingMs(answered), undefined, { signal: options.signal });
      if (failedSince < (script[answered]?.failFirst ?? 0)) {
        hooks.onTransientFailure?.(sessionId, answered);
        throw new ProviderError({ kind: "transport", retryable: true, message: "connection reset (injected)" });
      }
      return scriptedProvider(script.slice(answered).map((step) => step.answer)).complete(request, options);
    },
  };
}

/**
 * The local tools. `charge` and `deploy` have a side effect the log cannot undo: each appends
 * `<sessionId> <callId>` to `effectsFile` between two 30 ms sleeps, so a kill can land before the
 * effect or after it, before the outcome is logged. `read_order` is read-only and idempotent.
 */
export function killTools(effectsFile: string, hooks: KillToolHooks = {}): ToolDefinition[] {
  const effect = async (sessionId: string, callId: string, tool: string) => {
    hooks.onBegin?.(sessionId, callId, tool);
    await sleep(30);
    appendFileSync(effectsFile, `${sessionId} ${callId}\n`, { flag: "a" });
    hooks.onEffect?.(sessionId, callId);
    await sleep(30);
  };
  return [
    defineTool({
      name: "charge",
      description: "Charge an order (charging twice charges twice)",
      risk: "external-side-effect",
      input: z.object({ id: z.string() }),
      run: async ({ id }, context) => {
        await effect(context.sessionId, context.callId, "charge");
        return `charged order ${id}`;
      },
    }),
    defineTool({
      name: "deploy",
      description: "Deploy a version (a person approves it)",
      risk: "external-side-effect",
      input: z.object({ version: z.string() }),
      run: async ({ version }, context) => {
        await effect(context.sessionId, context.callId, "deploy");
        return `deployed ${version}`;
      },
    }),
    defineTool({
      name: "read_order",
      description: "Read an order",
      risk: "read-only-local",
      idempotent: true,
      input: z.object({ id: z.string() }),
      run: async ({ id }, context) => {
        hooks.onBegin?.(context.sessionId, context.callId, "read_order");
        await sleep(10);
        return `order ${id}: 10 EUR`;
      },
    }),
  ];
}

/** Where the host finds its MCP server, and the file the server's side effects go to. */
export interface KillMcpServer {
  /** The Node arguments that start `mcp-effect-server.ts` (a bundle, or `--import tsx <path>`). */
  nodeArguments: readonly string[];
  effectsFile: string;
  onStderr?: (text: string) => void;
}

export function killMcpServerConfig(server: KillMcpServer): McpServerConfig {
  return {
    name: "effects",
    command: process.execPath,
    args: [...server.nodeArguments, server.effectsFile],
    ...(server.onStderr !== undefined ? { onStderr: server.onStderr } : {}),
  };
}

/**
 * The runtime options of one session (everything but the log and the provider), the same in every
 * process that opens it. `ship` gets its tools from the MCP server, when one is given.
 */
export function killRuntimeOptions(
  sessionId: KillSessionId,
  setup: { workspace: string; effectsFile: string; hooks?: KillToolHooks; mcp?: KillMcpServer },
): Omit<RuntimeOptions, "log" | "provider"> {
  const common = {
    // Retries at once (the waits are not what is tested) and often (a kill inside a provider call
    // is one more failed attempt).
    providerAttempts: 30,
    providerRetry: { baseDelayMs: 2, maxDelayMs: 10 },
  };
  const tools = killTools(setup.effectsFile, setup.hooks);
  switch (sessionId) {
    case "pay":
      return { ...common, tools, policy: { approvalMode: "full-auto", workspace: { root: setup.workspace, trusted: true } }, history: { maxTokens: 400 } };
    case "ship":
      return { ...common, ...(setup.mcp !== undefined ? { mcpServers: [killMcpServerConfig(setup.mcp)] } : {}), policy: { approvalMode: "full-auto", workspace: { root: setup.workspace, trusted: true } } };
    case "deploy":
      return { ...common, tools, policy: { approvalMode: "ask", workspace: { root: setup.workspace, trusted: true } } };
  }
}
