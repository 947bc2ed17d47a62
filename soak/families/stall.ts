/**
 * The `stall` family (docs/reliability.md): a provider that stops sending, and a tool that ignores
 * its abort, each case in a child process of its own (soak/families/stall-child.ts) talking to a
 * real HTTP server on 127.0.0.1 in this process, through the real OpenAI and Anthropic adapters.
 *
 * Provider stalls, with a short `staleStreamTimeoutMs`: headers sent and then not a byte; before
 * the headers (the request timeout's business); mid-stream after some text; in the middle of a
 * UTF-8 character; inside a tool call's arguments. Either every attempt stalls (the turn must end
 * with a recorded reason) or only the first (the retry must complete the turn). Tools: `hang`
 * never settles and ignores its signal, with a short timeout (the call must end as timed out and
 * the turn go on) or a long one while the host cancels the `send` (the call must end as aborted,
 * the turn as cancelled). The child is bundled once per run (`buildChild`) and started in plain Node.
 *
 * Invariants, checked from the child's output and the LevelDB log it leaves: `send()` resolved;
 * every stalled attempt is a recorded `turn.provider.failed` of kind `timeout`; the hanging call
 * ended with a recorded `turn.tool.failed`; the turn ended with a recorded `turn.completed`,
 * `turn.failed` or `turn.stopped`; the session replays identical; and the child exited by itself
 * with status 0 — one that has to be killed fails the case.
 */
import { spawn } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo, Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import fc from "fast-check";
import { openLog } from "../../src/index.js";
import type { RecordedEvent } from "../../src/index.js";
import type { SoakFamily, SoakOptions, SoakResult } from "../family.js";
import type { StallChildSpec } from "./stall-child.js";

type Format = StallChildSpec["format"];

/** Where a provider's stream stops. */
export const streamStalls = ["headers-only", "before-headers", "mid-text", "mid-utf8", "mid-tool-arguments"] as const;
/** What a hanging tool meets. */
export const toolStalls = ["tool-timeout", "tool-cancel"] as const;
export type StallKind = (typeof streamStalls)[number] | (typeof toolStalls)[number];
const kinds: readonly StallKind[] = ["mid-utf8", "mid-tool-arguments", "tool-timeout", "headers-only", "before-headers", "mid-text", "tool-cancel"];

export interface StallCase {
  kind: StallKind;
  format: Format;
  staleStreamTimeoutMs: number;
  /** Only the first attempt stalls (the retry is answered) rather than every one. */
  recovers: boolean;
  /** Text chunks sent before a mid-stream stall. */
  chunksBefore: number;
  /** How many bytes of a multi-byte character are sent before the stall (1 .. its length − 1). */
  cutAfterBytes: number;
  /** The cancel's delay, for `tool-cancel`. */
  cancelAfterMs: number;
}

/**
 * The case at `index`: the kinds and both formats in turn (so the first few cases already cover
 * both adapters, a stream stall and a tool), the rest drawn from the seed.
 */
export function stallCaseAt(seed: number, index: number): StallCase {
  const cycle = Math.floor(index / kinds.length);
  const kind = kinds[index % kinds.length]!;
  const format: Format = (index % kinds.length) % 2 === cycle % 2 ? "openai-chat" : "anthropic-messages";
  const [drawn] = fc.sample(
    fc.record({
      // Short, yet well above a busy machine's pauses between the frames of a live stream.
      staleStreamTimeoutMs: fc.integer({ min: 300, max: 800 }),
      recovers: fc.boolean(),
      chunksBefore: fc.integer({ min: 0, max: 3 }),
      cutAfterBytes: fc.integer({ min: 1, max: 2 }),
      cancelAfterMs: fc.integer({ min: 100, max: 400 }),
    }),
    { seed: (seed * 1_000_003 + index) | 0, numRuns: 1 },
  );
  if (drawn === undefined) throw new Error("fast-check drew no case");
  return { kind, format, ...drawn };
}

// --- The server's replies ---------------------------------------------------------------------

