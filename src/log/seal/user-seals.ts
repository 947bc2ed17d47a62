import { loadOrCreateSealKey } from "./seal-key.js";
import type { LogLocation } from "../log-location.js";
import { SealWitness } from "./seal-witness.js";
import type { SealOptions } from "./stream-sealer.js";
import { sealKeyDirectory } from "./user-directories.js";

/**
 * The user's seal key (generated on first use in {@link sealKeyDirectory}, mode 0600) and, for a
 * log — a directory, or a PostgreSQL schema given as `{ url, schema? }` — its witness beside the
 * key: what `turnlog run` and `turnlog demo` seal with, and what a host passes as
 * `createRuntime({ seals: await userSeals(dir) })` to do the same.
 *
 * @example
 * const runtime = await createRuntime({ log, provider, seals: await userSeals(log.directory) });
 */
export async function userSeals(log?: string | LogLocation, env: NodeJS.ProcessEnv = process.env): Promise<SealOptions> {
  const directory = sealKeyDirectory(env);
  const key = await loadOrCreateSealKey(directory);
  if (log === undefined) return { key };
  return { key, witness: SealWitness.forLogLocation(typeof log === "string" ? { dir: log } : log, { directory }) };
}
