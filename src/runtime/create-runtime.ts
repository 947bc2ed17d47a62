import { randomUUID } from "node:crypto";
import { createSecretRedactor, type SecretRedactor } from "../policy/secrets/secret-detector.js";
import type { Budgets } from "../contracts/budgets.js";
import { resolveBudgets } from "../contracts/budgets.js";
import type { PolicyInput } from "../contracts/policy.js";
import { SessionStateError, UnknownSessionError } from "../errors/session-state-error.js";
import type { Clock, EventLog, IdSource, RecordedEvent } from "../log/event-log.js";
import { StreamSealer, type SealOptions } from "../log/seal/stream-sealer.js";
import { verifySealedLog, type SealedVerifyReport } from "../log/seal/seal-verifier.js";
import { LevelEventLog } from "../log/level-event-log.js";
import { resolvePolicy } from "../policy/default-policy.js";
import { auditRows, type AuditRow } from "../projections/audit.js";
import { foldEvents } from "../projections/projection.js";
import { sessionStateProjection, type SessionState } from "../projections/session-state.js";
import type { Provider } from "../providers/provider.js";
import { verifyReplay, type ReplayReport } from "../replay/replay-verifier.js";
import { SnapshotCache } from "../replay/snapshot-cache.js";
import { forkSession, type ForkResult } from "../replay/fork.js";
import type { ToolDefinition } from "../tools/define-tool.js";
import type { ToolSnapshot } from "../contracts/tools.js";
import { ToolRegistry, type ToolProvider } from "../tools/tool-registry.js";
import { connectMcpServers, type McpServerConfig } from "../tools/mcp/mcp-tools.js";
import { resolveRealPath } from "../util/real-path.js";
import { SecretVault } from "./secret-vault.js";
import { isKnownDecisionsVersion, latestDecisionsVersion, resolveDecisionsVersion } from "../core/decision-versions.js";
import { decideObserving, observeEnvironment, SessionSync } from "./session-sync.js";
import { defaultHistoryMaxTokens } from "../history/session-history.js";
import type { HistoryCompressor } from "../history/history-compressor.js";
import type { GateEnvironment } from "../policy/gate.js";
import { hostCallInDoubt } from "./host-tool-executor.js";
import { isRerunnable } from "./tool-plan-runner.js";
import { Session } from "./session.js";
import { resolveProviderRetry, type ProviderRetryOptions } from "./provider-retry.js";
import { SessionStore } from "./session-store.js";
import { sessionIdOfStream, sessionIdPattern, sessionStream } from "../core/session-stream.js";
import { nextStep } from "../core/next-step.js";

export interface RuntimeOptions {
  /** Default: a LevelEventLog at $TURNLOG_DIR or ./.turnlog (closed by `runtime.close()`). */
  log?: EventLog;
  provider: Provider;
  tools?: readonly ToolDefinition[];
  /** Phased registration: each provider adds tools in its phase, after MCP tools and `tools`. */
  toolProviders?: readonly ToolProvider[];
  /**
   * MCP servers (stdio command or Streamable HTTP URL) whose tools register first, in the "mcp"
   * phase, as `mcp__<server>__<tool>` (docs/mcp.md). A server that does not start or list its
   * tools fails `createRuntime` with an `McpServerError`; `runtime.close()` closes them all.
   */
  mcpServers?: readonly McpServerConfig[];
  policy?: PolicyInput;
  /** Partial overrides merge with the defaults. */
  budgets?: Partial<Budgets>;
  /** Max concurrent read-only tools. Default 4. */
  concurrency?: number;
  /** Provider attempts per turn for retryable failures. Default 3. */
  providerAttempts?: number;
  /**
   * The wait before a retried provider attempt: `min(maxDelayMs, baseDelayMs · 2^(attempt − 1))`,
   * or the server's `Retry-After` capped by `maxDelayMs`; no jitter, abortable by the `send`
   * signal, never during replay. Default `{ baseDelayMs: 500, maxDelayMs: 8000 }`.
   */
  providerRetry?: ProviderRetryOptions;
  clock?: Clock;
  ids?: IdSource;
  /**
   * How provider requests are built from the history: a token budget (default 100 000), the
   * system text, and the compressor for what no longer fits (default: deterministic). The budget
   * and system text are recorded in `session.started`, so replay builds the same requests.
   */
  history?: { maxTokens?: number; system?: string; compressor?: HistoryCompressor };
  /** Receives visible text as the provider streams it. */
  onDelta?: (text: string) => void;
  /**
   * The decisions version new sessions are recorded under (src/core/decision-versions.ts).
   * Default: the newest. A host pins an older one to roll a new turnlog out before its decisions
   * change (preview the change first with `replay(id, { decisionsVersion: "latest" })`).
   */
  decisionsVersion?: number;
  /**
   * What happens to a session recorded under an older decisions version when this runtime
   * continues it: `"on-resume"` (default) appends `session.decisions.upgraded` before its next turn
   * (or host-routed call), and later decisions use this runtime's version; `"never"` keeps it on
   * its own version for good. A turn in flight always finishes under the version it started with.
   */
  upgradeSessions?: "on-resume" | "never";
  /**
   * Signs a seal of each session's stream at every turn end, after each approval answer, and at
   * `close()` for every stream appended to since its last seal (docs/log.md): the key (Ed25519)
   * and the witness that keeps the latest seals outside the log. `userSeals(directory)` gives the
   * user's key (made on first use in `~/.config/turnlog`) and a witness beside it, as
   * `turnlog run` uses. Default: no seals, so that tests and hosts never write into the user's
   * home unasked; `verify()` then still checks seals already in the log, against this key.
   */
  seals?: SealOptions;
  /**
   * Values the host knows to be secret — the provider's API key, a deploy token — redacted
   * wherever they would reach the log, whatever holds them: a model echoing the key, a tool
   * printing it, an error quoting it (docs/policy.md, "Secret detection"). Matched literally (and
   * in their JSON-escaped and URL-encoded forms), on top of everything the detector finds by
   * itself; each at least 8 characters. `turnlog run` registers the key it reads.
   *
   * @example
   * createRuntime({ provider, secrets: [process.env.OPENAI_API_KEY ?? ""].filter((key) => key.length >= 8) });
   */
  secrets?: readonly string[];
}

