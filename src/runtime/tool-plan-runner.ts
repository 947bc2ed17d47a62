import type { z } from "zod";
import type { TurnlogEvent } from "../contracts/events.js";
import type { Clock } from "../log/event-log.js";
import type { CallState } from "../projections/session-state.js";
import type { ToolContext, ToolDefinition } from "../tools/define-tool.js";
import type { ToolRegistry } from "../tools/tool-registry.js";

export interface ToolRunEnvironment {
  registry: ToolRegistry;
  clock: Clock;
  sessionId: string;
  workspace: ToolContext["workspace"];
  signal: AbortSignal;
}

/**
 * Runs one cleared call whose `turn.tool.started` is already durable, and returns the event that
 * ends it: exactly one `turn.tool.succeeded` or `turn.tool.failed`. A tool that throws, hangs past
 * its timeout or returns garbage fails alone; it never takes down the loop. Never throws.
 */
export async function runTool(call: CallState, input: unknown, turnId: string, env: ToolRunEnvironment): Promise<TurnlogEvent> {
  const started = env.clock.now();
  const failed = (code: string, message: string): TurnlogEvent => toolFailed(call, turnId, code, message, Math.max(0, env.clock.now() - started));
  const tool = env.registry.get(call.name);
  if (tool === undefined) return failed("unavailable-tool", `tool "${call.name}" is not registered in this runtime`);
  const parsed = (tool.input as z.ZodType).safeParse(input);
  if (!parsed.success) return failed("invalid-input", parsed.error.message);

  const timeout = AbortSignal.timeout(tool.timeoutMs);
  const signal = AbortSignal.any([env.signal, timeout]);
  try {
    const result = await withAbort(invoke(tool, parsed.data, { signal, callId: call.callId, sessionId: env.sessionId, workspace: env.workspace }), signal);
    const durationMs = Math.max(0, env.clock.now() - started);
    if (typeof result === "string") return { type: "turn.tool.succeeded", data: { turnId, callId: call.callId, output: result, durationMs } };
    if (typeof result === "object" && result !== null && typeof result.content === "string" && typeof result.ok === "boolean") {
      if (!result.ok) return failed("tool-error", result.content);
      const data = { turnId, callId: call.callId, output: result.content, durationMs };
      return { type: "turn.tool.succeeded", data: result.metadata === undefined ? data : { ...data, metadata: result.metadata } };
    }
    return failed("invalid-result", "the tool returned neither a string nor { ok, content }");
  } catch (error) {
    if (timeout.aborted) return failed("timeout", `the tool did not finish within ${tool.timeoutMs} ms`);
    if (env.signal.aborted) return failed("aborted", "the run was cancelled");
    return failed("tool-exception", error instanceof Error ? error.message : String(error));
  }
}

/** The event that ends a call that failed (or could not start). */
export function toolFailed(call: CallState, turnId: string, code: string, message: string, durationMs = 0): TurnlogEvent {
  return { type: "turn.tool.failed", data: { turnId, callId: call.callId, code, message, durationMs } };
}

async function invoke(tool: ToolDefinition, input: unknown, ctx: ToolContext) {
  return tool.run(input, ctx);
}

/** Settles when the promise does or the signal aborts, whichever is first: a hung tool cannot hold the loop. */
function withAbort<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener("abort", onAbort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener("abort", onAbort);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener("abort", onAbort);
        reject(error);
      },
    );
  });
}
