// Declared in src/errors with every coded error; the CLI's commands import them from here.
export { CliError, exitCodes } from "../errors/cli-error.js";
