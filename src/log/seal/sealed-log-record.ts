import { mkdir, readFile } from "node:fs/promises";
import path from "node:path";
import { SealFileError } from "../../errors/seal-file-error.js";
import type { LogLocation } from "../log-location.js";
import { writePrivately } from "./seal-key.js";
import { logIdentity } from "./log-identity.js";
import { sealKeyDirectory } from "../../util/state-directories.js";

/** What the seal key's directory remembers of a log it sealed. */
export interface SealedLogEntry {
  format: "turnlog-sealed-log/1";
  /** The log (its directory's real path, or its PostgreSQL address without credentials). */
  log: string;
  /** Where its witness is kept (a file, a directory or a URL), or `null` when none was kept. */
  witness: string | null;
  /** When the first seal of this record was durable in the log. */
  firstSealedAt: string;
}

/**
 * The seal key's record of a log it sealed, `<key directory>/logs/<log name>.json`: written once
 * the log's first seal is durable, so a log that is gone or emptied is named (`emptied-log`) even
 * when its witness went with it, and a witness deleted is told from one never kept (`no-witness`).
 * Written after a durable seal, never before: a crash before any seal leaves no record, so a log
 * that never held a seal is never reported as emptied.
 *
 * @example
 * const record = SealedLogRecord.forLogLocation({ dir: ".turnlog" });
 * (await record.read())?.witness; // "https://witness.internal"
 */
export class SealedLogRecord {
  constructor(
    readonly file: string,
    readonly label: string,
  ) {}

  /** The record of the log at `location`, in `<directory>/logs/` (default {@link sealKeyDirectory}). */
  static forLogLocation(location: LogLocation, options: { directory?: string } = {}): SealedLogRecord {
    const { label, name } = logIdentity(location);
    return new SealedLogRecord(path.join(options.directory ?? sealKeyDirectory(), "logs", `${name}.json`), label);
  }

  /** The record, or `undefined` when this key never sealed the log. */
  async read(): Promise<SealedLogEntry | undefined> {
    let text: string;
    try {
      text = await readFile(this.file, "utf8");
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
      throw error;
    }
    let entry: Partial<SealedLogEntry>;
    try {
      entry = JSON.parse(text) as Partial<SealedLogEntry>;
    } catch {
      throw new SealFileError(this.file, `the sealed-log record ${this.file} is not valid JSON`);
    }
    if (entry.format !== "turnlog-sealed-log/1" || typeof entry.log !== "string" || (entry.witness !== null && typeof entry.witness !== "string") || typeof entry.firstSealedAt !== "string") {
      throw new SealFileError(this.file, `the sealed-log record ${this.file} is not in the format turnlog-sealed-log/1`);
    }
    return entry as SealedLogEntry;
  }

  /**
   * Records that the log is sealed, with its witness: kept as it is when it says so already, the
   * witness updated when the log is now witnessed elsewhere (the first seal's time stays), and
   * never changed to "no witness".
   */
  async write(witness: string | null, sealedAt: string): Promise<void> {
    const known = await this.read().catch(() => undefined);
    // Never downgraded: a later sealer without a witness does not unsay that the log had one.
    if (known !== undefined && (known.witness === witness || witness === null)) return;
    const entry: SealedLogEntry = { format: "turnlog-sealed-log/1", log: this.label, witness, firstSealedAt: known?.firstSealedAt ?? sealedAt };
    await mkdir(path.dirname(this.file), { recursive: true, mode: 0o700 });
    await writePrivately(this.file, `${JSON.stringify(entry, null, 1)}\n`, 0o600);
  }
}
