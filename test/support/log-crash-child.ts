/**
 * Child process for the crash test: opens a `sync` LevelEventLog in argv[2] and runs argv[3]
 * writers concurrently, each appending one event at a time to its own stream, until argv[4]
 * appends in all. After each append resolves it prints "<stream> <streamVersion> <globalPosition>",
 * so the parent knows exactly which appends were reported durable before it SIGKILLs us.
 */
import { STREAM_DOES_NOT_EXIST } from "../../src/errors/expected-version-conflict-error.js";
import { LevelEventLog } from "../../src/log/level/level-event-log.js";

const [directory, writersText = "4", totalText = "100000"] = process.argv.slice(2);
if (directory === undefined) throw new TypeError("usage: log-crash-child.ts <directory> [writers] [total]");
const writers = Number(writersText);
let remaining = Number(totalText);
const log = await LevelEventLog.open(directory, { durability: "sync" });

async function write(stream: string): Promise<void> {
  let version = 0;
  while (remaining > 0) {
    remaining -= 1;
    const result = await log.appendToStream(
      stream,
      [{ type: "test.crash.appended", data: { stream, version: version + 1, padding: "x".repeat(200) } }],
      { expectedStreamVersion: version === 0 ? STREAM_DOES_NOT_EXIST : version },
    );
    version = result.nextExpectedStreamVersion;
    process.stdout.write(`${stream} ${version} ${result.lastGlobalPosition}\n`);
  }
}

await Promise.all(Array.from({ length: writers }, (_, index) => write(`w${index}`)));
await log.close();
process.stdout.write("done\n");
