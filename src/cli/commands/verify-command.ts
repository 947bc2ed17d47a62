import { printJson, type CommandContext } from "../cli-io.js";
import { exitCodes } from "../cli-error.js";
import { readOnly, withLog } from "../log-directory.js";

/**
 * `turnlog verify`: walks every hash chain in the log. Exits 1 when one is broken, naming the
 * stream and the first bad position, so it can gate a pipeline.
 */
export async function verifyCommand(options: { dir: string; json?: boolean }, context: CommandContext): Promise<number> {
  const report = await withLog(options.dir, readOnly(context.io), (log) => log.verify());
  if (options.json) {
    printJson(context, report);
  } else if (report.ok) {
    context.print(`${context.paint("good", "ok")}: ${report.checked} events checked`);
  } else {
    context.print(
      `${context.paint("bad", "broken chain")}: stream ${report.stream ?? "?"} position ${report.firstBadPosition ?? "?"}: ${report.reason ?? "unknown fault"}`,
    );
  }
  return report.ok ? exitCodes.ok : exitCodes.failure;
}
