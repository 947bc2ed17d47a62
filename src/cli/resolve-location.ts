import { describeThrown } from "../util/json-value.js";
import { isPostgresLocation, parseLogLocation, schemaFromEnvironment, type ResolvedLogLocation } from "../log/log-location.js";
import { isPostgresUrl } from "../log/postgres/connection-string.js";
import { assertSchemaName } from "../log/postgres/postgres-migrations.js";
import { CliError, exitCodes } from "../errors/cli-error.js";
import { defaultLogLocation, demoLogLocation, runLogLocation, verifyLogLocation } from "./log-directory.js";

/** Which default a command's log falls back to (log-directory.ts): `run`, `demo` and `verify` have their own. */
export type LocationKind = "read" | "run" | "demo" | "verify";

/**
 * The log a command works on: `--log` or `--dir` (one of them), else what the environment or the
 * command's default (`kind`) names. `--schema` (else `$TURNLOG_SCHEMA`, else `turnlog`) applies to
 * a PostgreSQL log only. A module of its own so that the command table (run-cli.ts) loads it only
 * when a command runs.
 *
 * @example
 * resolveLocation({ dir: ".turnlog" }, process.env, "read"); // { dir: ".turnlog" }
 */
export function resolveLocation(options: { log?: string; dir?: string; schema?: string }, env: NodeJS.ProcessEnv, kind: LocationKind): ResolvedLogLocation {
  if (options.log !== undefined && options.dir !== undefined) throw new CliError("--log and --dir both name the log — give one of them", { exitCode: exitCodes.usage });
  if (options.dir !== undefined && isPostgresUrl(options.dir)) throw new CliError("--dir takes a directory — a PostgreSQL URL goes in --log", { exitCode: exitCodes.usage });
  const named = options.log ?? options.dir;
  if (named === "") throw new CliError("--log needs a directory or a postgres:// URL", { exitCode: exitCodes.usage });
  let location = named !== undefined ? parseLogLocation(named, schemaFromEnvironment(env)) : defaults[kind](env);
  if (options.schema !== undefined) {
    if (!isPostgresLocation(location)) throw new CliError("--schema names a schema of a PostgreSQL log (--log postgres://…); a log directory has none", { exitCode: exitCodes.usage });
    location = { ...location, schema: options.schema };
  }
  if (isPostgresLocation(location)) {
    try {
      assertSchemaName(location.schema);
    } catch (error) {
      throw new CliError(`--schema: ${describeThrown(error)}`, { exitCode: exitCodes.usage });
    }
  }
  return location;
}

/** Each kind's default log, looked up only when neither `--log` nor `--dir` is given (a lookup reads the disk). */
const defaults: Record<LocationKind, (env: NodeJS.ProcessEnv) => ResolvedLogLocation> = {
  read: (env) => defaultLogLocation(env),
  run: (env) => runLogLocation(env),
  demo: (env) => demoLogLocation(env),
  verify: (env) => verifyLogLocation(env),
};
