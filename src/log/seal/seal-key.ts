import { createHash, createPrivateKey, createPublicKey, generateKeyPairSync, type KeyObject } from "node:crypto";
import { chmod, link, mkdir, open, readFile, rename, stat, unlink } from "node:fs/promises";
import path from "node:path";
import { SealFileError } from "../../errors/seal-file-error.js";

/**
 * The Ed25519 key that signs seals. `privateKey` is absent for a key that can only verify (a
 * public key handed to `verify`).
 */
export interface SealKey {
  /** The first 16 hex digits of the SHA-256 of the public key (SPKI, DER): what each seal names. */
  keyId: string;
  publicKey: KeyObject;
  privateKey?: KeyObject;
}

/** The file of the private key in the key directory (PKCS #8 PEM, mode 0600). */
export const sealKeyFileName = "seal-key.pem";
/** The file of the public key beside it (SPKI PEM), for verifying a log on another machine. */
export const sealPublicKeyFileName = "seal-key.pub.pem";

/**
 * The key ID of a public key: the first 16 hex digits of the SHA-256 of its SPKI DER form.
 *
 * @example
 * sealKeyId(key.publicKey); // "9c1f0e2d7a6b5c43"
 */
export function sealKeyId(publicKey: KeyObject): string {
  return createHash("sha256").update(publicKey.export({ type: "spki", format: "der" })).digest("hex").slice(0, 16);
}

/**
 * A new Ed25519 seal key, in memory only (for tests, or a host that stores it itself).
 *
 * @example
 * const key = generateSealKey();
 */
export function generateSealKey(): SealKey {
  const { publicKey, privateKey } = generateKeyPairSync("ed25519");
  return { keyId: sealKeyId(publicKey), publicKey, privateKey };
}

/**
 * A seal key from PEM text: a private key (PKCS #8) signs and verifies, a public key (SPKI) only
 * verifies. Anything but an Ed25519 key is a `TypeError`.
 *
 * @example
 * const key = sealKeyFromPem(await readFile("colleague.pub.pem", "utf8"));
 */
export function sealKeyFromPem(pem: string): SealKey {
  const isPrivate = pem.includes("PRIVATE KEY");
  const privateKey = isPrivate ? createPrivateKey(pem) : undefined;
  const publicKey = privateKey !== undefined ? createPublicKey(privateKey) : createPublicKey(pem);
  if (publicKey.asymmetricKeyType !== "ed25519") throw new TypeError(`a seal key is an Ed25519 key, not ${String(publicKey.asymmetricKeyType)}`);
  return { keyId: sealKeyId(publicKey), publicKey, ...(privateKey !== undefined ? { privateKey } : {}) };
}

/**
 * The seal key kept in `directory` (default {@link sealKeyDirectory}), or `undefined` when there
 * is none. A key file that others can read is refused, as ssh refuses one: a readable key lets
 * anyone forge seals.
 *
 * @example
 * const key = await loadSealKey(sealKeyDirectory());
 */
export async function loadSealKey(directory: string): Promise<SealKey | undefined> {
  const file = path.join(directory, sealKeyFileName);
  let pem: string;
  try {
    const info = await stat(file);
    if (process.platform !== "win32" && (info.mode & 0o077) !== 0) {
      throw new SealFileError(file, `the seal key ${file} can be read by others (mode ${(info.mode & 0o777).toString(8)}); make it private: chmod 600 ${file}`);
    }
    pem = await readFile(file, "utf8");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw error;
  }
  return sealKeyFromPem(pem);
}

/**
 * The seal key kept in `directory`, generated there on first use: the directory is made with mode
 * 0700, the private key written with mode 0600 (atomically: a crash leaves no half key), and the
 * public key beside it.
 *
 * @example
 * const key = await loadOrCreateSealKey(sealKeyDirectory());
 */
export async function loadOrCreateSealKey(directory: string): Promise<SealKey> {
  const existing = await loadSealKey(directory);
  if (existing !== undefined) return existing;
  await mkdir(directory, { recursive: true, mode: 0o700 });
  // mkdir's mode does not apply to a directory that existed; the key's own mode protects it anyway.
  const key = generateSealKey();
  const privatePem = key.privateKey?.export({ type: "pkcs8", format: "pem" }).toString() ?? "";
  const file = path.join(directory, sealKeyFileName);
  await createPrivatelyOnce(file, privatePem);
  const created = await loadSealKey(directory);
  if (created === undefined) throw new Error(`the seal key ${file} vanished right after it was written`);
  await writePrivately(path.join(directory, sealPublicKeyFileName), created.publicKey.export({ type: "spki", format: "pem" }).toString(), 0o644);
  return created;
}

/**
 * Creates `file` (mode 0600) holding `text` unless it exists: written aside, then linked into
 * place. A link never replaces a file, so when two processes race to create a key, both end up
 * with the one that got there first.
 */
export async function createPrivatelyOnce(file: string, text: string): Promise<void> {
  const temporary = `${file}.${process.pid}.${Math.random().toString(36).slice(2)}.new`;
  await writePrivately(temporary, text, 0o600);
  try {
    await link(temporary, file);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
  } finally {
    await unlink(temporary);
  }
}

/** Writes `text` to a temporary file with `mode`, fsyncs it, and renames it into place. */
export async function writePrivately(file: string, text: string, mode: number): Promise<void> {
  const temporary = `${file}.${process.pid}.${Math.random().toString(36).slice(2)}.tmp`;
  const handle = await open(temporary, "w", mode);
  try {
    await handle.writeFile(text);
    await handle.sync();
  } finally {
    await handle.close();
  }
  await chmod(temporary, mode);
  await rename(temporary, file);
}
