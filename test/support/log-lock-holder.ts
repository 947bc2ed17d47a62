/**
 * Child process for the lock test: opens the LevelEventLog in argv[2] (with `answers: false` when
 * argv[3] is `no-answers`), says "ready", and holds it until the parent kills it.
 */
import { LevelEventLog } from "../../src/log/level/level-event-log.js";

const directory = process.argv[2];
if (directory === undefined) throw new TypeError("usage: log-lock-holder.ts <directory>");
await LevelEventLog.open(directory, { durability: "relaxed", ...(process.argv[3] === "no-answers" ? { answers: false } : {}) });
process.stdout.write("ready\n");
// Keeps the process (and so the LOCK file) alive until the parent kills it.
setInterval(() => {}, 60_000);