export interface Runtime {
  readonly log: EventLog;
  /** Opens a session (a new one when the ID is omitted or unknown), recovering a crashed turn. */
  openSession(sessionId?: string): Promise<Session>;
  /** IDs of every session in the log. */
  listSessions(): Promise<string[]>;
  /**
   * The tools the runtime offers now, as a session records them: an MCP server's
   * `tools/list_changed` changes this list, and each session logs the change before its next decision.
   */
  listTools(): ToolSnapshot[];
  /** A session's recorded events, in order. */
  events(sessionId: string): Promise<RecordedEvent[]>;
  /**
   * Recomputes every decision of a session and compares it with the log. `policy` and `tools`
   * judge it under another configuration (what-if); `decisionsVersion: "latest"` under the newest
   * decisions instead of the ones it was recorded with (an upgrade preview). Either way,
   * `changes` lists every decision that would come out differently.
   */
  replay(sessionId: string, options?: ReplayOptions): Promise<ReplayReport>;
  /** The session state right after the event at a stream position (1-based). */
  stateAt(sessionId: string, position: number): Promise<SessionState>;
  /**
   * Creates session `to` from a copy of session `sessionId`'s events 1..`at` (its own hash chain;
   * `session.started` records `forkedFrom`). `to` must not exist. A cut mid-turn leaves an
   * unfinished turn that `openSession(to)` recovers as usual.
   */
  fork(sessionId: string, options: { at: number; to: string }): Promise<ForkResult>;
  /** The audit trail: one row per tool call of a session (DESIGN.md §4). */
  audit(sessionId: string): Promise<AuditRow[]>;
  /**
   * Walks every hash chain in the log and checks every seal against the runtime's seal key and
   * witness (`seals`): names truncation, deleted streams, dropped tails, rewritten events and
   * forged approvals, and lists unsealed tails (normal after a crash) apart from faults. A seal
   * signed by another key is a fault, so a runtime without `seals` fails on a sealed log.
   */
  verify(): Promise<SealedVerifyReport>;
  close(): Promise<void>;
}

/** What `runtime.replay` may judge a session under instead of what it recorded. */
export interface ReplayOptions {
  /** A partial policy merged over the recorded one. */
  policy?: PolicyInput;
  /** These tools instead of the ones the session offered. */
  tools?: readonly ToolDefinition[];
  /** Compute every decision under this decisions version (`"latest"`: the newest) instead of the session's own. */
  decisionsVersion?: number | "latest";
}


/**
 * Creates a turnlog runtime.
 *
 * @example
 * const runtime = await createRuntime({ log: new MemoryEventLog(), provider, tools: [readFile] });
 * const session = await runtime.openSession();
 * const outcome = await session.send("What is in a.txt?");
 */
