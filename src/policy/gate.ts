import { tmpdir } from "node:os";
import path from "node:path";
import type { GateDecisionRecord, ToolPlan } from "../contracts/events.js";
import type { ApprovalMode, GateDecision, PolicyRule, PolicySnapshot } from "../contracts/policy.js";
import type { RiskClass } from "../contracts/risk.js";
import { isReadOnlyRisk } from "../contracts/risk.js";
import { classifyCommand } from "./command-safety/command-safety.js";
import { type CommandVerdict } from "./command-safety/catalogue.js";
import { inexactRead } from "./command-safety/exact-read.js";
import { commandPrefix, commandScope, describeCommandScope } from "./command-prefix.js";
import { callFingerprint } from "./fingerprint.js";
import { protectedEntryOf } from "../contracts/protected-paths.js";
import type { GitLink } from "../util/git-links.js";
import { isInsideWorkspace, lexicalRealPath, type RealPathResolver } from "./workspace-confinement.js";

/** What the gate needs to know of a tool (a `ToolDefinition` fits). */
export interface GatedTool {
  name: string;
  risk: RiskClass;
  /** The path arguments of a call, confined to the workspace. */
  paths?: (input: never) => string[];
  /** The shell text of a command tool, checked by command safety. */
  command?: (input: never) => string;
  /** The command tool runs its commands in an OS sandbox (see `ToolOptions.contained`). */
  contained?: boolean;
}

/** What the gate may consult besides the policy: how to resolve symlinks, where temp files live. */
export interface GateEnvironment {
  realPath?: RealPathResolver;
  tempDir?: string;
  /** The user's home directory (command safety reads `rm -rf /home/me` like `rm -rf ~`); default `os.homedir()`. */
  homeDir?: string;
  /** Tools a person approved for the rest of the session (approvals so far). */
  approvedTools?: readonly string[];
  /**
   * Decisions version 3 on: the "always" approvals of command tools, by tool and the command
   * prefix the person approved (`commandPrefix`). When given, a command tool's later calls are
   * covered only by these — never by `approvedTools` — and only when their command is known-safe.
   * From version 5 an approval covers only its `scope` (`commandScope`: the exact command the person
   * saw); one without a scope (given under an older version) covers nothing.
   */
  approvedCommands?: readonly { tool: string; prefix: string; scope?: string }[];
  /**
   * Decisions version 5 on: the directories a git entry names (`gitdir:` of a `.git` file, a git
   * directory's `commondir` and `core.worktree`; `readGitLinks` in src/util/git-links.ts). The
   * runtime reads them from the log, as it does real paths; absent, a git entry names nothing.
   */
  gitLinks?: (absolute: string) => readonly GitLink[];
  /**
   * The decisions version to decide under (docs/replay.md#decision-versions); absent: the newest. The runtime and
   * replay always pass the session's own, so an old log is judged by the rules it was recorded
   * under.
   */
  decisionsVersion?: number;
  /**
   * Decisions version 7 on: what the call's tool's `needsApproval` (host code) answered, as the log
   * recorded it (`session.environment.observed.hostRules`). `true`, or a predicate that failed
   * (`error`), turns an `allow` into an `ask` (rule `host:needs-approval`, or
   * `host:needs-approval-failed`); it never loosens an `ask`, a `deny` or a `block`.
   */
  hostRule?: { needsApproval: boolean; error?: string };
}

/** The decisions version from which the gate reads tools' `needsApproval` answers (`GateEnvironment.hostRule`). */
export const hostRuleDecisionsVersion = 7;

/**
 * The decisions version from which command tools are judged by containment (docs/security.md#containment-the-classifier-decides-what-may-run-outside-the-sandbox): a
 * known-safe read runs unasked in every mode but `read-only`; any other command runs unasked only
 * in a tool that runs it in an OS sandbox (`contained`), and asks otherwise.
 */
export const containmentDecisionsVersion = 4;

/**
 * The decisions version from which the policy holds containment where no sandbox exists
 * (docs/security.md, "Without a sandbox"): only an exact read runs unasked uncontained (`containment:inexact-read` otherwise), the
 * writing tools ask for protected paths (`protected:<name>`), and a command tool's "always" covers
 * the exact command the person saw (`commandScope`).
 */
export const policySideOfContainmentVersion = 5;

/** The rules of command safety that mean "only reads": what may run outside a sandbox unasked. */
const KNOWN_SAFE_READS: readonly string[] = ["safe:read-only", "safe:version"];

/** Classes that always ask, whatever the mode or an allow rule says. */
export const alwaysAskRiskClasses: readonly RiskClass[] = ["credential-access", "spend-money"];
/** Classes that are blocked whatever the policy says. */
export const alwaysBlockedRiskClasses: readonly RiskClass[] = ["sandbox-escape"];

