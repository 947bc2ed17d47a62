/**
 * Child process of the closing test (argv: `level <directory>` or `postgres <url> <schema>`): it
 * parks a session for approval with `autoResume` on, then starts `session.waitForAnswers()` and a
 * `session.events()` loop, prints `waiting`, closes the runtime and the log, and prints how the
 * wait and the loop ended. It never calls `process.exit`: it exits (code 0) only if nothing the
 * closed runtime held keeps it alive, and a wait left pending makes Node end it with code 13
 * ("unsettled top-level await") before `done`.
 */
import { z } from "zod";
import { createRuntime, defineTool, LevelEventLog, PostgresEventLog, TurnlogError } from "../../src/index.js";
import type { EventLog } from "../../src/index.js";
import { scriptedProvider } from "../../src/testing/index.js";

const [kind, location, schema] = process.argv.slice(2);
if ((kind !== "level" && kind !== "postgres") || location === undefined || (kind === "postgres" && schema === undefined)) {
  throw new TypeError("usage: close-while-waiting-child.ts level <directory> | postgres <url> <schema>");
}
const print = (line: string) => process.stdout.write(`${line}\n`);

const log: EventLog = kind === "level" ? await LevelEventLog.open(location) : await PostgresEventLog.open(location, { schema: schema as string, poolSize: 2 });
const deploy = defineTool({
  name: "deploy",
  description: "Deploy a version",
  risk: "external-side-effect",
  input: z.object({ version: z.string() }),
  run: async ({ version }) => `deployed ${version}`,
});
const runtime = await createRuntime({
  log,
  provider: scriptedProvider([{ toolCalls: [{ id: "call_d", name: "deploy", arguments: '{"version":"v2"}' }] }, { content: "Deployed." }]),
  tools: [deploy],
  policy: { approvalMode: "ask", workspace: { root: process.cwd(), trusted: true } },
  autoResume: true,
});
const session = await runtime.openSession("s1");
const parked = await session.send("deploy v2");
print(parked.status === "awaiting-approval" ? "parked" : `not parked: ${parked.status}`);

const waiting = session.waitForAnswers().then(
  (outcome) => `wait resolved ${outcome.status}`,
  (error: unknown) => `wait ${TurnlogError.isTurnlogError(error) ? error.code : String(error)}`,
);
const following = (async () => {
  for await (const event of session.events()) void event;
  return "events ended";
})();
print("waiting");
await runtime.close();
await log.close();
print("closed");
print(await waiting);
print(await following);
print("done");
