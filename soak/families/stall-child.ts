/**
 * One case of the `stall` family (soak/families/stall.ts), in a process of its own: a session
 * through a real adapter (OpenAI or Anthropic) whose server stalls, or with a tool that ignores
 * its abort signal and never settles. It prints the outcome of `send()` as one JSON line, closes
 * the runtime and the log, and then simply returns: no `process.exit`. The process must end by
 * itself; whatever turnlog left open (a timer, a socket, a file) would keep it alive and the
 * parent would have to kill it, which fails the case.
 *
 *   node --import tsx soak/families/stall-child.ts '<StallChildSpec as JSON>'
 */
import { z } from "zod";
import { anthropicMessagesProvider, createRuntime, defineTool, LevelEventLog, openAiChatProvider } from "../../src/index.js";

/** What the parent asks the child to run. */
export interface StallChildSpec {
  format: "openai-chat" | "anthropic-messages";
  /** The case's base URL on the parent's server (with `/v1` for OpenAI). */
  baseURL: string;
  staleStreamTimeoutMs: number;
  requestTimeoutMs: number;
  providerAttempts: number;
  /** The `hang` tool's timeout. */
  toolTimeoutMs: number;
  /** Cancel the `send` through its signal this many ms after the `hang` call starts (none: never). */
  cancelAfterMs?: number;
  /** The LevelDB log directory the parent reads once the child has exited. */
  logDir: string;
  sessionId: string;
}

const spec = JSON.parse(process.argv[2] ?? "") as StallChildSpec;
const adapterOptions = { model: "stall-model", baseURL: spec.baseURL, staleStreamTimeoutMs: spec.staleStreamTimeoutMs, requestTimeoutMs: spec.requestTimeoutMs };
const provider = spec.format === "openai-chat" ? openAiChatProvider(adapterOptions) : anthropicMessagesProvider(adapterOptions);
const controller = new AbortController();
const hang = defineTool({
  name: "hang",
  description: "Never finishes, and ignores its abort signal",
  risk: "read-only-local",
  input: z.object({ note: z.string().optional() }),
  timeoutMs: spec.toolTimeoutMs,
  run: () => {
    // The host cancels the send while this call hangs (the cancel is the host's timer, not the tool's).
    if (spec.cancelAfterMs !== undefined) setTimeout(() => controller.abort(new Error("cancelled by the soak")), spec.cancelAfterMs);
    // Only a promise that never settles: nothing that keeps a process alive by itself.
    return new Promise<string>(() => undefined);
  },
});

const log = await LevelEventLog.open(spec.logDir, { durability: "sync" });
const runtime = await createRuntime({ log, provider, tools: [hang], providerAttempts: spec.providerAttempts, providerRetry: { baseDelayMs: 1, maxDelayMs: 5 } });
try {
  const session = await runtime.openSession(spec.sessionId);
  const outcome = await session.send("go", { signal: controller.signal });
  process.stdout.write(`${JSON.stringify({ outcome })}\n`);
} finally {
  await runtime.close();
  await log.close();
}
