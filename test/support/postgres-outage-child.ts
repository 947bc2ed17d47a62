/**
 * Child process of the PostgreSQL log's "connection ended by the server" test: with the test
 * holding the schema's migration lock and then a stream's lock, it opens the log at argv[2] (schema
 * argv[3]) and appends to stream `s1`, each time until it succeeds, printing one line per try:
 * `open rejected <code>` / `opened`, then `append rejected <code>` / `appended <version>`. The test
 * ends the backend of each first try (pg_terminate_backend); the process must live on and retry.
 */
import { LogUnavailableError, PostgresEventLog } from "../../src/index.js";

const [url, schema] = process.argv.slice(2);
if (url === undefined || schema === undefined) throw new TypeError("usage: postgres-outage-child.ts <url> <schema>");
const print = (line: string) => process.stdout.write(`${line}\n`);
/** The typed error's code and the server's SQLSTATE (`TURNLOG_LOG_UNAVAILABLE 57P01`), else what the error says. */
const codeOf = (error: unknown) =>
  LogUnavailableError.isInstance(error) ? `${error.code} ${error.sqlState ?? error.errno ?? error.kind}` : String((error as { code?: unknown }).code ?? (error as Error).message);

let log: PostgresEventLog | undefined;
while (log === undefined) {
  log = await PostgresEventLog.open(url, { schema, poolSize: 1 }).catch((error: unknown) => {
    print(`open rejected ${codeOf(error)}`);
    return undefined;
  });
}
print("opened");
for (;;) {
  try {
    const result = await log.appendToStream("s1", [{ type: "test.appended", data: {} }]);
    print(`appended ${result.nextExpectedStreamVersion}`);
    break;
  } catch (error) {
    print(`append rejected ${codeOf(error)}`);
  }
}
await log.close();
