import { createHash } from "node:crypto";
import { realpathSync } from "node:fs";
import { homedir } from "node:os";
import path from "node:path";

/**
 * An XDG base directory: the variable when it holds an absolute path (the specification says a
 * relative one is to be ignored), else `fallback` under the home directory.
 */
function xdgDirectory(env: NodeJS.ProcessEnv, variable: "XDG_CONFIG_HOME" | "XDG_STATE_HOME", fallback: string): string {
  const value = env[variable];
  if (value !== undefined && path.isAbsolute(value)) return value;
  const home = env.HOME !== undefined && path.isAbsolute(env.HOME) ? env.HOME : homedir();
  return path.join(home, fallback);
}

/**
 * Where turnlog keeps the seal key and the witness of every sealed log:
 * `$XDG_CONFIG_HOME/turnlog`, else `~/.config/turnlog`. It must be out of the agent's reach
 * (hide it from the command sandbox), since whoever holds the key can forge seals.
 *
 * @example
 * sealKeyDirectory({ HOME: "/home/ada" }); // "/home/ada/.config/turnlog"
 */
export function sealKeyDirectory(env: NodeJS.ProcessEnv = process.env): string {
  return path.join(xdgDirectory(env, "XDG_CONFIG_HOME", ".config"), "turnlog");
}

/**
 * Where `turnlog run` keeps its logs by default: `$XDG_STATE_HOME/turnlog`, else
 * `~/.local/state/turnlog` — outside every workspace.
 *
 * @example
 * turnlogStateDirectory({ HOME: "/home/ada" }); // "/home/ada/.local/state/turnlog"
 */
export function turnlogStateDirectory(env: NodeJS.ProcessEnv = process.env): string {
  return path.join(xdgDirectory(env, "XDG_STATE_HOME", path.join(".local", "state")), "turnlog");
}

/**
 * The log directory `turnlog run` uses for a workspace when neither `--dir` nor `$TURNLOG_DIR`
 * names one: `<state>/logs/<name>-<hash>`, one per workspace, named by the workspace's folder name
 * (readable) and the first 12 hex digits of the SHA-256 of its real path (unique), so the log is
 * out of the workspace and the agent's reach. Hide it from the command sandbox.
 *
 * @example
 * defaultRunLogDirectory("/work/app", { HOME: "/home/ada" }); // "/home/ada/.local/state/turnlog/logs/app-3f2a9c0d1e4b"
 */
export function defaultRunLogDirectory(workspace: string, env: NodeJS.ProcessEnv = process.env): string {
  const real = realPathOrResolved(workspace);
  const slug = path.basename(real).replace(/[^A-Za-z0-9._-]+/g, "-").replace(/^[-.]+/, "").slice(0, 40) || "workspace";
  const digest = createHash("sha256").update(real).digest("hex").slice(0, 12);
  return path.join(turnlogStateDirectory(env), "logs", `${slug}-${digest}`);
}

/**
 * The real path of `location` (symlinks resolved) when it exists; otherwise that of its nearest
 * existing ancestor with the rest appended, so a deleted directory maps to the same name it had.
 */
export function realPathOrResolved(location: string): string {
  const absolute = path.resolve(location);
  const missing: string[] = [];
  let current = absolute;
  for (;;) {
    try {
      return path.join(realpathSync(current), ...missing.reverse());
    } catch {
      const parent = path.dirname(current);
      if (parent === current) return absolute;
      missing.push(path.basename(current));
      current = parent;
    }
  }
}
