import { startWitnessServer } from "../../log/seal/witness-server.js";
import type { CommandContext } from "../cli-io.js";
import { untilInterrupted } from "../cli-io.js";
import { CliError, exitCodes } from "../../errors/cli-error.js";
import { describeThrown } from "../../util/json-value.js";

/**
 * `turnlog witness serve --dir <records> [--host h] [--port p]`: the append-only witness service
 * that `turnlog run --witness <url>` records seals with (docs/security.md, "Where the witness is
 * kept"). Prints its URL, serves until SIGINT or SIGTERM (exit 0).
 */
export async function witnessServeCommand(options: { dir: string; host?: string; port?: string }, context: CommandContext): Promise<number> {
  const port = options.port === undefined ? 0 : Number(options.port);
  if (!Number.isInteger(port) || port < 0 || port > 65_535) throw new CliError(`--port ${options.port ?? ""} is not a port number`, { exitCode: exitCodes.usage });
  let server;
  try {
    server = await startWitnessServer({ directory: options.dir, ...(options.host !== undefined ? { host: options.host } : {}), port });
  } catch (error) {
    throw new CliError(`the witness cannot listen on ${options.host ?? "127.0.0.1"}:${port}: ${describeThrown(error)}`, { cause: error });
  }
  // Listening for Ctrl-C before the URL is out: whoever reads the URL may stop the server at once.
  const interrupted = untilInterrupted();
  context.print(`turnlog witness — records in ${options.dir}, only ever added (Ctrl-C stops it)`);
  context.print(`  ${server.url}`);
  await interrupted;
  await server.close();
  return exitCodes.ok;
}
