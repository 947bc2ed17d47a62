/**
 * The changelog of decisions, as code (docs/replay.md#decision-versions). A session records the version its decisions
 * were computed under in `session.started.decisionsVersion` (a log without it is version 1), and
 * `session.decisions.upgraded` moves it forward. Every decision — the pure decider, the turn
 * machine's guards, the gate's environment — reads the version it must reproduce and branches
 * where behaviour changed: `if (version >= 2) …`. Old branches are never removed; they are what
 * old logs replay against.
 *
 * Adding a version (docs/replay.md has the whole checklist): append an entry here, branch at the
 * point of change on `>= the new version`, record a golden log under the new version in
 * `test/fixtures/logs/`, and leave every older golden log as it is.
 */
export interface DecisionsVersion {
  version: number;
  /** What changed in this version, in one line. */
  note: string;
}

export const decisionsVersions = [
  { version: 1, note: "the decisions of every log recorded before decision versions existed" },
  {
    version: 2,
    note:
      "a provider attempt interrupted by a crash no longer uses up the turn's retry budget; the gate reads real paths, the temp and home directories from the log (session.environment.observed, session.started.environment), never from the machine it runs on",
  },
  {
    version: 3,
    note:
      "an \"always\" approval of a command tool covers only later commands with the same program and subcommand (turn.approval.granted.commandPrefix) that are known-safe, never every shell command (rule approval:command=<prefix>)",
  },
  {
    version: 4,
    note:
      "containment: a known-safe read (rules safe:read-only, safe:version) runs unasked in every mode but read-only (rule command=<rule>); any other command runs unasked only in a contained tool, in full-auto, and asks otherwise (rule containment:uncontained); gate decisions of command tools record contained; command safety learns the issue-12 attacks (text fed to shells, abbreviated long options, more wrappers, dynamic commands, writes and reads outside the workspace, disk wipers, reverse shells, scheduled jobs, remote copies)",
  },
  {
    version: 5,
    note:
      "the policy side of containment: without a sandbox only an exact, fully parsed known-safe read runs unasked (no assignments, substitutions, globs, wrappers, cd, config or exec-path options; rule containment:inexact-read otherwise); a writing tool's path in a protected entry (.git at any depth and what gitdir:/commondir/core.worktree name, .vscode, .idea, .devcontainer, .envrc, turnlog.config.json, the host's names) asks in every mode (rule protected:<name>); an \"always\" approval of a command tool covers only the exact argv the person saw (turn.approval.granted.commandScope)",
  },
  {
    version: 6,
    note:
      "token counts split pieces longer than 256 code units: a pre-tokenizer piece that long (a run of one character) is counted in chunks of at most 256, so counting is linear; history selection, the summary's cut and the recorded token counts follow",
  },
  {
    version: 7,
    note:
      "approvals without the host's code: an approval may carry edited arguments, which the gate decides again (an edit never widens what the policy allows) and the call runs with; a held call is denied by rule approval:timeout once recorded time passes the policy's approvalTimeoutMs; a tool's needsApproval answer, recorded as an input, makes the gate ask",
  },
] as const satisfies readonly DecisionsVersion[];

/** The newest version: what new sessions are recorded under. */
export const latestDecisionsVersion: number = decisionsVersions[decisionsVersions.length - 1]!.version;

/** The version of a log that does not say (everything recorded before versions existed). */
export const unversionedDecisionsVersion = 1;

/** Whether this code can reproduce decisions of `version` (a log from a newer turnlog cannot be replayed). */
export function isKnownDecisionsVersion(version: number): boolean {
  return Number.isInteger(version) && version >= 1 && version <= latestDecisionsVersion;
}

/**
 * Resolves what a host or the CLI asked for: a version number, or `"latest"`.
 *
 * @example
 * resolveDecisionsVersion("latest"); // 7
 */
export function resolveDecisionsVersion(requested: number | "latest"): number {
  if (requested === "latest") return latestDecisionsVersion;
  if (!isKnownDecisionsVersion(requested)) {
    throw new RangeError(`decisions version ${String(requested)} is not one this turnlog knows (1 to ${latestDecisionsVersion})`);
  }
  return requested;
}
