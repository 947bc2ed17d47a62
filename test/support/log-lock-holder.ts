/**
 * Child process for the lock test: opens the LevelEventLog in argv[2] (with `answers: false` when
 * argv[3] is `no-answers`), says "ready", and holds it until the parent kills it. With argv[4]
 * `close-when-tried`, it closes the log (giving the lock back) and exits as soon as another process
 * has tried to open it and failed: LevelDB moves the directory's `LOG` to `LOG.old` before it looks
 * at the lock, so that rename is the other process's attempt.
 */
import { watch } from "node:fs";
import { LevelEventLog } from "../../src/log/level/level-event-log.js";

const directory = process.argv[2];
if (directory === undefined) throw new TypeError("usage: log-lock-holder.ts <directory> [no-answers] [close-when-tried]");
const log = await LevelEventLog.open(directory, { durability: "relaxed", ...(process.argv[3] === "no-answers" ? { answers: false } : {}) });
if (process.argv[4] === "close-when-tried") {
  const watcher = watch(directory, (_event, name) => {
    if (name !== "LOG.old") return;
    watcher.close();
    void log.close().then(() => process.exit(0));
  });
}
process.stdout.write("ready\n");
// Keeps the process (and so the LOCK file) alive until the parent kills it.
setInterval(() => {}, 60_000);
