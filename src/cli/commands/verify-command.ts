import { isPostgresLocation, type ResolvedLogLocation } from "../../log/log-location.js";
import { terminalSafe, terminalText } from "../terminal-text.js";
import { readFile } from "node:fs/promises";
import { printJson, type CommandContext } from "../cli-io.js";
import { CliError, exitCodes } from "../../errors/cli-error.js";
import { describeLocation, isMissingPostgresLog, logExists, readOnly, withLog, withSalvagedCopyOfLogDirectory } from "../log-directory.js";
import { LogCorruptedError } from "../../errors/log-corrupted-error.js";
import { loadSealKey, sealKeyFromPem, type SealKey } from "../../log/seal/seal-key.js";
import type { SealWitnessStore } from "../../log/seal/seal-witness.js";
import { SealedLogRecord, type SealedLogEntry } from "../../log/seal/sealed-log-record.js";
import { userWitness } from "../../log/seal/user-seals.js";
import { verifySealedLog, witnessNamedBy, type SealFault, type SealedVerifyReport } from "../../log/seal/seal-verifier.js";
import type { EventLog } from "../../log/event-log.js";
import { TurnlogError } from "../../errors/turnlog-error.js";
import { salvageLevelLog } from "../../log/level/level-repair.js";
import { describeDamage, findDamagedFile } from "../../log/level/level-files.js";
import { sealKeyDirectory } from "../../util/state-directories.js";
import { describeThrown } from "../../util/json-value.js";

/** What `turnlog verify` is given. */
export interface VerifyOptions {
  location: ResolvedLogLocation;
  json?: boolean;
  publicKey?: readonly string[];
  /** `--witness <dir|url>`: where the log's witness is kept, when not beside the seal key. */
  witness?: string;
  /** The log could not be named (a usage mistake): with `--json` it is reported as JSON too. */
  locationError?: unknown;
}

/**
 * `turnlog verify`: walks every hash chain in the log, checks every seal against the user's seal
 * key (and `--public-key` files), and compares the log with its witness (`--witness`, else the one
 * the seal key's record names, else the file beside the key). Exits 1 on any fault, naming it
 * (truncated, deleted-stream, emptied-log, dropped-tail, rewritten, forged-approval,
 * unsealed-approval, unsealed-turn-end, unsealed-stream, no-witness, …), so it can gate a
 * pipeline; an unsealed tail (events after the last seal: a crash) is reported but is not a
 * failure. A log that is gone is reported from the witness and the seal key's record. With
 * `--json` it always prints JSON: a log that cannot be read at all (missing, locked, a key that
 * cannot be used) is `{ ok: false, error: { code, message, exitCode }, … }` (docs/errors.md).
 */
export async function verifyCommand(options: VerifyOptions, context: CommandContext): Promise<number> {
  if (options.json !== true) {
    if (options.locationError !== undefined) throw options.locationError;
    return verifyLog(options, context);
  }
  try {
    if (options.locationError !== undefined) throw options.locationError;
    return await verifyLog(options, context);
  } catch (error) {
    const exitCode = error instanceof CliError ? error.exitCode : exitCodes.failure;
    const cause = error instanceof CliError && error.cause !== undefined ? error.cause : error;
    const code = TurnlogError.isTurnlogError(cause) ? cause.code : TurnlogError.isTurnlogError(error) ? error.code : "TURNLOG_CLI";
    const message = describeThrown(error);
    const report: SealedVerifyReport & { error: { code: string; message: string; exitCode: number } } = {
      ok: false,
      checked: 0,
      reason: message,
      faults: [],
      seals: { verified: 0, sealedStreams: 0, keyIds: [] },
      unsealed: [],
      witness: null,
      error: { code, message, exitCode },
    };
    printJson(context, report);
    return exitCode;
  }
}

