/**
 * A session that touches every kind of span: a call held for approval and approved, a call denied
 * by a person, one denied by policy, a rejected call, a failing tool, a provider attempt that fails
 * and is retried, a second send, and a host-routed call.
 */
import { z } from "zod";
import { createRuntime, defineTool, type EventLog, type OtelTracer, type Runtime } from "../../../src/index.js";
import { scriptedProvider } from "../../../src/testing/index.js";

export const scenarioSecret = "sk-proj-TESTONLY0a1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8S9t0U1v2W3x4Y5z6";

export function scenarioTools(seen: { activeSpan?: () => string | undefined; spans: (string | undefined)[] } = { spans: [] }) {
  const files = new Map([
    ["a.txt", "alpha"],
    ["env.txt", `OPENAI_API_KEY=${scenarioSecret}`],
  ]);
  return [
    defineTool({
      name: "read_file",
      description: "Read a file",
      risk: "read-only-local",
      input: z.object({ path: z.string() }),
      run: ({ path }) => {
        seen.spans.push(seen.activeSpan?.());
        const content = files.get(path);
        if (content === undefined) throw new Error(`no such file: ${path}`);
        return content;
      },
    }),
    defineTool({
      name: "write_file",
      description: "Write a file",
      risk: "workspace-write",
      input: z.object({ path: z.string(), content: z.string() }),
      run: ({ path, content }) => {
        files.set(path, content);
        return `wrote ${path}`;
      },
    }),
    defineTool({
      name: "remove_all",
      description: "Remove everything",
      risk: "destructive-local",
      input: z.object({}),
      run: () => "removed",
    }),
  ];
}

/** The scenario's provider; `from` skips the answers an earlier runtime already consumed. */
export function scenarioProvider(from = 0) {
  return scriptedProvider(
    [
      {
        content: "Let me look.",
        toolCalls: [
          { id: "call_read", name: "read_file", arguments: '{"path":"a.txt"}' },
          { id: "call_secret", name: "read_file", arguments: '{"path":"env.txt"}' },
          { id: "call_write", name: "write_file", arguments: '{"path":"b.txt","content":"beta"}' },
          { id: "call_missing", name: "read_file", arguments: '{"path":"missing.txt"}' },
          { id: "call_remove", name: "remove_all", arguments: "{}" },
          { id: "call_unknown", name: "no_such_tool", arguments: "{}" },
        ],
        usage: { inputTokens: 120, outputTokens: 40 },
      },
      { error: { kind: "transport", retryable: true, message: "connection reset" } },
      { content: "Done.", usage: { inputTokens: 300, outputTokens: 8 } },
      { toolCalls: [{ id: "call_write_again", name: "write_file", arguments: '{"path":"c.txt","content":"gamma"}' }] },
      { content: "Understood, not writing." },
    ].slice(from),
    { id: "openai-chat:gpt-test", format: "openai-chat" },
  );
}

/** Drives the scenario on `runtime` (created by the caller, with or without a tracer) and returns the session ID. */
export async function driveScenario(runtime: Runtime, sessionId = "otel-scenario"): Promise<string> {
  const session = await runtime.openSession(sessionId);
  const first = await session.send("Read a.txt and env.txt, write b.txt, tidy up.");
  if (first.status !== "awaiting-approval") throw new Error(`expected a held call, got ${first.status}`);
  await session.approve("call_write", { by: "alice", note: "fine" });
  const resumed = await session.resume();
  if (resumed.status !== "completed") throw new Error(`expected completed, got ${resumed.status} ${resumed.reason ?? ""}`);
  const second = await session.send("Now write c.txt.");
  if (second.status !== "awaiting-approval") throw new Error(`expected a held call, got ${second.status}`);
  await session.deny("call_write_again", { by: "bob", note: "no" });
  const denied = await session.resume();
  if (denied.status !== "completed") throw new Error(`expected completed, got ${denied.status}`);
  await session.runTool("read_file", { path: "a.txt" }, { by: "ui:preview" });
  return session.id;
}

export async function scenarioRuntime(log: EventLog, tracer?: OtelTracer, extra: { traceContent?: boolean; seen?: Parameters<typeof scenarioTools>[0]; providerFrom?: number } = {}): Promise<Runtime> {
  return createRuntime({
    log,
    provider: scenarioProvider(extra.providerFrom),
    tools: scenarioTools(extra.seen),
    policy: { approvalMode: "ask", deny: [{ tool: "remove_all", reason: "never" }] },
    providerRetry: { baseDelayMs: 0, maxDelayMs: 0 },
    ...(tracer !== undefined ? { tracer } : {}),
    ...(extra.traceContent !== undefined ? { traceContent: extra.traceContent } : {}),
  });
}