type Verdict = Pick<GateDecisionRecord, "decision" | "rule">;

/**
 * Decides one planned call: `allow`, `ask`, `deny` or `block`, with the rule that decided. A
 * function of (plan, tool, policy) and the environment's path resolution. Fixed order (docs/policy.md#evaluation-order): hard blocks → explicit deny rules → workspace trust → approval mode → allow rules; the
 * first step that decides wins. It fails closed: any error while deciding is a `block`.
 *
 * @example
 * gateToolCall({ callId: "c1", status: "planned", tool: "read_file", input: { path: "a.txt" } }, readFile, policy);
 * // { callId: "c1", decision: "allow", rule: "mode:ask", riskClass: "read-only-local", fingerprint: "…" }
 */
export function gateToolCall(plan: ToolPlan, tool: GatedTool | undefined, policy: PolicySnapshot, environment: GateEnvironment = {}): GateDecisionRecord {
  let fingerprint = "";
  const riskClass = tool?.risk ?? null;
  try {
    fingerprint = callFingerprint(plan.tool ?? "", plan.input);
    const verdict = withHostRule(decide(plan, tool, policy, environment), environment);
    // Whether the call would run contained is part of the decision from version 4 (docs/security.md#containment-the-classifier-decides-what-may-run-outside-the-sandbox).
    const contained = judgesContainment(environment) && tool?.command !== undefined ? { contained: tool.contained === true } : {};
    return { callId: plan.callId, fingerprint, riskClass, ...verdict, ...contained };
  } catch {
    return { callId: plan.callId, fingerprint, riskClass, decision: "block", rule: "fail-closed:gate-error" };
  }
}

/**
 * The host's per-call rule, applied last (docs/policy.md, "Per-call rules from the host"): a call
 * the policy would let run asks when its tool's `needsApproval` said so or failed (fail closed);
 * what the policy asks, denies or blocks stays as it decided, in every mode (`read-only` included,
 * where a read the mode allows then asks).
 */
function withHostRule(verdict: Verdict, environment: GateEnvironment): Verdict {
  const rule = environment.hostRule;
  if (rule === undefined || verdict.decision !== "allow") return verdict;
  if (rule.error !== undefined) return { decision: "ask", rule: "host:needs-approval-failed" };
  return rule.needsApproval ? { decision: "ask", rule: "host:needs-approval" } : verdict;
}

function decide(plan: ToolPlan, tool: GatedTool | undefined, policy: PolicySnapshot, environment: GateEnvironment): Verdict {
  // 1. Hard blocks: win over every mode, rule and approval.
  if (plan.status !== "planned" || tool === undefined || tool.name !== plan.tool) {
    return { decision: "block", rule: "hard-block:unavailable-tool" };
  }
  const risk = tool.risk;
  if (alwaysBlockedRiskClasses.includes(risk) || policy.blockedRiskClasses.includes(risk)) {
    return { decision: "block", rule: `hard-block:risk-class=${risk}` };
  }
  const commandText = tool.command === undefined ? undefined : tool.command(plan.input as never);
  // classifyCommand throws on anything but text (a command function that returned nothing): fail closed.
  const command = tool.command === undefined ? undefined : classifyCommand(commandText as string, {
          workspaceRoot: policy.workspace.root,
          tempDir: environment.tempDir ?? tmpdir(),
          ...(environment.homeDir !== undefined ? { homeDir: environment.homeDir } : {}),
          ...(environment.decisionsVersion !== undefined ? { decisionsVersion: environment.decisionsVersion } : {}),
        });
  if (command?.verdict === "forbidden") return { decision: "block", rule: `hard-block:command=${command.rule}` };
  const paths = tool.paths === undefined ? [] : tool.paths(plan.input as never);
  if (!Array.isArray(paths)) throw new TypeError(`tool ${tool.name} declared paths that are not an array`);
  const outside = paths.some((candidate) => !isInsideWorkspace(candidate, policy.workspace.root, environment.realPath ?? lexicalRealPath));
  if (outside && !isReadOnlyRisk(risk)) return { decision: "block", rule: "hard-block:path-outside-workspace" };

  // 2. Explicit deny rules.
  const deny = policy.deny.find((rule) => matches(rule, tool));
  if (deny !== undefined) return { decision: "deny", rule: `deny:${describe(deny)}` };

  // 3. Workspace trust: reading outside the root is a person's call.
  if (outside) return { decision: "ask", rule: "workspace:path-outside-root" };

  // 4. Approval mode, then what the trust setting and the command's own class add to it.
  const byMode = decideByMode(risk, policy.approvalMode, policy.workspace.trusted);
  if (byMode.decision === "deny") return byMode;
  // Version 5: a write into a file that runs code later on the person's machine, or raises the
  // model's own permissions, is a person's call in every mode that writes at all, above allow rules
  // and "always" approvals (docs/security.md, "Protected paths").
  if (exactReadsOnly(environment) && !isReadOnlyRisk(risk)) {
    const guarded = protectedTarget(paths, policy, environment);
    if (guarded !== undefined) return { decision: "ask", rule: `protected:${guarded}` };
  }
  if (command?.verdict === "needs-approval") return { decision: "ask", rule: `command=${command.rule}` };
  const containment = command !== undefined && judgesContainment(environment);
  const knownSafeRead = containment && KNOWN_SAFE_READS.includes(command.rule) && !alwaysAskRiskClasses.includes(risk);
  // Version 5: without a sandbox, the read must be exact too — nothing in the line left for the
  // shell, the environment or git's configuration to decide (docs/security.md, "Without a sandbox").
  const inexact = knownSafeRead && exactReadsOnly(environment) && tool.contained !== true && inexactRead(commandText as string) !== undefined;
  // Version 4: a command that only reads runs unasked wherever a read-only tool would — in an
  // untrusted workspace too — unless the tool's class always asks.
  if (knownSafeRead && !inexact) return { decision: "allow", rule: `command=${command.rule}` };
  const verdict = liftAsk(byMode, tool, command, commandText, policy, environment);
  // A person's scoped "always" is theirs to give: it covers the exact command they saw.
  if (verdict.rule.startsWith("approval:command=")) return verdict;
  if (inexact) return { decision: "ask", rule: "containment:inexact-read" };
  // Version 4: anything else runs unasked only inside an OS sandbox: the classifier decides what
  // may run outside containment, the sandbox contains the rest (docs/policy.md). A mode or an
  // allow rule is not a person looking at this command.
  if (containment && verdict.decision === "allow" && tool.contained !== true) {
    return { decision: "ask", rule: "containment:uncontained" };
  }
  return verdict;
}

