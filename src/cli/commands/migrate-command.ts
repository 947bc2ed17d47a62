import pg from "pg";
import { isPostgresLocation, type ResolvedLogLocation } from "../../log/log-location.js";
import { migratePostgres, type MigrationReport } from "../../log/postgres/postgres-migrations.js";
import { printJson, type CommandContext } from "../cli-io.js";
import { exitCodes } from "../../errors/cli-error.js";
import { describeLocation, postgresOpenError } from "../log-directory.js";

/**
 * `turnlog migrate --log postgres://…`: brings the schema to this turnlog's version, creating it
 * and its tables when missing, and prints the steps it applied (or that the schema is current).
 * Safe to run from many machines at once: the migration holds a lock in the database. A LevelDB
 * directory has nothing to migrate: it says so and exits 0.
 *
 * @example
 * // turnlog migrate --log postgres://turnlog@db.internal/agents --schema team_a
 */
export async function migrateCommand(options: { location: ResolvedLogLocation; json?: boolean }, context: CommandContext): Promise<number> {
  const { location } = options;
  const { print, paint } = context;
  if (!isPostgresLocation(location)) {
    if (options.json) printJson(context, { location: location.dir, backend: "leveldb", applied: [] });
    else print(`${location.dir} is a LevelDB log directory: LevelDB needs no migration (its layout is checked when it opens)`);
    return exitCodes.ok;
  }
  const where = describeLocation(location);
  const pool = new pg.Pool({ connectionString: location.url, max: 1, application_name: "turnlog migrate" });
  // A connection that breaks while idle must not crash the command; the query in use fails instead.
  pool.on("error", () => undefined);
  let report: MigrationReport;
  try {
    report = await migratePostgres(pool, location.schema);
  } catch (error) {
    throw postgresOpenError(error, location, where);
  } finally {
    await pool.end().catch(() => undefined);
  }
  if (options.json) {
    printJson(context, report);
    return exitCodes.ok;
  }
  if (report.applied.length === 0) {
    print(`${paint("good", "current")}: ${where} is at schema version ${report.version}; nothing to apply`);
    return exitCodes.ok;
  }
  print(`${paint("good", "migrated")} ${where} to schema version ${report.version}:`);
  for (const step of report.applied) print(`  ${step.version}  ${step.name}`);
  return exitCodes.ok;
}