/** Bytes to send, then either the end of the response or nothing more (the stall). */
interface StreamReply {
  frames: Buffer[];
  stall: boolean;
}
/** `"hang"`: read the request and never answer, not even with headers. */
type Reply = StreamReply | "hang";

const openAiChunk = (delta: Record<string, unknown>, finishReason: string | null = null) => ({
  id: "chatcmpl-stall",
  object: "chat.completion.chunk",
  created: 0,
  model: "stall-model",
  choices: [{ index: 0, delta, finish_reason: finishReason }],
});
const openAiFrame = (chunk: unknown) => Buffer.from(`data: ${JSON.stringify(chunk)}\n\n`);
const anthropicFrame = (event: { type: string; [field: string]: unknown }) => Buffer.from(`event: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`);
const messageStart = {
  type: "message_start",
  message: { id: "msg_stall", type: "message", role: "assistant", model: "stall-model", content: [], stop_reason: null, stop_sequence: null, usage: { input_tokens: 10, output_tokens: 1 } },
};

/** A whole answer with text. */
function textAnswer(format: Format, text: string): StreamReply {
  if (format === "openai-chat") {
    return { frames: [openAiFrame(openAiChunk({ role: "assistant", content: text })), openAiFrame(openAiChunk({}, "stop")), Buffer.from("data: [DONE]\n\n")], stall: false };
  }
  return {
    frames: [
      messageStart,
      { type: "content_block_start", index: 0, content_block: { type: "text", text: "" } },
      { type: "content_block_delta", index: 0, delta: { type: "text_delta", text } },
      { type: "content_block_stop", index: 0 },
      { type: "message_delta", delta: { stop_reason: "end_turn", stop_sequence: null }, usage: { output_tokens: 3 } },
      { type: "message_stop" },
    ].map(anthropicFrame),
    stall: false,
  };
}

/** A whole answer calling `hang`. */
function hangCall(format: Format): StreamReply {
  if (format === "openai-chat") {
    return {
      frames: [
        openAiFrame(openAiChunk({ role: "assistant", tool_calls: [{ index: 0, id: "call_hang", type: "function", function: { name: "hang", arguments: "" } }] })),
        openAiFrame(openAiChunk({ tool_calls: [{ index: 0, function: { arguments: "{}" } }] })),
        openAiFrame(openAiChunk({}, "tool_calls")),
        Buffer.from("data: [DONE]\n\n"),
      ],
      stall: false,
    };
  }
  return {
    frames: [
      messageStart,
      { type: "content_block_start", index: 0, content_block: { type: "tool_use", id: "toolu_hang", name: "hang", input: {} } },
      { type: "content_block_delta", index: 0, delta: { type: "input_json_delta", partial_json: "{}" } },
      { type: "content_block_stop", index: 0 },
      { type: "message_delta", delta: { stop_reason: "tool_use", stop_sequence: null }, usage: { output_tokens: 3 } },
      { type: "message_stop" },
    ].map(anthropicFrame),
    stall: false,
  };
}

/** The reply that stalls, as the case says. */
function stalledReply(spec: StallCase): Reply {
  const { format } = spec;
  const openAi = format === "openai-chat";
  const text = (piece: string) => (openAi ? openAiFrame(openAiChunk({ content: piece })) : anthropicFrame({ type: "content_block_delta", index: 0, delta: { type: "text_delta", text: piece } }));
  const start = openAi ? [] : [anthropicFrame(messageStart), anthropicFrame({ type: "content_block_start", index: 0, content_block: { type: "text", text: "" } })];
  const pieces = Array.from({ length: spec.chunksBefore }, (_, index) => text(`piece ${index} `));
  switch (spec.kind) {
    case "before-headers":
      return "hang";
    case "headers-only":
      return { frames: [], stall: true };
    case "mid-text":
      return { frames: [...start, ...pieces, text("and then")], stall: true };
    case "mid-utf8": {
      // The frame of a character three bytes long ("日"), cut inside the character.
      const frame = text("日本");
      const at = frame.indexOf(Buffer.from("日")) + spec.cutAfterBytes;
      return { frames: [...start, ...pieces, frame.subarray(0, at)], stall: true };
    }
    case "mid-tool-arguments":
      return openAi
        ? {
            frames: [
              openAiFrame(openAiChunk({ role: "assistant", tool_calls: [{ index: 0, id: "call_stall", type: "function", function: { name: "hang", arguments: "" } }] })),
              openAiFrame(openAiChunk({ tool_calls: [{ index: 0, function: { arguments: '{"note":"half' } }] })),
            ],
            stall: true,
          }
        : {
            frames: [
              anthropicFrame(messageStart),
              anthropicFrame({ type: "content_block_start", index: 0, content_block: { type: "tool_use", id: "toolu_stall", name: "hang", input: {} } }),
              anthropicFrame({ type: "content_block_delta", index: 0, delta: { type: "input_json_delta", partial_json: '{"note":"half' } }),
            ],
            stall: true,
          };
    case "tool-timeout":
    case "tool-cancel":
      return hangCall(format);
  }
}

