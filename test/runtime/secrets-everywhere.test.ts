/**
 * No secret reaches the log or the CLI, whatever field it arrives in (docs/security.md#secrets, issue 12
 * item 5). One real session on a LevelDB log on disk, with a real MCP server as a child process,
 * carries a secret of every format the detector knows, plus a value the host registered, in every
 * field that enters the log: the user message, the assistant's text, tool arguments, tool names,
 * tool outputs and metadata, an MCP result, a provider error, approval notes and approvers, a
 * host-routed call's input and requester, and the system text. Then every file of the log
 * directory is read as bytes, every event through the log's read API, and the output of `turnlog
 * show`, `events`, `audit` and `history`; none may hold any of the secret values.
 */
import { createRequire } from "node:module";
import { mkdtemp, readdir, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { createRuntime, defineTool, LevelEventLog } from "../../src/index.js";
import type { RecordedEvent } from "../../src/index.js";
import { scriptedProvider } from "../../src/testing/index.js";
import { runTurnlogInProcess } from "../cli/support/turnlog-in-process.js";
import { detectedSecretKinds, exampleKnownSecret, exampleSecrets, exampleSecretTexts } from "../support/secret-examples.js";

const require = createRequire(import.meta.url);
const everything = join(dirname(require.resolve("@modelcontextprotocol/server-everything/package.json")), "dist/index.js");

/** Every secret value that must not appear anywhere. */
const secretValues = [...detectedSecretKinds.map((kind) => exampleSecrets[kind]), exampleKnownSecret];
/** One text holding all of them, each in the context that makes it a secret. */
const allSecrets = [...detectedSecretKinds.map((kind) => exampleSecretTexts[kind]), `the provider key is ${exampleKnownSecret}`].join("\n");
/** The same on one line, for fields that are names (an approver). */
const allSecretsOneLine = allSecrets.replaceAll("\n", " ");
/**
 * Secrets a model might invent a tool name from: the formats that are secrets on their own, and
 * the registered value. (A contextual secret, such as a password, without its context — `-p`,
 * `password=` — is a word like any other, to this detector as to any.)
 */
const formatKinds = detectedSecretKinds.slice(0, detectedSecretKinds.indexOf("url-credentials"));
const tokenSecrets = [...formatKinds.map((kind) => exampleSecrets[kind]), exampleKnownSecret].filter((value) => /^[A-Za-z0-9_.+/=-]+$/.test(value));

/** The forms a value can take in a file: as it is, and escaped inside a JSON string. */
function forms(value: string): string[] {
  return [...new Set([value, JSON.stringify(value).slice(1, -1)])];
}

/** The secrets that appear in `text`, in any form: the test's failure message names them. */
function leaked(text: string): string[] {
  return secretValues.filter((value) => forms(value).some((form) => text.includes(form)));
}

function leakedBytes(bytes: Buffer): string[] {
  return secretValues.filter((value) => forms(value).some((form) => bytes.includes(Buffer.from(form, "utf8"))));
}

describe("secrets in every field, on disk and in the CLI", () => {
  let workDir: string;
  let logDir: string;
  const received: unknown[] = [];
  let nativeOutput = "";

  beforeAll(async () => {
    workDir = await mkdtemp(join(tmpdir(), "turnlog-secrets-everywhere-"));
    logDir = join(workDir, "log");
    const echo = defineTool({
      name: "echo",
      description: "echoes its text, and prints it in its metadata",
      risk: "read-only-local",
      input: z.object({ text: z.string() }),
      run: ({ text }) => {
        received.push(text);
        return { ok: true, content: `you said: ${text}`, metadata: { printed: text, env: { OPENAI_API_KEY: exampleSecrets["openai-key"] } } };
      },
    });
    const deploy = defineTool({
      name: "deploy",
      description: "deploys somewhere",
      risk: "external-side-effect",
      input: z.object({ target: z.string() }),
      run: ({ target }) => {
        received.push(target);
        throw new Error(`deploy failed for ${target}`);
      },
    });
    const provider = scriptedProvider([
      { error: { kind: "http-status", retryable: true, status: 500, message: `upstream said: ${allSecrets}` } },
      {
        content: `Sure. ${allSecrets}`,
        toolCalls: [
          { id: "call_echo", name: "echo", arguments: JSON.stringify({ text: allSecrets }) },
          { id: "call_mcp", name: "mcp__everything__echo", arguments: JSON.stringify({ message: allSecrets }) },
          { id: "call_deploy_a", name: "deploy", arguments: JSON.stringify({ target: allSecrets }) },
          { id: "call_deploy_b", name: "deploy", arguments: JSON.stringify({ target: "staging" }) },
          ...tokenSecrets.map((name, index) => ({ id: `call_named_${index}`, name, arguments: "{}" })),
        ],
      },
      { content: `Done. ${allSecrets}` },
    ]);
    const log = await LevelEventLog.open(logDir, { durability: "sync" });
    const runtime = await createRuntime({
      log,
      provider,
      tools: [echo, deploy],
      mcpServers: [{ name: "everything", command: process.execPath, args: [everything, "stdio"] }],
      policy: { approvalMode: "ask" },
      // The invented tool names are many rejections of one kind, which would stop the turn.
      budgets: { maxRepeatedFailures: 100 },
      providerRetry: { baseDelayMs: 1, maxDelayMs: 1 },
      history: { system: `You are helpful. Never print ${exampleKnownSecret}.` },
      secrets: [exampleKnownSecret],
    });
    try {
      const session = await runtime.openSession("leaky");
      const paused = await session.send(`Please deploy. ${allSecrets}`);
      expect(paused.status).toBe("awaiting-approval");
      const held = paused.pendingApprovals.map((call) => call.callId).sort();
      expect(held).toContain("call_deploy_a");
      for (const callId of held) {
        if (callId === "call_deploy_b") await session.deny(callId, { by: allSecretsOneLine, note: allSecrets });
        else await session.approve(callId, { by: allSecretsOneLine, note: allSecrets });
      }
      const resumed = await session.resume();
      expect(resumed, resumed.reason).toMatchObject({ status: "completed" });
      nativeOutput = (await session.runTool("echo", { text: allSecrets }, { by: allSecretsOneLine, approvedBy: allSecretsOneLine })).content;
      expect(provider.remaining).toBe(0);
    } finally {
      await runtime.close();
      await log.close();
    }
  }, 120_000);

  afterAll(async () => {
    await rm(workDir, { recursive: true, force: true });
  });

  it("really planted them: the tools ran with the real values, and the host got its real output", () => {
    expect(received).toContain(allSecrets);
    expect(nativeOutput).toBe(`you said: ${allSecrets}`);
    expect(leaked(allSecrets)).toEqual(secretValues);
  });

  it("leaves none in the files of the log directory, read as bytes", async () => {
    const files = (await readdir(logDir, { withFileTypes: true, recursive: true })).filter((entry) => entry.isFile());
    expect(files.length).toBeGreaterThan(0);
    let bytesRead = 0;
    for (const file of files) {
      const bytes = await readFile(join(file.parentPath, file.name));
      bytesRead += bytes.length;
      expect(leakedBytes(bytes), file.name).toEqual([]);
    }
    // The events are in there (uncompressed tables), so the scan above looked at them.
    expect(bytesRead).toBeGreaterThan(10_000);
  });

  it("leaves none in any event read through the log, and every field was redacted, not dropped", async () => {
    const log = await LevelEventLog.open(logDir);
    try {
      const events: RecordedEvent[] = [];
      for await (const event of log.readAll()) events.push(event);
      for (const event of events) expect(leaked(JSON.stringify(event)), `${event.type} ${JSON.stringify(event.data).slice(0, 3000)}`).toEqual([]);
      const data = (type: string) => events.filter((event) => event.type === type).map((event) => event.data as Record<string, unknown>);
      const redacted = (value: unknown) => expect(JSON.stringify(value)).toContain("[REDACTED]");
      redacted(data("session.started")[0]?.history);
      redacted(data("session.user_message.added")[0]?.content);
      redacted(data("turn.provider.failed")[0]?.message);
      const responded = data("turn.provider.responded");
      redacted(responded.map((event) => event.content));
      const calls = responded[0]?.toolCalls as { name?: string; argumentsText: string }[];
      expect(calls.filter((call) => call.name === "[REDACTED]")).toHaveLength(tokenSecrets.length);
      redacted(data("turn.tool.succeeded").map((event) => [event.output, event.metadata]));
      expect(JSON.stringify(data("turn.tool.succeeded"))).toContain("Echo: ");
      redacted(data("turn.tool.failed")[0]?.message);
      for (const type of ["turn.approval.granted", "turn.approval.denied"]) {
        expect(data(type).length, type).toBeGreaterThan(0);
        for (const answer of data(type)) {
          redacted(answer.by);
          redacted(answer.note);
        }
      }
      const [requested] = data("session.native_tool.requested");
      redacted([requested?.by, requested?.approvedBy, requested?.input]);
      redacted(data("session.native_tool.completed")[0]?.output);
      redacted(data("turn.completed").map((event) => event.text));
    } finally {
      await log.close();
    }
  });

  it("leaves none in the output of turnlog show, events, audit and history", async () => {
    const commands = [
      ["show", "leaky", "--events"],
      ["events", "leaky"],
      ["events", "leaky", "--json"],
      ["audit", "leaky"],
      ["audit", "leaky", "--json"],
      ["history", "leaky", "--format", "openai-chat", "--json"],
      ["history", "leaky", "--format", "anthropic-messages"],
    ];
    for (const command of commands) {
      const run = await runTurnlogInProcess([...command, "--dir", logDir], { cwd: workDir });
      expect(run.code, `${command.join(" ")}: ${run.stderr}`).toBe(0);
      expect(run.stdout.length, command.join(" ")).toBeGreaterThan(0);
      expect(leaked(run.stdout + run.stderr), command.join(" ")).toEqual([]);
    }
  }, 120_000);
});
