/**
 * A host process writing to a PostgreSQL log while a test reads it with the CLI:
 * `node --import tsx postgres-host-child.ts <url> <schema>` runs one scripted session after
 * another (`host-0`, `host-1`, …), each a user message, one `lookup` call (read-only, allowed) and
 * a final answer, through a real runtime on a `PostgresEventLog`, without pause. It prints
 * `completed host-<n>` after each, and stops — closing the log — when its standard input ends.
 */
import { z } from "zod";
import { createRuntime, defineTool, PostgresEventLog } from "../../../src/index.js";
import { scriptedProvider } from "../../../src/testing/index.js";

const [url, schema] = process.argv.slice(2);
if (url === undefined || schema === undefined) throw new TypeError("usage: postgres-host-child.ts <url> <schema>");

let stopping = false;
process.stdin.on("end", () => {
  stopping = true;
});
process.stdin.resume();

const lookup = defineTool({
  name: "lookup",
  description: "Looks a word up.",
  risk: "read-only-local",
  input: z.object({ word: z.string() }),
  run: ({ word }) => `${word}: a word`,
});

const log = await PostgresEventLog.open(url, { schema });
try {
  for (let index = 0; !stopping; index += 1) {
    const provider = scriptedProvider([
      { toolCalls: [{ id: `call_lookup_${index}`, name: "lookup", arguments: JSON.stringify({ word: `word${index}` }) }] },
      { content: `answer ${index}` },
    ]);
    const runtime = await createRuntime({ log, provider, tools: [lookup], policy: { approvalMode: "full-auto", workspace: { root: process.cwd(), trusted: true } } });
    try {
      const session = await runtime.openSession(`host-${index}`);
      const outcome = await session.send(`question ${index}`);
      process.stdout.write(`${outcome.status} host-${index}\n`);
    } finally {
      await runtime.close();
    }
  }
} finally {
  await log.close();
}
