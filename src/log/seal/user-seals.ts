import { loadOrCreateSealKey } from "./seal-key.js";
import type { LogLocation } from "../log-location.js";
import { SealWitness, type SealWitnessStore } from "./seal-witness.js";
import { SealedLogRecord } from "./sealed-log-record.js";
import type { SealOptions } from "./stream-sealer.js";
import { sealKeyDirectory } from "../../util/state-directories.js";
import { isWitnessUrl, witnessAt } from "./witness-address.js";
import { stat } from "node:fs/promises";

/**
 * The user's seal key (generated on first use in {@link sealKeyDirectory}, mode 0600) and, for a
 * log — a directory, or a PostgreSQL schema given as `{ url, schema? }` — its witness and the
 * key's record of it: what `turnlog run` and `turnlog demo` seal with, and what a host passes as
 * `createRuntime({ seals: await userSeals(dir) })` to do the same. The witness is the one at
 * `options.witness` (a directory or an `http(s)://` URL: docs/security.md, "Where the witness is
 * kept"), else the one the key's record says this log was witnessed with, else the file beside
 * the key.
 *
 * @example
 * const runtime = await createRuntime({ log, provider, seals: await userSeals(log.directory, process.env, { witness: "https://witness.internal" }) });
 */
export async function userSeals(log?: string | LogLocation, env: NodeJS.ProcessEnv = process.env, options: { witness?: string } = {}): Promise<SealOptions> {
  const directory = sealKeyDirectory(env);
  const key = await loadOrCreateSealKey(directory);
  if (log === undefined) return { key };
  const location = typeof log === "string" ? { dir: log } : log;
  const record = SealedLogRecord.forLogLocation(location, { directory });
  return { key, witness: await userWitness(location, directory, options.witness, record), record };
}

/**
 * The witness `verify` and the sealing commands use for the log at `location`: `address` when
 * given; else the one the seal key's record names (when it is not the file beside the key); else
 * the file beside the key when it exists; else the one the log's own seals name (`named`: a log
 * copied or moved from where it was sealed), when that exists; else the file beside the key.
 */
export async function userWitness(location: LogLocation, keyDirectory: string, address: string | undefined, record: SealedLogRecord, named?: string): Promise<SealWitnessStore> {
  if (address !== undefined) return witnessAt(address, location);
  const besideKey = SealWitness.forLogLocation(location, { directory: keyDirectory });
  const recorded = (await record.read().catch(() => undefined))?.witness;
  if (recorded !== undefined && recorded !== null && recorded !== besideKey.file) return witnessAt(recorded, location);
  if (named === undefined || named === besideKey.file || (await besideKey.exists())) return besideKey;
  const sealedWith = isWitnessUrl(named) || (await isDirectory(named)) ? witnessAt(named, location) : new SealWitness(named, besideKey.label);
  return (await sealedWith.exists?.().catch(() => false)) === true ? sealedWith : besideKey;
}

async function isDirectory(file: string): Promise<boolean> {
  return stat(file).then(
    (info) => info.isDirectory(),
    () => false,
  );
}
