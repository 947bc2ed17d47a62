import { createHash } from "node:crypto";
import { mkdir, readFile } from "node:fs/promises";
import path from "node:path";
import { SealFileError } from "../../errors/seal-file-error.js";
import { defaultPostgresSchema, isPostgresLocation, type LogLocation } from "../log-location.js";
import type { Seal } from "./seal-record.js";
import { writePrivately } from "./seal-key.js";
import { realPathOrResolved, sealKeyDirectory } from "./user-directories.js";

/** What the witness keeps of a stream's latest seal. */
export interface WitnessedSeal {
  version: number;
  hash: string;
  signature: string;
  sealedAt: string;
  keyId: string;
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
export class SealWitness {
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
    const real = realPathOrResolved(logDirectory);
    const name = `${path.basename(real).replace(/[^A-Za-z0-9._-]+/g, "-").replace(/^[-.]+/, "").slice(0, 40) || "log"}-${createHash("sha256").update(real).digest("hex").slice(0, 16)}.json`;
    return new SealWitness(path.join(options.directory ?? sealKeyDirectory(), "witness", name), real);
  }

  /**
   * The witness of the log at `location`: for a directory, {@link SealWitness.forLogDirectory};
   * for a PostgreSQL schema, one named after the database's address without credentials (host,
   * port, database, the socket directory if one is given) and the schema — so every user and
   * every machine that reaches the same schema names the same log, and no password lands in a
   * file name or in the file.
   *
   * @example
   * SealWitness.forLogLocation({ url: "postgres://ada:pw@db.internal/agents", schema: "turnlog" });
   * // ~/.config/turnlog/witness/postgres-db.internal-agents-turnlog-….json, witnessing "postgres://db.internal:5432/agents (schema turnlog)"
   */
  static forLogLocation(location: LogLocation, options: { directory?: string } = {}): SealWitness {
    if (!isPostgresLocation(location)) return SealWitness.forLogDirectory(location.dir, options);
    const label = postgresLogIdentity(location.url, location.schema ?? defaultPostgresSchema);
    const readable = label.replace(/^postgres:\/\//, "postgres-").replace(/ \(schema /, "-").replace(/[^A-Za-z0-9._-]+/g, "-").replace(/^[-.]+|-+$/g, "").slice(0, 60) || "postgres";
    const name = `${readable}-${createHash("sha256").update(label).digest("hex").slice(0, 16)}.json`;
    return new SealWitness(path.join(options.directory ?? sealKeyDirectory(), "witness", name), label);
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
    const result = this.#writing.then(async () => {
      this.#streams ??= await this.read();
      this.#streams.set(seal.stream, { version: seal.version, hash: seal.hash, signature: seal.signature, sealedAt: seal.sealedAt, keyId: seal.keyId });
      const file: WitnessFile = { format: "turnlog-witness/1", log: this.label, streams: Object.fromEntries([...this.#streams].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) };
      await mkdir(path.dirname(this.file), { recursive: true, mode: 0o700 });
      await writePrivately(this.file, `${JSON.stringify(file, null, 1)}\n`, 0o600);
    });
    this.#writing = result.catch(() => undefined);
    return result;
  }
}

/**
 * What names a PostgreSQL log whoever reaches it: `postgres://host:port/database (schema s)`,
 * with the socket directory (`?host=`) when one is given, and never the user or the password.
 * A URL that does not parse is named by its hash alone.
 */
function postgresLogIdentity(url: string, schema: string): string {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return `postgres://unparsable-${createHash("sha256").update(url).digest("hex").slice(0, 16)} (schema ${schema})`;
  }
  const socket = parsed.searchParams.get("host");
  const database = decodeURIComponent(parsed.pathname.replace(/^\//, ""));
  return `postgres://${parsed.hostname}:${parsed.port === "" ? "5432" : parsed.port}/${database}${socket !== null ? `?host=${socket}` : ""} (schema ${schema})`;
}