export async function createRuntime(options: RuntimeOptions): Promise<Runtime> {
  if (options?.provider === undefined) throw new TypeError("createRuntime needs a provider");
  // First: a bad secret is the host's mistake, reported before anything starts.
  const redactor = createSecretRedactor({ secrets: options.secrets ?? [] });
  // MCP servers first, so that one that does not start fails before the log is opened (and locked).
  const mcp = await connectMcpServers(options.mcpServers ?? []);
  const unsubscribes: (() => void)[] = [];
  const closeMcp = async () => {
    for (const unsubscribe of unsubscribes.splice(0)) unsubscribe();
    await Promise.all(mcp.map((server) => server.close()));
  };
  const ownsLog = options.log === undefined;
  const log =
    options.log ??
    (await LevelEventLog.open(process.env.TURNLOG_DIR ?? ".turnlog", { durability: "sync" }).catch(async (error: unknown) => {
      await closeMcp();
      throw error;
    }));
  // A failed registration (a duplicate name) must not leave server processes or the log's lock behind.
  const registered = mcp.map((server) => server.tools);
  const registry = await ToolRegistry.build({
    mcp: mcp.map((server, index) => ({ source: server.name, tools: registered[index]! })),
    tools: options.tools ?? [],
    providers: options.toolProviders ?? [],
  }).catch(async (error: unknown) => {
    await closeMcp();
    if (ownsLog) await log.close();
    throw error;
  });
  // A server's `tools/list_changed` replaces its tools in the registry; each session records the new
  // set (session.tools.changed) before its next decision (SessionSync). A new list that would
  // duplicate another source's tool name keeps the server's previous tools, as a failed re-list does.
  mcp.forEach((server, index) => {
    const follow = (tools: readonly ToolDefinition[]) => {
      try {
        registry.replaceMcpTools(server.name, tools);
      } catch {
        // The duplicate is the server's doing and has no caller to tell; the registered tools still work.
      }
    };
    unsubscribes.push(server.onToolsChanged(follow));
    // A change announced while the log opened and the registry was built has no listener yet.
    if (server.tools !== registered[index]) follow(server.tools);
  });
  const seals = options.seals;
  const sealer = seals !== undefined ? new StreamSealer(log, { ...seals, ...(options.clock !== undefined ? { clock: options.clock } : {}) }) : undefined;
  const gate = { realPath: resolveRealPath };
  const policy = resolvePolicy(options.policy);
  const budgets = resolveBudgets(options.budgets);
  const concurrency = options.concurrency ?? 4;
  const maxAttempts = options.providerAttempts ?? 3;
  const providerRetry = resolveProviderRetry(options.providerRetry);
  const clock = options.clock ?? { now: () => Date.now() };
  const ids = options.ids ?? { next: () => randomUUID() };
  const provider = options.provider;
  const decisionsVersion = resolveDecisionsVersion(options.decisionsVersion ?? "latest");
  const upgradeSessions = options.upgradeSessions ?? "on-resume";
  if (upgradeSessions !== "on-resume" && upgradeSessions !== "never") throw new TypeError('upgradeSessions is "on-resume" or "never"');
  const open = new Map<string, Promise<Session>>();
  /** Time-travel snapshots: an in-memory, bounded cache, never persisted. */
  const snapshots = new SnapshotCache();

  async function load(sessionId: string): Promise<Session> {
    const store = await SessionStore.load(log, sessionId);
    if (store.version === 0) {
      await store.append([
        {
          type: "session.started",
          data: {
            sessionId,
            policy,
            tools: registry.snapshot(),
            budgets,
            concurrency,
            provider: { id: provider.id, format: provider.format, maxAttempts },
            history: {
              maxTokens: options.history?.maxTokens ?? defaultHistoryMaxTokens,
              ...(options.history?.system !== undefined ? { system: redactor.redactText(options.history.system).text } : {}),
            },
            ...(decisionsVersion > 1 ? { decisionsVersion, environment: observeEnvironment() } : {}),
          },
        },
      ]);
    } else {
      if (!isKnownDecisionsVersion(store.state.decisionsVersion)) {
        throw new SessionStateError(
          `session ${sessionId} was recorded under decisions version ${store.state.decisionsVersion}, newer than this turnlog knows (up to ${latestDecisionsVersion}): continue it with the turnlog that recorded it`,
        );
      }
      await recover(store, { registry, gate, redactor });
    }
    return new Session(
      store,
      {
      provider,
      registry,
      clock,
      gate,
      vault: new SecretVault(),
      redactor,
      providerRetry,
      sync: new SessionSync(registry, upgradeSessions === "on-resume" ? decisionsVersion : undefined),
      ...(options.history?.compressor ? { compressor: options.history.compressor } : {}),
      ...(options.onDelta ? { onDelta: options.onDelta } : {}),
      },
      sealer,
    );
  }

  async function readSession(sessionId: string): Promise<RecordedEvent[]> {
    const events = await log.readStream(sessionStream(sessionId), { maxCount: Number.MAX_SAFE_INTEGER });
    if (events.length === 0) throw new UnknownSessionError(sessionId);
    return events;
  }

  return {
    log,
    openSession(sessionId = ids.next()) {
      if (!sessionIdPattern.test(sessionId)) throw new TypeError(`session ID "${sessionId}" must match ${sessionIdPattern}`);
      let session = open.get(sessionId);
      if (session === undefined) {
        session = load(sessionId);
        open.set(sessionId, session);
        session.catch(() => open.delete(sessionId));
      }
      return session;
    },
    listTools() {
      return registry.snapshot();
    },
    async listSessions() {
      return (await log.listStreams()).flatMap((stream) => sessionIdOfStream(stream) ?? []);
    },
    events: readSession,
    async replay(sessionId, replayOptions = {}) {
      const events = await readSession(sessionId);
      const whatIfPolicy = replayOptions.policy;
      return verifyReplay(events, {
        registry: replayOptions.tools ? new ToolRegistry(replayOptions.tools) : registry,
        // What-if tools replace the recorded set; otherwise the log says which tools were offered when.
        toolsInForce: replayOptions.tools ? "registry" : "log",
        gate,
        ...(replayOptions.decisionsVersion !== undefined ? { decisionsVersion: resolveDecisionsVersion(replayOptions.decisionsVersion) } : {}),
        ...(options.history?.compressor ? { compressor: options.history.compressor } : {}),
        ...(whatIfPolicy
          ? {
              policy: (recorded) =>
                resolvePolicy({ ...recorded, ...whatIfPolicy, workspace: { ...recorded.workspace, ...whatIfPolicy.workspace } }, recorded.workspace.root),
            }
          : {}),
      });
    },
    stateAt(sessionId, position) {
      return snapshots.stateAt(log, sessionId, position);
    },
    async fork(sessionId, forkOptions) {
      if (!sessionIdPattern.test(forkOptions.to)) throw new TypeError(`session ID "${forkOptions.to}" must match ${sessionIdPattern}`);
      const forked = await forkSession(log, sessionId, forkOptions);
      await sealer?.seal(sessionStream(forkOptions.to));
      return forked;
    },
    async audit(sessionId) {
      return auditRows(foldEvents(sessionStateProjection, await readSession(sessionId)));
    },
    verify() {
      return verifySealedLog(log, { keys: seals !== undefined ? [seals.key] : [], ...(seals?.witness !== undefined ? { witness: seals.witness } : {}) });
    },
    async close() {
      try {
        // What was appended since the last seal (a recovery, a host's stream, a run record) is sealed before the log closes.
        await sealer?.sealTouched();
      } finally {
        sealer?.dispose();
        await closeMcp();
        if (ownsLog) await log.close();
      }
    },
  };
}

