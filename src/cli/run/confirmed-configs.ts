import { randomBytes } from "node:crypto";
import { chmod, mkdir, open, readFile, rename, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { z } from "zod";

/**
 * The person's own turnlog directory, outside every workspace: `$XDG_CONFIG_HOME/turnlog`, else
 * `~/.config/turnlog` (`$HOME` first, as the shell has it). A relative `XDG_CONFIG_HOME` is ignored,
 * as the XDG Base Directory specification says.
 *
 * @example
 * userConfigDirectory({ XDG_CONFIG_HOME: "/home/alice/.config" }); // "/home/alice/.config/turnlog"
 */
export function userConfigDirectory(env: NodeJS.ProcessEnv): string {
  const xdg = env.XDG_CONFIG_HOME;
  if (xdg !== undefined && path.isAbsolute(xdg)) return path.join(xdg, "turnlog");
  const home = env.HOME !== undefined && path.isAbsolute(env.HOME) ? env.HOME : os.homedir();
  return path.join(home, ".config", "turnlog");
}

/** The file that lists the workspace configs the person confirmed. */
export function confirmedConfigsFile(env: NodeJS.ProcessEnv): string {
  return path.join(userConfigDirectory(env), "confirmed-configs.json");
}

/** One confirmation: this config file, read in this workspace, asking for exactly these things. */
export interface ConfigConfirmation {
  /** The workspace's real path. */
  workspace: string;
  /** The config file's real path. */
  file: string;
  /** SHA-256 of what the person was shown and confirmed (see `escalationDigest`). */
  digest: string;
}

const ConfirmedConfigsSchema = z.object({
  version: z.literal(1),
  confirmed: z.array(z.object({ workspace: z.string(), file: z.string(), digest: z.string() })),
});

/**
 * Whether the person confirmed this config's escalations before. A missing or unreadable list is
 * an empty one: nothing is taken as confirmed that was not written by `rememberConfirmation`.
 *
 * @example
 * await isConfirmed(process.env, { workspace: "/work/app", file: "/work/app/turnlog.config.json", digest });
 */
export async function isConfirmed(env: NodeJS.ProcessEnv, confirmation: ConfigConfirmation): Promise<boolean> {
  const list = await readConfirmations(env);
  return list.some((entry) => entry.workspace === confirmation.workspace && entry.file === confirmation.file && entry.digest === confirmation.digest);
}

/**
 * Records a confirmation, replacing the one for the same workspace and file: the directory is
 * created with mode 0700, the list written to a temp file with mode 0600 and renamed over the old
 * one, so a crash leaves the old list or the new one.
 *
 * @example
 * await rememberConfirmation(process.env, { workspace, file, digest });
 */
export async function rememberConfirmation(env: NodeJS.ProcessEnv, confirmation: ConfigConfirmation): Promise<void> {
  const list = (await readConfirmations(env)).filter((entry) => !(entry.workspace === confirmation.workspace && entry.file === confirmation.file));
  list.push(confirmation);
  const file = confirmedConfigsFile(env);
  await mkdir(path.dirname(file), { recursive: true, mode: 0o700 });
  const temp = `${file}.${randomBytes(6).toString("hex")}.tmp`;
  try {
    const handle = await open(temp, "wx", 0o600);
    try {
      await handle.writeFile(`${JSON.stringify({ version: 1, confirmed: list }, null, 2)}\n`);
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

async function readConfirmations(env: NodeJS.ProcessEnv): Promise<ConfigConfirmation[]> {
  let text: string;
  try {
    text = await readFile(confirmedConfigsFile(env), "utf8");
  } catch {
    return [];
  }
  try {
    const parsed = ConfirmedConfigsSchema.safeParse(JSON.parse(text));
    return parsed.success ? parsed.data.confirmed : [];
  } catch {
    return [];
  }
}
