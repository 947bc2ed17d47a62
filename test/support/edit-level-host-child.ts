/**
 * A host holding a LevelDB log whose held write is answered with edited arguments from another
 * process (argv: log directory, workspace): the built-in workspace tools in `ask` mode; the model
 * writes `notes.txt` with "draft", which is held; it prints `parked <callId>` and resumes by
 * itself (`autoResume`) once an answer arrives through its owner channel. Prints
 * `final <status> <text>`, closes the log and exits 0.
 */
import { createRuntime, LevelEventLog, workspaceTools } from "../../src/index.js";
import type { Provider } from "../../src/index.js";
import { scriptedProvider } from "../../src/testing/index.js";

export const editLevelSessionId = "notes-1";

const [dir, workspace] = process.argv.slice(2);
if (dir === undefined || workspace === undefined) throw new TypeError("usage: edit-level-host-child.ts <log dir> <workspace>");
const print = (line: string) => process.stdout.write(`${line}\n`);

/** The model: a write of the draft, then "Saved." once a tool result is in. */
const provider: Provider = {
  id: "edit-level-scripted",
  format: "openai-chat",
  async complete(request, options) {
    const messages = request.messages as { role?: string }[];
    const script = messages.some((message) => message.role === "tool")
      ? [{ content: "Saved." }]
      : [{ content: "Writing.", toolCalls: [{ name: "write_file", arguments: JSON.stringify({ path: "notes.txt", content: "draft" }) }] }];
    return scriptedProvider(script).complete(request, options);
  },
};

// The owner channel never keeps a process alive by itself (docs/log.md, "The owner channel").
const keepAlive = setInterval(() => undefined, 2 ** 30);
const log = await LevelEventLog.open(dir);
let finished!: (text: string) => void;
let failed!: (error: unknown) => void;
const done = new Promise<string>((resolve, reject) => {
  finished = resolve;
  failed = reject;
});
const runtime = await createRuntime({
  log,
  provider,
  tools: workspaceTools({ root: workspace }),
  policy: { approvalMode: "ask", workspace: { root: workspace, trusted: true } },
  autoResume: {
    onOutcome: (outcome) => {
      if (outcome.status !== "awaiting-approval") finished(`${outcome.status} ${outcome.text ?? outcome.reason ?? ""}`);
    },
    onError: (error) => failed(error),
  },
});
const session = await runtime.openSession(editLevelSessionId);
const parked = await session.send("write the notes");
if (parked.status !== "awaiting-approval") throw new Error(`expected the write to be held, got ${parked.status}`);
print(`parked ${parked.pendingApprovals[0]?.callId ?? ""}`);
print(`final ${await done}`);
await runtime.close();
await log.close();
clearInterval(keepAlive);
