/**
 * The `turnlog` executable (built to `dist/cli.js`, started by `bin/turnlog.js`). The exit code is
 * set rather than forced with `process.exit`, so pending output is flushed before the process ends.
 */
import { runCli } from "./run-cli.js";

process.exitCode = await runCli(process.argv.slice(2));
