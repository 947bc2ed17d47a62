import { isPostgresLocation, type ResolvedLogLocation } from "../../log/log-location.js";
import { readFile } from "node:fs/promises";
import { printJson, type CommandContext } from "../cli-io.js";
import { CliError, exitCodes } from "../cli-error.js";
import { describeLocation, isMissingPostgresLog, logExists, readOnly, withLog } from "../log-directory.js";
import { loadSealKey, sealKeyFromPem, type SealKey } from "../../log/seal/seal-key.js";
import { SealWitness } from "../../log/seal/seal-witness.js";
import { verifySealedLog, type SealedVerifyReport } from "../../log/seal/seal-verifier.js";
import { sealKeyDirectory } from "../../log/seal/user-directories.js";

/**
 * `turnlog verify`: walks every hash chain in the log, checks every seal against the user's seal
 * key (and `--public-key` files), and compares the log with its witness. Exits 1 on any fault,
 * naming it (truncated, deleted-stream, emptied-log, dropped-tail, rewritten, forged-approval, …),
 * so it can gate a pipeline; an unsealed tail (events after the last seal: a crash) is reported
 * but is not a failure. A deleted log directory is reported from the witness.
 */
export async function verifyCommand(options: { location: ResolvedLogLocation; json?: boolean; publicKey?: readonly string[] }, context: CommandContext): Promise<number> {
  const { env } = context.io;
  const keyDirectory = sealKeyDirectory(env);
  const keys = await trustedKeys(keyDirectory, options.publicKey ?? []);
  const { location } = options;
  const witness = SealWitness.forLogLocation(location, { directory: keyDirectory });
  let report: SealedVerifyReport | undefined;
  if (isPostgresLocation(location) || logExists(location.dir)) {
    try {
      report = await withLog(location, readOnly(context.io), (log) => verifySealedLog(log, { keys, witness }));
    } catch (error) {
      // A schema without turnlog's tables is a log that is gone (or never was): the witness tells which.
      if (!isMissingPostgresLog(error)) throw error;
    }
  }
  if (report === undefined) {
    // A log that is gone is only a user's typo when nothing was ever sealed there.
    report = await verifySealedLog(undefined, { keys, witness });
    if (report.ok) throw new CliError(`no log at ${describeLocation(location)} — run "npx turnlog demo" first or pass --log`);
  }
  if (options.json) {
    printJson(context, report);
  } else {
    printReport(report, context);
  }
  return report.ok ? exitCodes.ok : exitCodes.failure;
}

async function trustedKeys(keyDirectory: string, publicKeyFiles: readonly string[]): Promise<SealKey[]> {
  const keys: SealKey[] = [];
  try {
    const own = await loadSealKey(keyDirectory);
    if (own !== undefined) keys.push(own);
  } catch (error) {
    throw new CliError(error instanceof Error ? error.message : String(error), { cause: error });
  }
  for (const file of publicKeyFiles) {
    try {
      keys.push(sealKeyFromPem(await readFile(file, "utf8")));
    } catch (error) {
      throw new CliError(`--public-key ${file}: ${error instanceof Error ? error.message : String(error)}`, { exitCode: exitCodes.usage, cause: error });
    }
  }
  return keys;
}

function printReport(report: SealedVerifyReport, context: CommandContext): void {
  const { print, paint } = context;
  const { seals } = report;
  const sealed = seals.verified === 0 ? "no seals" : `${seals.verified} seal${seals.verified === 1 ? "" : "s"} verified (key ${seals.keyIds.join(", ")})`;
  const witness = report.witness === null ? "no witness" : `witness ${report.witness.file}`;
  if (report.ok) {
    print(`${paint("good", "ok")}: ${report.checked} events checked · ${sealed} · ${witness}`);
  }
  for (const fault of report.faults) {
    const where = `stream ${fault.stream === "" ? "?" : fault.stream}${fault.position !== undefined ? ` position ${fault.position}` : ""}${fault.sealPosition !== undefined ? ` (seal #${fault.sealPosition})` : ""}`;
    if (fault.kind === "chain") print(`${paint("bad", "broken chain")}: ${where}: ${fault.reason}`);
    else print(`${paint("bad", fault.kind)}: ${where}: ${fault.reason}`);
  }
  if (!report.ok) print(paint("dim", `${report.checked} events checked · ${sealed} · ${witness}`));
  for (const tail of report.unsealed) {
    const range = tail.from === tail.to ? `event ${tail.from}` : `events ${tail.from}–${tail.to}`;
    const why = tail.from === 1 ? "never sealed (recorded before seals, or by a host that does not seal)" : "after its last seal (normal after a crash)";
    print(paint("dim", `unsealed: ${tail.stream} ${range} ${why}`));
  }
}
