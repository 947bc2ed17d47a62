import { printJson, type CommandContext } from "../cli-io.js";
import { CliError, exitCodes } from "../../errors/cli-error.js";
import { logExists } from "../log-directory.js";
import { describeRepair, repairLevelLog } from "../../log/level/level-repair.js";
import { describeThrown } from "../../util/json-value.js";

/**
 * `turnlog repair <log-dir> --out <new-dir>`: salvages every stream's valid prefix (its events up
 * to the first missing or unverifiable one) of a damaged LevelDB log into a new log, and prints
 * what it kept and dropped per stream (docs/log.md, "Damaged files"). The damaged log is read from
 * a copy and never changed. Exit 0 when nothing was dropped, 1 when events were (the new log is
 * written either way).
 */
export async function repairCommand(directory: string, options: { out?: string; json?: boolean }, context: CommandContext): Promise<number> {
  if (options.out === undefined) throw new CliError("repair writes a new log: pass --out <new-dir>", { exitCode: exitCodes.usage });
  if (!logExists(directory)) throw new CliError(`no LevelDB log at ${directory}`);
  let report;
  try {
    report = await repairLevelLog(directory, options.out);
  } catch (error) {
    throw new CliError(`cannot repair ${directory}: ${describeThrown(error)}`, { cause: error });
  }
  if (options.json) printJson(context, report);
  else for (const line of describeRepair(report)) context.print(line);
  return report.dropped === 0 ? exitCodes.ok : exitCodes.failure;
}
