import type { LogLocation } from "../log-location.js";
import { DirectoryWitness } from "./directory-witness.js";
import { HttpWitness } from "./http-witness.js";
import { logIdentity } from "./log-identity.js";
import type { SealWitnessStore } from "./seal-witness.js";

/** Whether a witness address is a URL (an HTTP witness service) rather than a directory. */
export function isWitnessUrl(address: string): boolean {
  return /^https?:\/\//i.test(address);
}

/**
 * The witness of the log at `location` kept at `address` (`--witness <dir|url>`): an `http(s)://`
 * URL is an append-only witness service ({@link HttpWitness}), anything else a directory
 * ({@link DirectoryWitness}).
 *
 * @example
 * witnessAt("https://witness.internal", { dir: ".turnlog" });
 */
export function witnessAt(address: string, location: LogLocation): SealWitnessStore {
  const identity = logIdentity(location);
  return isWitnessUrl(address) ? new HttpWitness(address, identity) : new DirectoryWitness(address, identity);
}