/**
 * Makes a crashed turn consistent before anything continues it (DESIGN.md §6): a provider
 * request with no response becomes a failed, retryable attempt; a tool that started and never
 * ended is marked interrupted and is not run again.
 */
async function recover(store: SessionStore, deps: { registry: ToolRegistry; gate: GateEnvironment; redactor: SecretRedactor }): Promise<void> {
  const fold = store.fold;
  let step = nextStep(fold, deps.registry);
  // A host-routed call: decide it if the process died before that, and never run it afterwards.
  if (step.kind === "decision" && step.action === "decideHostTool") {
    await store.append(decideObserving("decideHostTool", { state: store.state, registry: deps.registry, policy: store.policy, budgets: store.budgets, gate: deps.gate, redactor: deps.redactor }).events);
    step = nextStep(fold, deps.registry);
  }
  const inDoubt = hostCallInDoubt(store.state.hostCalls);
  if (inDoubt !== undefined) {
    await store.append([
      { type: "session.native_tool.completed", data: { callId: inDoubt.callId, ok: false, code: "interrupted", message: "the process stopped before the call ended; it was not run again", durationMs: 0 } },
    ]);
  }
  const context = fold.turn?.context;
  if (context === undefined) return;
  switch (step.kind === "none" ? undefined : step.action) {
    case "callProvider":
      // The request was written ahead; whether the provider saw it is unknown.
      await store.append([
        {
          type: "turn.provider.failed",
          data: { turnId: context.turnId, attempt: context.attempt, kind: "interrupted", retryable: true, message: "the process stopped before the provider answered" },
        },
      ]);
      return;
    case "startTool":
    case "runToolCalls": {
      // Tools were running. Only a call that is safe to repeat (idempotent and read-only) runs again, on resume.
      const inDoubt = context.toRun.filter((id) => {
        const call = store.state.calls.get(id);
        return call?.status === "running" && !isRerunnable(call, deps.registry);
      });
      if (inDoubt.length > 0) {
        await store.append(inDoubt.map((callId) => ({ type: "turn.tool.interrupted" as const, data: { turnId: context.turnId, callId } })));
      }
      return;
    }
    default:
      // A decision owed is made by the next resume; a wait waits; nothing was in flight.
      return;
  }
}
