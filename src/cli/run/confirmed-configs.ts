import { createHmac, randomBytes, timingSafeEqual } from "node:crypto";
import { chmod, mkdir, open, readFile, rename, rm, stat } from "node:fs/promises";
import path from "node:path";
import { z } from "zod";
import { createPrivatelyOnce } from "../../log/seal/seal-key.js";
import { sealKeyDirectory } from "../../util/state-directories.js";
import { canonicalJson } from "../../util/digest.js";
import { CliError, exitCodes } from "../../errors/cli-error.js";

/**
 * The person's own turnlog directory, outside every workspace: `$XDG_CONFIG_HOME/turnlog`, else
 * `~/.config/turnlog` (`$HOME` first, as the shell has it) — where the seal key lives too. A
 * relative `XDG_CONFIG_HOME` is ignored, as the XDG Base Directory specification says.
 *
 * @example
 * userConfigDirectory({ XDG_CONFIG_HOME: "/home/alice/.config" }); // "/home/alice/.config/turnlog"
 */
export function userConfigDirectory(env: NodeJS.ProcessEnv): string {
  return sealKeyDirectory(env);
}

/**
 * The file that lists the workspace configs the person confirmed.
 *
 * @example
 * confirmedConfigsFile({ HOME: "/home/alice" }); // "/home/alice/.config/turnlog/confirmed-configs.json"
 */
export function confirmedConfigsFile(env: NodeJS.ProcessEnv): string {
  return path.join(userConfigDirectory(env), "confirmed-configs.json");
}

/**
 * The key that authenticates each confirmation, beside the seal key (32 random bytes, hex, mode
 * 0600). Hidden from the command sandbox with the rest of the directory; whoever reads it can forge
 * confirmations (docs/security.md).
 *
 * @example
 * confirmationKeyFile({ HOME: "/home/alice" }); // "/home/alice/.config/turnlog/config-confirmation.key"
 */
export function confirmationKeyFile(env: NodeJS.ProcessEnv): string {
  return path.join(userConfigDirectory(env), "config-confirmation.key");
}

/**
 * One confirmation: this machine user confirmed this config file, read in this workspace, with
 * exactly this content. `settings` is what the person was shown (secret-looking values hidden), kept
 * so that a changed file can be shown as a difference from what was confirmed.
 */
export interface ConfigConfirmation {
  /** The workspace's real path. */
  workspace: string;
  /** The config file's real path. */
  file: string;
  /** SHA-256 of the file's canonical content (see `configDigest`). */
  digest: string;
  /** The settings as they were shown, one line each. */
  settings: string[];
}

/** A confirmation as stored: bound to the user ID, and authenticated with the confirmation key. */
const StoredConfirmationSchema = z.object({
  uid: z.number().int(),
  workspace: z.string(),
  file: z.string(),
  digest: z.string(),
  settings: z.array(z.string()),
  mac: z.string(),
});
type StoredConfirmation = z.infer<typeof StoredConfirmationSchema>;

/**
 * Version 2: authenticated entries. A version 1 list (before issue 30) holds no MAC, so it is read
 * as empty: each config is asked about once more.
 */
const ConfirmedConfigsSchema = z.object({ version: z.literal(2), confirmed: z.array(z.unknown()) });

/**
 * The confirmation a workspace and file have now, when there is a valid one: written by
 * `rememberConfirmation` for this user, for this workspace and this file, and authenticated with the
 * key in the user's config directory. An entry without a valid MAC — written or edited by someone
 * who does not hold the key — is ignored, as is one for another user ID; without a key nothing is
 * confirmed. Its `digest` says which content was confirmed.
 *
 * @example
 * const confirmed = await confirmedContent(process.env, { workspace: "/work/app", file: "/work/app/turnlog.config.json" });
 * if (confirmed?.digest === configDigest(config)) apply(config);
 */
export async function confirmedContent(env: NodeJS.ProcessEnv, where: { workspace: string; file: string }): Promise<ConfigConfirmation | undefined> {
  const key = await loadConfirmationKey(env);
  if (key === undefined) return undefined;
  const entry = (await readConfirmations(env, key)).find((candidate) => candidate.workspace === where.workspace && candidate.file === where.file);
  return entry === undefined ? undefined : { workspace: entry.workspace, file: entry.file, digest: entry.digest, settings: entry.settings };
}

/**
 * Records a confirmation, replacing the one for the same workspace and file, with the key made on
 * first use. The list is written to a temp file with mode 0600 and renamed over the old one, so a
 * crash leaves the old list or the new one; entries that do not verify are dropped.
 *
 * @example
 * await rememberConfirmation(process.env, { workspace, file, digest, settings });
 */
