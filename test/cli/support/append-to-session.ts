/**
 * A second process that appends to a session of a LevelDB log while a test watches it:
 * `node --import tsx append-to-session.ts <logDir> <sessionId> <text>...` appends one
 * `session.user_message.added` per text, one append each, then closes the log.
 */
import { LevelEventLog } from "../../../src/log/level/level-event-log.js";
import { sessionStream } from "../../../src/core/session-stream.js";

const [directory, sessionId, ...texts] = process.argv.slice(2);
if (directory === undefined || sessionId === undefined) throw new TypeError("usage: append-to-session.ts <logDir> <sessionId> <text>...");
const log = await LevelEventLog.open(directory);
try {
  for (const content of texts) await log.appendToStream(sessionStream(sessionId), [{ type: "session.user_message.added", data: { content } }]);
} finally {
  await log.close();
}
