/**
 * A host whose sessions `turnlog view` answers: `node --import tsx view-host-child.ts <log>
 * <effects file> <workspace> <session>=<arguments JSON>...`, where `<log>` is a LevelDB directory or
 * `postgres://…#<schema>`. It opens the log (holding a LevelDB log's lock for as long as it runs),
 * and for each `<session>=<arguments>` sends a message whose `deploy` call, with those arguments,
 * is held for a person; it prints `parked <session> <callId>` for each. With `autoResume` it then
 * waits: each answer recorded in the log (by the view, directly or through this process) resumes
 * its session, and it prints `final <session> <status> <text>`. Once every session is final it
 * closes the log and exits 0.
 *
 * The model writes the message it is given as the call's arguments, and answers "Done." once it
 * sees a tool result. The tool appends `<session> <callId> <arguments JSON>` to the effects file
 * for each run.
 */
import { appendFileSync } from "node:fs";
import { z } from "zod";
import { createRuntime, defineTool } from "../../src/index.js";
import type { Provider, SendOutcome } from "../../src/index.js";
import { openEventLogAt } from "./event-log-location.js";
import { scriptedProvider } from "../../src/testing/index.js";

const [location, effectsFile, workspace, ...sessionArguments] = process.argv.slice(2);
if (location === undefined || effectsFile === undefined || workspace === undefined || sessionArguments.length === 0) {
  throw new TypeError("usage: view-host-child.ts <log dir | postgres://…#schema> <effects file> <workspace> <session>=<arguments JSON>...");
}
const print = (line: string) => process.stdout.write(`${line}\n`);


const deploy = defineTool({
  name: "deploy",
  description: "Deploy a version (a person approves it)",
  risk: "external-side-effect",
  input: z.object({ version: z.string() }),
  run: (input, context) => {
    appendFileSync(effectsFile, `${context.sessionId} ${context.callId} ${JSON.stringify(input)}\n`, { flag: "a" });
    return `deployed ${input.version}`;
  },
});

/** The model: a deploy call with the user's message as its arguments, then "Done." once a tool result is in. */
const provider: Provider = {
  id: "view-scripted",
  format: "openai-chat",
  async complete(request, options) {
    const messages = request.messages as { role?: string; content?: unknown }[];
    if (messages.some((message) => message.role === "tool")) return scriptedProvider([{ content: "Done." }]).complete(request, options);
    const user = messages.findLast((message) => message.role === "user");
    return scriptedProvider([{ content: "Deploying.", toolCalls: [{ name: "deploy", arguments: String(user?.content ?? "{}") }] }]).complete(request, options);
  },
};

// A host is kept alive by its own work (a server, a queue); the owner channel never keeps a process
// alive by itself (docs/log.md, "The owner channel"), so this one holds a handle until it is done.
const keepAlive = setInterval(() => undefined, 2 ** 30);
const log = await openEventLogAt(location);
const sessions = new Map(
  sessionArguments.map((entry) => {
    const separator = entry.indexOf("=");
    return [entry.slice(0, separator), entry.slice(separator + 1)] as const;
  }),
);
const finals = new Map<string, SendOutcome>();
let allFinal!: () => void;
let failed!: (error: unknown) => void;
const done = new Promise<void>((resolve, reject) => {
  allFinal = resolve;
  failed = reject;
});
const runtime = await createRuntime({
  log,
  provider,
  tools: [deploy],
  policy: { approvalMode: "ask", workspace: { root: workspace, trusted: true } },
  autoResume: {
    onOutcome: (outcome, session) => {
      if (outcome.status === "awaiting-approval") return;
      finals.set(session.id, outcome);
      print(`final ${session.id} ${outcome.status} ${outcome.text ?? outcome.reason ?? ""}`);
      if (finals.size === sessions.size) allFinal();
    },
    onError: (error) => failed(error),
  },
});
for (const [sessionId, args] of sessions) {
  const session = await runtime.openSession(sessionId);
  const parked = await session.send(args);
  if (parked.status !== "awaiting-approval") throw new Error(`expected ${sessionId}'s deploy to be held, got ${parked.status}`);
  print(`parked ${sessionId} ${parked.pendingApprovals.map((call) => call.callId).join(",")}`);
}
await done;
await runtime.close();
await log.close();
clearInterval(keepAlive);