export async function rememberConfirmation(env: NodeJS.ProcessEnv, confirmation: ConfigConfirmation): Promise<void> {
  const key = await loadOrCreateConfirmationKey(env);
  const uid = currentUserId();
  const list = (await readConfirmations(env, key)).filter((entry) => !(entry.workspace === confirmation.workspace && entry.file === confirmation.file));
  const bound = { uid, workspace: confirmation.workspace, file: confirmation.file, digest: confirmation.digest, settings: [...confirmation.settings] };
  list.push({ ...bound, mac: authenticate(key, bound) });
  const file = confirmedConfigsFile(env);
  await mkdir(path.dirname(file), { recursive: true, mode: 0o700 });
  const temp = `${file}.${randomBytes(6).toString("hex")}.tmp`;
  try {
    const handle = await open(temp, "wx", 0o600);
    try {
      await handle.writeFile(`${JSON.stringify({ version: 2, confirmed: list }, null, 2)}\n`);
      await handle.sync();
    } finally {
      await handle.close();
    }
    // The umask cannot have widened it, but an old file's looser mode must not survive the rename.
    await chmod(temp, 0o600);
    await rename(temp, file);
  } catch (error) {
    await rm(temp, { force: true });
    throw error;
  }
}

/** The user ID a confirmation is bound to (-1 where the platform has none). */
function currentUserId(): number {
  return typeof process.getuid === "function" ? process.getuid() : -1;
}

/**
 * HMAC-SHA256 over the canonical JSON of everything an entry binds: the user ID, the workspace, the
 * file, the content's digest and the lines shown. Changing any of them breaks the MAC.
 */
function authenticate(key: Buffer, bound: Omit<StoredConfirmation, "mac">): string {
  return createHmac("sha256", key).update(canonicalJson({ version: 2, ...bound })).digest("hex");
}

function verifies(key: Buffer, entry: StoredConfirmation): boolean {
  const { mac, ...bound } = entry;
  const expected = Buffer.from(authenticate(key, bound), "hex");
  const given = Buffer.from(mac, "hex");
  return given.length === expected.length && timingSafeEqual(given, expected);
}

/** The list's entries that verify with `key` and belong to this user; a missing or unreadable list is empty. */
async function readConfirmations(env: NodeJS.ProcessEnv, key: Buffer): Promise<StoredConfirmation[]> {
  let text: string;
  try {
    text = await readFile(confirmedConfigsFile(env), "utf8");
  } catch {
    return [];
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    return [];
  }
  const parsed = ConfirmedConfigsSchema.safeParse(json);
  if (!parsed.success) return [];
  const uid = currentUserId();
  return parsed.data.confirmed.flatMap((candidate) => {
    const entry = StoredConfirmationSchema.safeParse(candidate);
    return entry.success && entry.data.uid === uid && verifies(key, entry.data) ? [entry.data] : [];
  });
}

/**
 * The confirmation key, or `undefined` when there is none yet. A key that another user owns, or
 * that others can read or write, is refused in one line, as ssh refuses such a key: whoever can read
 * it can forge confirmations.
 */
async function loadConfirmationKey(env: NodeJS.ProcessEnv): Promise<Buffer | undefined> {
  const file = confirmationKeyFile(env);
  let text: string;
  try {
    const info = await stat(file);
    if (process.platform !== "win32") {
      if ((info.mode & 0o077) !== 0) {
        throw new CliError(`the config confirmation key ${file} can be read by others (mode ${(info.mode & 0o777).toString(8)}); make it private: chmod 600 ${file}`, { exitCode: exitCodes.usage });
      }
      if (info.uid !== currentUserId()) throw new CliError(`the config confirmation key ${file} belongs to another user (uid ${info.uid}); remove it, and confirm your configs again`, { exitCode: exitCodes.usage });
    }
    text = await readFile(file, "utf8");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw error;
  }
  const key = Buffer.from(text.trim(), "hex");
  return key.length >= 32 ? key : undefined;
}

/**
 * The confirmation key, made on first use: 32 random bytes written aside with mode 0600, then
 * linked into place — a link never replaces a file, so two runs racing to make it both end up with
 * the one that got there first.
 */
async function loadOrCreateConfirmationKey(env: NodeJS.ProcessEnv): Promise<Buffer> {
  const existing = await loadConfirmationKey(env);
  if (existing !== undefined) return existing;
  const file = confirmationKeyFile(env);
  await mkdir(path.dirname(file), { recursive: true, mode: 0o700 });
  await createPrivatelyOnce(file, `${randomBytes(32).toString("hex")}\n`);
  const created = await loadConfirmationKey(env);
  if (created === undefined) throw new CliError(`the config confirmation key ${file} is not a key (64 hex digits); remove it, and confirm your configs again`, { exitCode: exitCodes.usage });
  return created;
}