/** How deep the gate follows git entries naming other git directories (`gitdir:` → `commondir` → …). */
const maxGitLinkDepth = 4;

/**
 * The protected entry (its name) the first of `paths` that lies in one lies in, or `undefined`.
 * Each path is judged as written (relative to the root, `./` and `..` resolved) and as its real
 * path through symlinks, so `link-to-git/config` is `.git/config`; and against the directories
 * git entries name inside the workspace — what the root's `.git` and any `.git` on the way to the
 * target name by `gitdir:`, `commondir` or `core.worktree` — which are `.git` too.
 */
function protectedTarget(paths: readonly string[], policy: PolicySnapshot, environment: GateEnvironment): string | undefined {
  const realPath = environment.realPath ?? lexicalRealPath;
  const root = path.resolve(policy.workspace.root);
  const realRoot = realPath(root);
  const extra = policy.protectedNames ?? [];
  for (const candidate of paths) {
    const lexical = path.resolve(root, candidate);
    const real = realPath(path.resolve(realRoot, candidate));
    for (const [base, target] of [[root, lexical], [realRoot, real]] as const) {
      const entry = protectedEntryOf(path.relative(base, target), extra);
      if (entry !== undefined) return entry.name;
    }
    if (environment.gitLinks !== undefined && gitNamedDirectories(real, realRoot, environment).some((directory) => isWithin(real, directory))) return ".git";
  }
  return undefined;
}

/**
 * The git directories inside the workspace on the way from the root to `target`, and those that
 * git entries on the way name (and what those name in turn). A work tree (`core.worktree`) that
 * holds the entry the chain started from — an ordinary submodule's — is where the person edits,
 * not a git directory, and is left out.
 */
function gitNamedDirectories(target: string, realRoot: string, environment: GateEnvironment): string[] {
  const realPath = environment.realPath ?? lexicalRealPath;
  const gitLinks = environment.gitLinks as (absolute: string) => readonly GitLink[];
  /** A git entry to read, how many links away from the path to the target, and the directory it was found from. */
  const entries: { entry: string; depth: number; origin: string }[] = [];
  for (let directory = path.dirname(target); isWithin(directory, realRoot); directory = path.dirname(directory)) {
    // The directory may be a git directory itself (a repository kept under another name), or hold
    // a `.git` file naming one elsewhere.
    entries.push({ entry: directory, depth: 0, origin: directory }, { entry: path.join(directory, ".git"), depth: 0, origin: directory });
    if (directory === realRoot) break;
  }
  const named: string[] = [];
  const seen = new Set<string>();
  while (entries.length > 0) {
    const { entry, depth, origin } = entries.shift() as { entry: string; depth: number; origin: string };
    if (seen.has(entry) || depth > maxGitLinkDepth) continue;
    seen.add(entry);
    for (const link of gitLinks(entry)) {
      const directory = link.via === "repository" ? entry : realPath(link.directory);
      if (!isWithin(directory, realRoot) || (link.via === "worktree" && isWithin(origin, directory))) continue;
      named.push(directory);
      if (link.via !== "repository") entries.push({ entry: directory, depth: depth + 1, origin });
    }
  }
  return named;
}