/** The replies of one case, one per request, in order. */
function repliesOf(spec: StallCase, attempts: number): Reply[] {
  if (spec.kind === "tool-timeout") return [hangCall(spec.format), textAnswer(spec.format, "went on")];
  if (spec.kind === "tool-cancel") return [hangCall(spec.format)];
  const stalled = stalledReply(spec);
  return spec.recovers ? [stalled, textAnswer(spec.format, "recovered")] : Array.from({ length: attempts }, () => stalled);
}

/** One server for a whole run; each case has a path of its own (`/case-<n>/…`) and its replies. */
async function startServer() {
  const replies = new Map<string, Reply[]>();
  const unexpected: string[] = [];
  const sockets = new Set<Socket>();
  const server = createServer((request, response) => void handle(request, response));
  server.on("connection", (socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
  });

  async function handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    for await (const _chunk of request);
    const name = /^\/(case-\d+)\//.exec(request.url ?? "")?.[1] ?? "";
    const reply = replies.get(name)?.shift();
    if (reply === undefined) {
      unexpected.push(`${name}: a request beyond the script (${request.method} ${request.url})`);
      response.writeHead(500, { "content-type": "application/json" }).end(JSON.stringify({ error: { message: "stall soak: no reply scripted" } }));
      return;
    }
    if (reply === "hang") return;
    response.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
    response.flushHeaders();
    for (const frame of reply.frames) {
      response.write(frame);
      // A tick between frames, so they reach the client as separate reads, as a real stream does.
      await new Promise((resolve) => setImmediate(resolve));
    }
    if (!reply.stall) response.end();
  }

  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    script(name: string, scripted: Reply[]) {
      replies.set(name, scripted);
    },
    /** What the case left unasked, and requests nobody scripted. */
    leftover(name: string): { unasked: number; unexpected: string[] } {
      const left = replies.get(name)?.length ?? 0;
      replies.delete(name);
      return { unasked: left, unexpected: unexpected.filter((line) => line.startsWith(`${name}:`)) };
    },
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

// --- One case ---------------------------------------------------------------------------------

const childSource = fileURLToPath(new URL("./stall-child.ts", import.meta.url));

/**
 * Bundles the child once per run (tsup, the project's bundler) into a folder under soak/, where
 * node_modules resolves: a child then starts in plain Node in a fraction of the CPU time that
 * `--import tsx` takes to load the sources (about 2 s a child on this machine), which is what
 * makes a hundred children fit in a few minutes. Packages stay external, as in `dist/`.
 */
async function buildChild(): Promise<{ path: string; remove(): Promise<void> }> {
  const { build } = await import("tsup");
  const outDir = await mkdtemp(join(fileURLToPath(new URL("../", import.meta.url)), ".build-stall-"));
  await build({ entry: { "stall-child": childSource }, outDir, format: "esm", platform: "node", target: "node20", config: false, dts: false, sourcemap: false, splitting: false, silent: true });
  return { path: join(outDir, "stall-child.js"), remove: () => rm(outDir, { recursive: true, force: true }) };
}
/** Generous: a child starts tsx and the SDK on a busy machine. A deadline for a hang, not a timing. */
const exitDeadlineMs = 90_000;

