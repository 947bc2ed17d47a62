/**
 * Child process for the disk fault soak (soak/families/disk.ts), run with the LD_PRELOAD shim of
 * test/support/disk-fault-shim.c: opens a `sync` LevelEventLog in argv[2] and runs argv[3]
 * writers, each appending one event at a time to its own stream, argv[4] appends in all, until
 * an append fails. With argv[5] `mixed`, every third append of a writer is `durable: false`
 * (written behind: answered before its batch is written). Prints, one line each:
 *   "acked <stream> <version> <globalPosition>"   a durable append resolved (acknowledged)
 *   "answered <stream> <version> <globalPosition>" a `durable: false` append resolved
 *   "seen <stream> <version> <hash>"               a subscriber was handed an event
 *   "rejected <json>"                              an append failed: { code, errno, message, stream, version }
 *   "refused <json>"                               an append tried after the failure: { code } or { acked: true }
 *   "closed" / "close-failed <message>"            how closing the log went
 */
import { LevelEventLog } from "../../src/log/level/level-event-log.js";

const [directory, writersText = "2", totalText = "200", mode = "durable"] = process.argv.slice(2);
if (directory === undefined) throw new TypeError("usage: disk-fault-child.ts <directory> [writers] [total]");
const writers = Number(writersText);
let remaining = Number(totalText);
let failed = false;
const log = await LevelEventLog.open(directory, { durability: "sync" });
log.subscribe((event) => process.stdout.write(`seen ${event.meta.stream} ${event.meta.streamPosition} ${event.meta.hash}\n`));

function describe(error: unknown): { code: unknown; errno: unknown; message: string } {
  const fields = error as { code?: unknown; errno?: unknown; message?: unknown };
  return { code: fields.code, errno: fields.errno, message: String(fields.message ?? error) };
}

async function write(stream: string): Promise<void> {
  let version = 0;
  while (remaining > 0 && !failed) {
    remaining -= 1;
    try {
      const durable = mode !== "mixed" || version % 3 !== 1;
      const result = await log.appendToStream(stream, [{ type: "test.disk.appended", data: { stream, version: version + 1, padding: "x".repeat(300) } }], { expectedStreamVersion: version, durable });
      version = result.nextExpectedStreamVersion;
      process.stdout.write(`${durable ? "acked" : "answered"} ${stream} ${version} ${result.lastGlobalPosition}\n`);
    } catch (error) {
      failed = true;
      process.stdout.write(`rejected ${JSON.stringify({ ...describe(error), stream, version: version + 1 })}\n`);
    }
  }
}

await Promise.all(Array.from({ length: writers }, (_, index) => write(`w${index}`)));
if (failed) {
  try {
    await log.appendToStream("after-failure", [{ type: "test.disk.appended", data: {} }]);
    process.stdout.write(`refused ${JSON.stringify({ acked: true })}\n`);
  } catch (error) {
    process.stdout.write(`refused ${JSON.stringify({ code: describe(error).code })}\n`);
  }
}
try {
  await log.close();
  process.stdout.write("closed\n");
} catch (error) {
  process.stdout.write(`close-failed ${describe(error).message}\n`);
}
