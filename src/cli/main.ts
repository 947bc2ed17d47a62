/**
 * The `turnlog` executable (built to `dist/cli.js`, started by `bin/turnlog.js`). The exit code is
 * set rather than forced with `process.exit`, so pending output is flushed before the process ends.
 */
import { runCli } from "./run-cli.js";

// `turnlog audit <id> | head` closes the pipe early: that is the reader's choice, not an error,
// so the command ends quietly instead of printing a stack trace.
for (const stream of [process.stdout, process.stderr]) {
  stream.on("error", (error: NodeJS.ErrnoException) => {
    if (error.code === "EPIPE") process.exit(process.exitCode ?? 0);
    throw error;
  });
}

process.exitCode = await runCli(process.argv.slice(2));