interface ChildResult {
  code: number | null;
  killed: boolean;
  stdout: string;
  stderr: string;
}

function runChild(childPath: string, spec: StallChildSpec): Promise<ChildResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [childPath, JSON.stringify(spec)], {
      stdio: ["ignore", "pipe", "pipe"],
      // No key: the adapters send a placeholder, which this server takes.
      env: Object.fromEntries(Object.entries(process.env).filter(([name]) => name !== "OPENAI_API_KEY" && name !== "ANTHROPIC_API_KEY")),
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (data: Buffer) => (stdout += data.toString()));
    child.stderr.on("data", (data: Buffer) => (stderr += data.toString()));
    let killed = false;
    const deadline = setTimeout(() => {
      killed = true;
      child.kill("SIGKILL");
    }, exitDeadlineMs);
    child.on("error", (error) => {
      clearTimeout(deadline);
      reject(error);
    });
    child.on("close", (code) => {
      clearTimeout(deadline);
      resolve({ code, killed, stdout, stderr });
    });
  });
}

const endings = new Set(["turn.completed", "turn.failed", "turn.stopped"]);

/** Runs one case; returns what broke, or `undefined` when every invariant held. */
async function checkStallCase(spec: StallCase, name: string, server: Awaited<ReturnType<typeof startServer>>, childPath: string): Promise<string | undefined> {
  const logDir = await mkdtemp(join(tmpdir(), "turnlog-soak-stall-"));
  try {
    // A stalled stream gets a retry (answered when the case recovers); a tool case asks twice at most, never retrying.
    const attempts = spec.kind === "tool-timeout" || spec.kind === "tool-cancel" ? 1 : 2;
    server.script(name, repliesOf(spec, attempts));
    const childSpec: StallChildSpec = {
      format: spec.format,
      baseURL: spec.format === "openai-chat" ? `${server.url}/${name}/v1` : `${server.url}/${name}`,
      staleStreamTimeoutMs: spec.staleStreamTimeoutMs,
      // The before-headers stall is the request timeout's to end.
      requestTimeoutMs: spec.kind === "before-headers" ? spec.staleStreamTimeoutMs * 3 : 30_000,
      providerAttempts: attempts,
      // A timeout the cancel comes well before, so the cancel is what ends that call.
      toolTimeoutMs: spec.kind === "tool-cancel" ? 600_000 : spec.staleStreamTimeoutMs,
      ...(spec.kind === "tool-cancel" ? { cancelAfterMs: spec.cancelAfterMs } : {}),
      logDir,
      sessionId: "stall-1",
    };
    const ran = await runChild(childPath, childSpec);
    const left = server.leftover(name);
    if (ran.killed) return `the child did not exit within ${exitDeadlineMs} ms and was killed (stdout: ${ran.stdout.trim().slice(0, 300)})`;
    if (ran.code !== 0) return `the child exited with ${ran.code}: ${ran.stderr.trim().slice(-600)}`;
    const line = ran.stdout.trim().split("\n").at(-1) ?? "";
    let outcome: { status?: string; reason?: string };
    try {
      outcome = (JSON.parse(line) as { outcome: { status?: string; reason?: string } }).outcome;
    } catch {
      return `send() did not resolve with an outcome (stdout: ${ran.stdout.slice(0, 300)})`;
    }
    if (left.unexpected.length > 0) return left.unexpected.join("; ");
    if (left.unasked > 0) return `${left.unasked} scripted replies were never asked for (outcome ${JSON.stringify(outcome)})`;

    const reader = await openLog({ dir: logDir });
    let events: RecordedEvent[];
    let identical: boolean;
    try {
      events = await reader.events("stall-1");
      identical = (await reader.replay("stall-1")).identical;
    } finally {
      await reader.close();
    }
    const types = events.map((event) => event.type);
    const last = events.at(-1);
    if (last === undefined || !endings.has(last.type)) return `the session did not end: its last event is ${last?.type ?? "none"} (${types.slice(-6).join(", ")})`;
    if (!identical) return "replay is not identical";
    const failures = events.filter((event) => event.type === "turn.provider.failed").map((event) => event.data as { kind: string });
    const toolFailures = events.filter((event) => event.type === "turn.tool.failed").map((event) => event.data as { code: string });
    const describe = () => `(outcome ${JSON.stringify(outcome)}; events ${types.join(", ")})`;
    if (spec.kind === "tool-timeout") {
      if (toolFailures.length !== 1 || toolFailures[0]?.code !== "timeout") return `the hanging call did not end as timed out ${describe()}`;
      if (outcome.status !== "completed" || last.type !== "turn.completed") return `the turn did not go on to complete after the timeout ${describe()}`;
      return undefined;
    }
    if (spec.kind === "tool-cancel") {
      if (toolFailures.length !== 1 || toolFailures[0]?.code !== "aborted") return `the hanging call did not end as aborted ${describe()}`;
      if (outcome.status !== "stopped" || outcome.reason !== "cancelled" || last.type !== "turn.stopped") return `the turn did not stop as cancelled ${describe()}`;
      return undefined;
    }
    const stalled = spec.recovers ? 1 : attempts;
    if (failures.length !== stalled || failures.some((failure) => failure.kind !== "timeout")) {
      return `expected ${stalled} recorded provider failures of kind timeout, found ${JSON.stringify(failures)} ${describe()}`;
    }
    if (spec.recovers) {
      if (outcome.status !== "completed" || last.type !== "turn.completed") return `the retry did not complete the turn ${describe()}`;
    } else if (outcome.status === "completed" || last.type === "turn.completed") {
      return `a turn whose every attempt stalled completed ${describe()}`;
    }
    return undefined;
  } finally {
    await rm(logDir, { recursive: true, force: true });
  }
}

