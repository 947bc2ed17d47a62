/**
 * The host of the edit-on-approval test on PostgreSQL (argv: URL, schema, effects file, workspace):
 * offers a `deploy` tool that appends the version it deployed to the effects file, sends a message
 * whose `deploy({ version: "v2" })` is held for approval, prints `parked <callId> <fingerprint>`,
 * and resumes by itself (`autoResume`) once another process answers. Prints `final <status> <text>`
 * and exits 0, without a restart.
 */
import { appendFileSync } from "node:fs";
import { z } from "zod";
import { createRuntime, defineTool, PostgresEventLog, sessionStream } from "../../src/index.js";
import type { SendOutcome } from "../../src/index.js";
import { scriptedProvider } from "../../src/testing/index.js";

export const editSessionId = "deploy-edit-1";

const [url, schema, effectsFile, workspace] = process.argv.slice(2);
if (url === undefined || schema === undefined || effectsFile === undefined || workspace === undefined) {
  throw new TypeError("usage: edit-host-child.ts <url> <schema> <effects file> <workspace>");
}
const print = (line: string) => process.stdout.write(`${line}\n`);

const log = await PostgresEventLog.open(url, { schema, poolSize: 4, pollIntervalMs: 200 });
const deploy = defineTool({
  name: "deploy",
  description: "Deploy a version (a person approves it)",
  risk: "external-side-effect",
  input: z.object({ version: z.string(), region: z.string() }),
  run: ({ version, region }) => {
    appendFileSync(effectsFile, `${version} ${region}\n`);
    return `deployed ${version} to ${region}`;
  },
});
const script = [{ content: "Deploying.", toolCalls: [{ id: "call_deploy", name: "deploy", arguments: '{"version":"v2","region":"eu"}' }] }, { content: "Deployed." }];
let resumed!: (outcome: SendOutcome) => void;
let failed!: (error: unknown) => void;
const autoOutcome = new Promise<SendOutcome>((resolve, reject) => {
  resumed = resolve;
  failed = reject;
});
const runtime = await createRuntime({
  log,
  provider: {
    id: "edit-scripted",
    format: "openai-chat",
    async complete(request, options) {
      const answered = (await log.readStream(sessionStream(editSessionId))).filter((event) => event.type === "turn.provider.responded").length;
      return scriptedProvider(script.slice(answered)).complete(request, options);
    },
  },
  tools: [deploy],
  policy: { approvalMode: "ask", workspace: { root: workspace, trusted: true } },
  autoResume: { onOutcome: (outcome: SendOutcome) => resumed(outcome), onError: (error: unknown) => failed(error) },
});
const session = await runtime.openSession(editSessionId);
const parked = await session.send("Deploy v2");
const held = parked.pendingApprovals[0];
if (parked.status !== "awaiting-approval" || held === undefined) throw new Error(`expected the deploy to be held, got ${parked.status}`);
print(`parked ${held.callId} ${held.fingerprint}`);
const outcome = await autoOutcome;
await runtime.close();
await log.close();
print(`final ${outcome.status} ${outcome.text ?? outcome.reason ?? ""}`);
