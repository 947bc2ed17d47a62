import { mkdir, readFile, stat } from "node:fs/promises";
import path from "node:path";
import { SealFileError } from "../../errors/seal-file-error.js";
import type { LogLocation } from "../log-location.js";
import type { Seal } from "./seal-record.js";
import { writePrivately } from "./seal-key.js";
import { logIdentity } from "./log-identity.js";
import { sealKeyDirectory } from "../../util/state-directories.js";

/** What the witness keeps of a stream's latest seal. */
export interface WitnessedSeal {
  version: number;
  hash: string;
  signature: string;
  sealedAt: string;
  keyId: string;
}

/**
 * Where a log's latest seals are kept outside it (docs/security.md, "Where the witness is kept"):
 * the file beside the seal key ({@link SealWitness}), a directory ({@link DirectoryWitness}), or
 * an append-only HTTP service ({@link HttpWitness}). The sealer calls `open()` before its first
 * seal and `record(seal)` after each seal is durable in the log; `verify` reads it.
 */
export interface SealWitnessStore {
  /** Where it is: a file, a directory or a URL (what a seal names as its witness). */
  readonly file: string;
  /** The latest seal per stream; empty when nothing was witnessed. An unreadable witness throws. */
  read(): Promise<Map<string, WitnessedSeal>>;
  record(seal: Seal): Promise<void>;
  /** Makes the witness exist before the first seal names it (idempotent). */
  open?(): Promise<void>;
  /** Whether the witness was ever opened or written: `false` once it is deleted. */
  exists?(): Promise<boolean>;
}

interface WitnessFile {
  format: "turnlog-witness/1";
  /** The log directory it witnesses (for people reading the file; the file name is what counts). */
  log: string;
  streams: Record<string, WitnessedSeal>;
}

/**
 * A record kept outside the log of the latest seal of each of its streams, so that what the
 * hash chain and in-log seals cannot show — a whole tail removed with its seals, a whole stream,
 * the whole log — is still found: `verify` compares the log with it. One JSON file per log (mode
 * 0600), updated after each seal is durable in the log (so a crash between the two leaves the
 * witness behind the log, never ahead of it).
 *
 * @example
 * const witness = SealWitness.forLogDirectory(".turnlog"); // ~/.config/turnlog/witness/turnlog-….json
 */
export class SealWitness implements SealWitnessStore {
  #streams: Map<string, WitnessedSeal> | undefined;
  #writing: Promise<unknown> = Promise.resolve();

  constructor(
    /** The witness file. */
    readonly file: string,
    /** What the file says it witnesses. */
    readonly label: string,
  ) {}

  /**
   * The witness of the log in `logDirectory`, kept in `<directory>/witness/` (default: beside the
   * seal key, {@link sealKeyDirectory}), named after the directory's real path.
   *
   * @example
   * SealWitness.forLogDirectory("/work/app/.turnlog", { directory: "/home/ada/.config/turnlog" });
   */
  static forLogDirectory(logDirectory: string, options: { directory?: string } = {}): SealWitness {
    return SealWitness.forLogLocation({ dir: logDirectory }, options);
  }

  /**
   * The witness of the log at `location` ({@link logIdentity}): for a directory, named after its
   * real path; for a PostgreSQL schema, after the database's address without credentials and the
   * schema — so no password lands in a file name or in the file.
   *
   * @example
   * SealWitness.forLogLocation({ url: "postgres://ada:pw@db.internal/agents", schema: "turnlog" });
   * // ~/.config/turnlog/witness/postgres-db.internal-agents-turnlog-….json, witnessing "postgres://db.internal:5432/agents (schema turnlog)"
   */
  static forLogLocation(location: LogLocation, options: { directory?: string } = {}): SealWitness {
    const { label, name } = logIdentity(location);
    return new SealWitness(path.join(options.directory ?? sealKeyDirectory(), "witness", `${name}.json`), label);
  }

  /**
   * The latest seal per stream, as witnessed; empty when nothing was ever witnessed. An
   * unreadable file is an error, never an empty witness (that would excuse any deletion).
   */
  async read(): Promise<Map<string, WitnessedSeal>> {
    let text: string;
    try {
      text = await readFile(this.file, "utf8");
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "ENOENT") return new Map();
      throw error;
    }
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      throw new SealFileError(this.file, `the seal witness ${this.file} is not valid JSON`);
    }
    const file = parsed as Partial<WitnessFile>;
    if (file.format !== "turnlog-witness/1" || typeof file.streams !== "object" || file.streams === null) {
      throw new SealFileError(this.file, `the seal witness ${this.file} is not in the format turnlog-witness/1`);
    }
    return new Map(Object.entries(file.streams));
  }

  /** Records `seal` as its stream's latest. Calls run one after another. */
  record(seal: Seal): Promise<void> {
    return this.#write((streams) => streams.set(seal.stream, { version: seal.version, hash: seal.hash, signature: seal.signature, sealedAt: seal.sealedAt, keyId: seal.keyId }));
  }

  /** Writes the file (with no stream yet) when there is none, so that its deletion can be told. */
  async open(): Promise<void> {
    if (await this.exists()) return;
    await this.#write(() => undefined);
  }

  async exists(): Promise<boolean> {
    return stat(this.file).then(
      () => true,
      (error: NodeJS.ErrnoException) => {
        if (error.code === "ENOENT") return false;
        throw error;
      },
    );
  }

  #write(change: (streams: Map<string, WitnessedSeal>) => unknown): Promise<void> {
    const result = this.#writing.then(async () => {
      this.#streams ??= await this.read();
      change(this.#streams);
      const file: WitnessFile = { format: "turnlog-witness/1", log: this.label, streams: Object.fromEntries([...this.#streams].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) };
      await mkdir(path.dirname(this.file), { recursive: true, mode: 0o700 });
      await writePrivately(this.file, `${JSON.stringify(file, null, 1)}\n`, 0o600);
    });
    this.#writing = result.catch(() => undefined);
    return result;
  }
}