/** Cases run side by side: each child mostly waits on its timeouts. */
const parallel = 3;

export const stall: SoakFamily = {
  name: "stall",
  soakCount: 100,
  ciCount: 4,
  async run({ seed, count, log }: SoakOptions): Promise<SoakResult> {
    const server = await startServer();
    const child = await buildChild();
    const failures: string[] = [];
    const byKind = new Map<string, number>();
    let passed = 0;
    let killed = 0;
    let next = 0;
    try {
      const worker = async () => {
        for (let index = next++; index < count; index = next++) {
          const spec = stallCaseAt(seed, index);
          const label = `${spec.format} ${spec.kind}`;
          byKind.set(label, (byKind.get(label) ?? 0) + 1);
          let broke: string | undefined;
          try {
            broke = await checkStallCase(spec, `case-${index}`, server, child.path);
          } catch (error) {
            broke = `threw ${String((error as Error)?.stack ?? error)}`;
          }
          if (broke?.includes("was killed") === true) killed += 1;
          if (broke === undefined) passed += 1;
          else failures.push(`seed ${seed} case ${index} (${label}, ${JSON.stringify(spec)}): ${broke}`);
          if ((index + 1) % 20 === 0) log(`${index + 1}/${count} cases, ${failures.length} failed`);
        }
      };
      await Promise.all(Array.from({ length: Math.min(parallel, count) }, worker));
    } finally {
      await server.close();
      await child.remove();
    }
    const casesWhere = (test: (label: string) => boolean) => [...byKind].filter(([label]) => test(label)).reduce((sum, [, cases]) => sum + cases, 0);
    const streamCases = casesWhere((label) => !label.includes(" tool-"));
    return {
      passed,
      failed: failures.length,
      summary:
        `${count} cases, each in a child process: ${streamCases} stalled streams (${streamStalls.length} kinds), ${count - streamCases} hanging tools (${toolStalls.length} kinds); ` +
        `${casesWhere((label) => label.startsWith("openai-chat"))} through the OpenAI adapter, ${casesWhere((label) => label.startsWith("anthropic-messages"))} through the Anthropic one; ${killed} children had to be killed`,
      failures,
    };
  },
};