function isWithin(child: string, parent: string): boolean {
  return child === parent || child.startsWith(parent.endsWith(path.sep) ? parent : parent + path.sep);
}

function judgesContainment(environment: GateEnvironment): boolean {
  return (environment.decisionsVersion ?? containmentDecisionsVersion) >= containmentDecisionsVersion;
}

function exactReadsOnly(environment: GateEnvironment): boolean {
  return (environment.decisionsVersion ?? policySideOfContainmentVersion) >= policySideOfContainmentVersion;
}

/** Step 5: allow rules and a person's earlier approvals lift an ask of the mode. */
function liftAsk(
  byMode: Verdict,
  tool: GatedTool,
  command: CommandVerdict | undefined,
  commandText: string | undefined,
  policy: PolicySnapshot,
  environment: GateEnvironment,
): Verdict {
  const risk = tool.risk;

  // 5. Allow rules lift an ask of the mode — never one of the always-ask classes, an untrusted
  // workspace or a command that needs approval, which were decided above for a reason.
  if (byMode.decision === "ask" && byMode.rule.startsWith("mode:") && !alwaysAskRiskClasses.includes(risk)) {
    const allow = policy.allow.find((rule) => matches(rule, tool));
    if (allow !== undefined) return { decision: "allow", rule: `allow:${describe(allow)}` };
  }
  // A person's approval of this tool for the session lifts the same asks as an allow rule, and an
  // untrusted workspace's (the person saw the workspace); never a command or an always-ask class.
  if (byMode.decision === "ask" && (byMode.rule.startsWith("mode:") || byMode.rule === "workspace:untrusted") && !alwaysAskRiskClasses.includes(risk)) {
    if (command !== undefined && environment.approvedCommands !== undefined) {
      // "Always" on `git status` is not "always" on every shell command: the same program and
      // subcommand, and only a command known to be read-only.
      if (exactReadsOnly(environment)) {
        // Version 5: the exact command the person saw; `npm test --prefix=/other` is another command.
        const scope = command.verdict === "known-safe" ? commandScope(commandText as string) : undefined;
        const approved = scope === undefined ? undefined : environment.approvedCommands.find((entry) => entry.tool === tool.name && entry.scope === scope);
        if (approved?.scope !== undefined) return { decision: "allow", rule: `approval:command=${describeCommandScope(approved.scope)}` };
        return byMode;
      }
      const prefix = command.verdict === "known-safe" ? commandPrefix(commandText as string) : undefined;
      const approved = environment.approvedCommands.find((entry) => entry.tool === tool.name && entry.prefix === prefix);
      if (approved !== undefined) return { decision: "allow", rule: `approval:command=${approved.prefix}` };
    } else if (environment.approvedTools?.includes(tool.name)) {
      return { decision: "allow", rule: `approval:tool=${tool.name}` };
    }
  }
  return byMode;
}

/**
 * The approval-mode table (docs/policy.md pins every cell). Read-only classes always run; in an
 * untrusted workspace nothing else runs without a person, whatever the mode.
 */
export function decideByMode(risk: RiskClass, mode: ApprovalMode, trusted: boolean): Verdict {
  const rule = `mode:${mode}`;
  if (alwaysBlockedRiskClasses.includes(risk)) return { decision: "block", rule: `hard-block:risk-class=${risk}` };
  if (isReadOnlyRisk(risk)) return { decision: "allow", rule };
  let decision: GateDecision;
  switch (mode) {
    case "read-only":
      decision = "deny";
      break;
    case "ask":
      decision = "ask";
      break;
    case "auto-edit":
      decision = risk === "workspace-write" ? "allow" : "ask";
      break;
    case "full-auto":
      decision = alwaysAskRiskClasses.includes(risk) ? "ask" : "allow";
      break;
    default:
      throw new TypeError(`unknown approval mode ${String(mode)}`);
  }
  if (decision === "allow" && !trusted) return { decision: "ask", rule: "workspace:untrusted" };
  return { decision, rule };
}

function matches(rule: PolicyRule, tool: GatedTool): boolean {
  if (rule.tool === undefined && rule.risk === undefined) return false;
  return (rule.tool === undefined || rule.tool === tool.name) && (rule.risk === undefined || rule.risk === tool.risk);
}

function describe(rule: PolicyRule): string {
  return [rule.tool !== undefined ? `tool=${rule.tool}` : "", rule.risk !== undefined ? `risk=${rule.risk}` : ""].filter(Boolean).join(",");
}