async function verifyLog(options: VerifyOptions, context: CommandContext): Promise<number> {
  const { env } = context.io;
  const keyDirectory = sealKeyDirectory(env);
  const keys = await trustedKeys(keyDirectory, options.publicKey ?? []);
  const { location } = options;
  const recordFile = SealedLogRecord.forLogLocation(location, { directory: keyDirectory });
  let record: SealedLogEntry | undefined;
  try {
    record = await recordFile.read();
  } catch (error) {
    throw new CliError(describeThrown(error), { cause: error });
  }
  /** What the log is checked against; its own seals say where it was witnessed, should it have moved. */
  const against = async (log?: EventLog) => {
    let witness: SealWitnessStore;
    try {
      witness = await userWitness(location, keyDirectory, options.witness, recordFile, log !== undefined ? await witnessNamedBy(log) : undefined);
    } catch (error) {
      throw new CliError(describeThrown(error), { cause: error });
    }
    return { keys, witness, ...(record !== undefined ? { record } : {}) };
  };
  let report: SealedVerifyReport | undefined;
  let damaged: { file: string | undefined; message: string } | undefined;
  if (isPostgresLocation(location) || logExists(location.dir)) {
    try {
      report = await withLog(location, readOnly(context.io), async (log) => verifySealedLog(log, await against(log)));
    } catch (error) {
      const corrupted = error instanceof CliError ? error.cause : error;
      if (!isPostgresLocation(location) && LogCorruptedError.isInstance(corrupted) && corrupted.file !== undefined) {
        // A damaged file refuses the open: the chains are walked on a copy LevelDB salvaged, so
        // the first bad position is named too, and the log itself is left as it is.
        damaged = { file: corrupted.file, message: corrupted.message };
        report = await withSalvagedCopyOfLogDirectory(location.dir, async (log) => verifySealedLog(log, await against(log)));
        // LevelDB's recovery drops what follows a damaged record without a word, so the chains of
        // that copy can look whole: each stream's first bad position comes from what a repair keeps.
        const { streams } = await salvageLevelLog(location.dir);
        const faults: SealFault[] = streams
          .filter((row) => row.dropped > 0)
          .map((row) => ({ kind: "chain", stream: row.stream, position: row.firstBadPosition ?? row.kept + 1, reason: `${row.reason ?? "missing"} (${row.dropped} event${row.dropped === 1 ? "" : "s"} from there on cannot be salvaged)` }));
        report = { ...report, ok: false, faults: [...faults, ...report.faults] };
        const first = faults[0];
        if (first !== undefined && report.firstBadPosition === undefined) report = { ...report, stream: first.stream, firstBadPosition: first.position, reason: first.reason };
      } else if (!isMissingPostgresLog(error)) {
        // A schema without turnlog's tables is a log that is gone (or never was): the witness tells which.
        throw error;
      }
    }
  }
  if (report !== undefined && damaged === undefined && !isPostgresLocation(location)) {
    // `open` checks each table's index and filter; a damaged data block is found only when it is
    // read, so verify reads every table whole against its checksums (read-only; a file a running
    // owner compacts away meanwhile is simply not checked).
    const damage = await findDamagedFile(location.dir, { deep: true }).catch(() => undefined);
    if (damage !== undefined) damaged = { file: damage.file, message: describeDamage(damage) };
  }
  if (report === undefined) {
    // A log that is gone is only a user's typo when nothing was ever sealed there.
    report = await verifySealedLog(undefined, await against());
    if (report.ok) throw new CliError(`no log at ${describeLocation(location)} — run "npx turnlog demo" first or pass --log`);
  }
  if (options.json) {
    printJson(context, damaged === undefined ? report : { ...report, ok: false, damagedFile: damaged });
  } else {
    if (damaged !== undefined) context.print(`${context.paint("bad", "damaged file")}: ${terminalText(`${damaged.file ?? "?"}: ${damaged.message}`)}`);
    // Stream names and reasons may quote the log: printed escaped (docs/security.md).
    printReport(terminalSafe(report), context);
  }
  return report.ok && damaged === undefined ? exitCodes.ok : exitCodes.failure;
}

async function trustedKeys(keyDirectory: string, publicKeyFiles: readonly string[]): Promise<SealKey[]> {
  const keys: SealKey[] = [];
  try {
    const own = await loadSealKey(keyDirectory);
    if (own !== undefined) keys.push(own);
  } catch (error) {
    throw new CliError(describeThrown(error), { cause: error });
  }
  for (const file of publicKeyFiles) {
    try {
      keys.push(sealKeyFromPem(await readFile(file, "utf8")));
    } catch (error) {
      throw new CliError(`--public-key ${file}: ${describeThrown(error)}`, { exitCode: exitCodes.usage, cause: error });
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
