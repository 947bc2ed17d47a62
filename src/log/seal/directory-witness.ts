import { createHash } from "node:crypto";
import { mkdir, open, readdir, readFile, stat } from "node:fs/promises";
import path from "node:path";
import { SealFileError } from "../../errors/seal-file-error.js";
import type { Seal } from "./seal-record.js";
import type { LogIdentity } from "./log-identity.js";
import type { SealWitnessStore, WitnessedSeal } from "./seal-witness.js";

/** The first line of each record file. */
interface DirectoryWitnessRecord extends WitnessedSeal {
  format: "turnlog-witness-record/1";
  stream: string;
}

/**
 * A witness kept in a directory given with `--witness <dir>` (or `createRuntime({ seals: { witness } })`),
 * as records that are only ever added: `<dir>/<log name>/` holds one file per seal, created once
 * (`O_EXCL`) and never rewritten, renamed or removed. So the directory may be one the agent's
 * user can add to but not change — `chattr +a`, a mount of another machine's, a directory another
 * user's service copies away — and a rollback is then out of its reach (docs/security.md, "Where
 * the witness is kept"). Only each file's first line counts: a crash mid-write leaves a line
 * without its newline, which is skipped, and text appended after it changes nothing.
 *
 * @example
 * const witness = new DirectoryWitness("/mnt/witness", logIdentity({ dir: ".turnlog" }));
 */
export class DirectoryWitness implements SealWitnessStore {
  /** The witness directory (what a seal names). */
  readonly file: string;
  /** The log's folder in it. */
  readonly #folder: string;

  constructor(
    directory: string,
    private readonly identity: LogIdentity,
  ) {
    this.file = path.resolve(directory);
    this.#folder = path.join(this.file, identity.name);
  }

  async open(): Promise<void> {
    await mkdir(this.#folder, { recursive: true, mode: 0o700 });
    await writeOnce(path.join(this.#folder, "log.txt"), `${this.identity.label}\n`);
  }

  async exists(): Promise<boolean> {
    return stat(this.#folder).then(
      (info) => info.isDirectory(),
      (error: NodeJS.ErrnoException) => {
        if (error.code === "ENOENT") return false;
        throw error;
      },
    );
  }

  async record(seal: Seal): Promise<void> {
    await this.open();
    const record: DirectoryWitnessRecord = { format: "turnlog-witness-record/1", stream: seal.stream, version: seal.version, hash: seal.hash, signature: seal.signature, sealedAt: seal.sealedAt, keyId: seal.keyId };
    const streamDigest = createHash("sha256").update(seal.stream).digest("hex").slice(0, 16);
    await writeOnce(path.join(this.#folder, `${streamDigest}-${String(seal.version).padStart(12, "0")}.json`), `${JSON.stringify(record)}\n`);
  }

  async read(): Promise<Map<string, WitnessedSeal>> {
    let names: string[];
    try {
      names = await readdir(this.#folder);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "ENOENT") return new Map();
      throw error;
    }
    const latest = new Map<string, WitnessedSeal>();
    for (const name of names.filter((entry) => entry.endsWith(".json")).sort()) {
      const file = path.join(this.#folder, name);
      const text = await readFile(file, "utf8");
      const newline = text.indexOf("\n");
      // A record cut short by a crash: its seal was durable in the log, the witness stays behind it.
      if (newline < 0) continue;
      let record: Partial<DirectoryWitnessRecord>;
      try {
        record = JSON.parse(text.slice(0, newline)) as Partial<DirectoryWitnessRecord>;
      } catch {
        throw new SealFileError(file, `the witness record ${file} is not valid JSON`);
      }
      const { stream, version, hash, signature, sealedAt, keyId } = record;
      if (record.format !== "turnlog-witness-record/1" || typeof stream !== "string" || !Number.isSafeInteger(version) || typeof hash !== "string" || typeof signature !== "string" || typeof sealedAt !== "string" || typeof keyId !== "string") {
        throw new SealFileError(file, `the witness record ${file} is not in the format turnlog-witness-record/1`);
      }
      const known = latest.get(stream);
      if (known === undefined || known.version < (version as number)) latest.set(stream, { version: version as number, hash, signature, sealedAt, keyId });
    }
    return latest;
  }
}

/** Creates `file` with `text` and fsyncs it; a file already there is left as it is (records are never rewritten). */
async function writeOnce(file: string, text: string): Promise<void> {
  let handle;
  try {
    handle = await open(file, "wx", 0o600);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "EEXIST") return;
    throw error;
  }
  try {
    await handle.writeFile(text);
    await handle.sync();
  } finally {
    await handle.close();
  }
}
