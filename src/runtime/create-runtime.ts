import { randomUUID } from "node:crypto";
import { createSecretRedactor, type SecretRedactor } from "../policy/secrets/secret-detector.js";
import type { Budgets } from "../contracts/budgets.js";
import { resolveBudgets } from "../contracts/budgets.js";
import type { PolicyInput } from "../contracts/policy.js";
import { ConfigError } from "../errors/config-error.js";
import { RuntimeClosedError } from "../errors/runtime-closed-error.js";
import { sessionLeasesOf, type Clock, type EventLog, type IdSource, type RecordedTurnlogEvent } from "../log/event-log.js";
import { StreamSealer, type SealOptions } from "../log/seal/stream-sealer.js";
import type { SealedVerifyReport } from "../log/seal/seal-verifier.js";
import { logLocationFromEnvironment, openLogLocation } from "../log/log-location.js";
import { systemClock } from "../log/event-recording.js";
import { resolvePolicy } from "../policy/default-policy.js";
import type { AuditRow } from "../projections/audit.js";
import type { SessionState } from "../projections/session-state.js";
import type { Provider } from "../providers/provider.js";
import type { ReplayReport } from "../replay/replay-verifier.js";
import type { ForkResult } from "../replay/fork.js";
import { createLogReader, type ReaderReplayOptions } from "../reader/log-reader.js";
import { serveAnswers } from "../reader/held-call-answer.js";
import type { ToolDefinition } from "../tools/define-tool.js";
import type { ToolSnapshot } from "../contracts/tools.js";
import { ToolRegistry, type ToolProvider } from "../tools/tool-registry.js";
import { connectMcpServers, type McpServerConfig } from "../tools/mcp/mcp-tools.js";
import { resolveRealPath } from "../util/real-path.js";
import { SecretVault } from "./secret-vault.js";
import { resolveDecisionsVersion } from "../core/decision-versions.js";
import { observeEnvironment, SessionSync } from "./session-sync.js";
import { defaultHistoryMaxTokens } from "../history/session-history.js";
import type { HistoryCompressor } from "../history/history-compressor.js";
import { defaultMaxStoredOutputChars } from "./tool-plan-runner.js";
import type { DeltaContext, DiscardedAttempt, SendOutcome } from "./provider-turn-loop.js";
import { releaseSession, runningEditOwner, Session, type SessionHosting } from "./session.js";
import { resolveProviderRetry, type ProviderRetryOptions } from "./provider-retry.js";
import { defaultSnapshotEvery, SessionStore, type SnapshotUse } from "./session-store.js";
import type { RecoveryDependencies } from "./session-recovery.js";
import { resolveSessionLeasePolicy, type SessionLeasePolicy } from "./session-lease-policy.js";
import { prepareSession, type SessionOpening } from "./session-opening.js";
import { checkRuntimeOptions } from "./runtime-options-schema.js";
import { sessionIdPattern, sessionStream } from "../core/session-stream.js";
import { resumeAll, type ResumeAllOptions, type ResumeAllReport } from "./resume-all.js";
import { linkSignals } from "../util/linked-signal.js";
import type { OtelTracer } from "../otel/otel-tracer.js";
import type { SpanEmitter } from "../otel/span-emitter.js";
import { wellFormedText } from "../util/well-formed-text.js";
import { describeThrown } from "../util/json-value.js";

export interface RuntimeOptions {
  /**
   * Default (closed by `runtime.close()`): the log `$TURNLOG_LOG` names — a directory, or a
   * `postgres://` URL opened as a PostgresEventLog in schema `$TURNLOG_SCHEMA` (else `turnlog`) —
   * else a LevelEventLog at `$TURNLOG_DIR` or `./.turnlog`.
   */
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
  /**
   * The clock of tool durations (from its `monotonic()` when it has one) and of seals, and the
   * wait before a retried provider attempt (its `sleep()` when it has one). Events' `recordedAt`
   * comes from the log's clock (docs/log.md). Default: `Date.now()`, `performance.now()` and a timer.
   */
  clock?: Clock;
  ids?: IdSource;
  /**
   * How provider requests are built from the history: a token budget (default 100 000), the
   * system text, and the compressor for what no longer fits (default: deterministic). The budget
   * and system text are recorded in `session.started`, so replay builds the same requests.
   */
  history?: { maxTokens?: number; system?: string; compressor?: HistoryCompressor };
  /**
   * Receives visible text as the provider streams it, with the session, turn and attempt it
   * belongs to. The text is the provider's, not yet redacted; an attempt that later fails is
   * announced to `onAttemptDiscarded`, and its text never reaches the log.
   *
   * @example
   * onDelta: (text, { sessionId, attempt }) => ui.append(sessionId, attempt, text)
   */
  onDelta?: (text: string, context: DeltaContext) => void;
  /**
   * Told when a provider attempt that streamed text to `onDelta` ended in `turn.provider.failed`
   * (after that event is logged): the text shown for it was thrown away. A retry, if one follows,
   * streams again under the next attempt number (docs/embedding.md, "The live stream").
   */
  onAttemptDiscarded?: (attempt: DiscardedAttempt) => void;
  /**
   * The most characters of one tool result the log keeps (after redaction). A longer output is
   * stored cut — its head and tail, exactly the parts the model's packet can show — and
   * `turn.tool.succeeded` records `stored: { originalChars, headChars }`. Never below a tool's
   * `maxResultChars` (it is raised to it). Default 1 000 000. Replay and the packets the model sees
   * are unchanged by it (docs/log.md, "Large tool outputs").
   */
  maxStoredOutputChars?: number;
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
   * printing it, an error quoting it (docs/policy.md, "Secrets"). Matched literally (and
   * in their JSON-escaped and URL-encoded forms), on top of everything the detector finds by
   * itself; each at least 8 characters. `turnlog run` registers the key it reads.
   *
   * @example
   * createRuntime({ provider, secrets: [process.env.OPENAI_API_KEY ?? ""].filter((key) => key.length >= 8) });
   */
  secrets?: readonly string[];
  /**
   * What a `send`, `resume` or `runTool` does about other processes on a log they share
   * (docs/embedding.md, "Many hosts, one log"):
   * - `"fail"` (the default on a log that grants leases, i.e. `PostgresEventLog`): the operation
   *   holds the session's lease while it drives it; when another process holds it, the operation
   *   throws `SessionBusyError` and appends nothing. Opening a session recovers a crashed turn
   *   only when its lease is free.
   * - `"off"` (the default, and the only choice, on a log one process owns: LevelDB, memory):
   *   hosts race, append-before-act keeps it safe — of two hosts, only the one whose
   *   `turn.tool.started` (or `turn.provider.requested`) append wins performs that effect, and the
   *   loser carries on from the log or leaves the turn to the winner.
   *
   * `"fail"` on a log without leases is a `ConfigError`.
   */
  sessionLease?: "fail" | "off";
  /**
   * Resume a session this runtime parked for approval (or `resumeAll` found waiting) as soon as its answers are in the log —
   * given in this process or any other on the same log — without a call to `resume()`. `true`,
   * or callbacks that tell the host how each such resume ended (`onOutcome`, including a new
   * `awaiting-approval`, which is waited for again) or why it could not run (`onError`: e.g. a
   * `SessionBusyError` when another host resumed it first). `runtime.close()` stops the waits and
   * cancels a resume under way (`onOutcome` hears `stopped` / `cancelled`). Default: off — the host calls `waitForAnswers()` and `resume()`.
   *
   * @example
   * createRuntime({ log, provider, tools, autoResume: { onOutcome: (outcome, session) => notify(session.id, outcome) } });
   */
  autoResume?: boolean | AutoResumeOptions;
  /**
   * An OpenTelemetry tracer (`trace.getTracer("my-agent")` from `@opentelemetry/api`, which must
   * then be installed): each session's events become live GenAI spans — `invoke_agent` per send,
   * `chat {model}` per provider attempt, `execute_tool {name}` per call — with their recorded
   * times, equal to what `turnlog otel` derives from the log later (docs/observability.md). A
   * tool's handler runs with its call's span active, so its own spans nest under it. Without a
   * tracer, OpenTelemetry is never loaded.
   *
   * @example
   * createRuntime({ provider, tools, tracer: trace.getTracer("my-agent") });
   */
  tracer?: OtelTracer;
  /**
   * With `tracer`: export tool arguments and results as span attributes
   * (`gen_ai.tool.call.arguments`, `gen_ai.tool.call.result`), as the log holds them (redacted)
   * and scanned for secrets once more. Default false: spans carry no content.
   */
  traceContent?: boolean;
  /**
   * The most sessions whose in-memory state (their folded events) the runtime keeps. Beyond it,
   * the least recently used **idle** session — no operation queued or running, no
   * `waitForAnswers()` or auto-resume waiting on it, no secret arguments of a held call that live
   * only in memory — is released; the log holds everything, so it is loaded again on demand, as
   * opening it would: by `openSession(id)`, or by the next operation on a `Session` object the host
   * kept (docs/embedding.md, "Sessions in memory"). A session that is not idle is never released,
   * so the runtime may hold more than this while more are busy. Default 1 000.
   */
  maxOpenSessions?: number;
  /**
   * Snapshots of each session's state kept beside the log, when the log keeps any
   * (`log.snapshots`: files in a LevelDB log's directory, tables of a PostgreSQL log's schema;
   * docs/design.md#5-projections): written in the background every `every` events (at the first
   * point between turns after that many; default {@link defaultSnapshotEvery}), and read when a
   * session is opened or loaded again, which then folds only the events after the newest one. A
   * cache: `false` writes and reads none, and a missing or damaged snapshot only makes an open slower.
   * A runtime with a `tracer` folds each session from its start when it loads it (its spans are
   * derived from every event), and writes snapshots all the same.
   */
  snapshots?: false | { every?: number };
}

/** The default of `RuntimeOptions.maxOpenSessions`. */
export const defaultMaxOpenSessions = 1000;

/** `RuntimeOptions.autoResume`'s callbacks. */
export interface AutoResumeOptions {
  /** How a resume this runtime started by itself ended. */
  onOutcome?: (outcome: SendOutcome, session: Session) => void;
  /** Why a resume this runtime started by itself failed (nothing to do: the session tells where it stands). */
  onError?: (error: unknown, session: Session) => void;
}

export interface Runtime {
  readonly log: EventLog;
  /**
   * Opens a session, recovering a crashed turn: a new one when the ID is omitted or unknown, unless
   * `create: false`, which throws `UnknownSessionError` for an ID the log does not hold (and
   * creates nothing). A session this runtime already has open is returned reloaded from the log
   * if another writer appended to it; one it released from memory (`maxOpenSessions`) is loaded
   * again — the same `Session` object while the host still holds it. A session recorded with another provider gets a
   * `session.config.changed` naming this runtime's before anything else; one whose unfinished
   * turn holds calls for tools this runtime lacks is refused (`SessionStateError`).
   *
   * @example
   * const session = await runtime.openSession("support-42", { create: false });
   */
  openSession(sessionId?: string, options?: OpenSessionOptions): Promise<Session>;
  /** IDs of every session in the log. */
  listSessions(): Promise<string[]>;
  /**
   * The tools the runtime offers now, as a session records them: an MCP server's
   * `tools/list_changed` changes this list, and each session logs the change before its next decision.
   */
  listTools(): ToolSnapshot[];
  /** A session's recorded events, in order. */
  events(sessionId: string): Promise<RecordedTurnlogEvent[]>;
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
  /** The audit trail: one row per tool call of a session (docs/audit.md). */
  audit(sessionId: string): Promise<AuditRow[]>;
  /**
   * Walks every hash chain in the log and checks every seal against the runtime's seal key and
   * witness (`seals`): names truncation, deleted streams, dropped tails, rewritten events and
   * forged approvals, and lists unsealed tails (normal after a crash) apart from faults. A seal
   * signed by another key is a fault, so a runtime without `seals` fails on a sealed log.
   */
  verify(): Promise<SealedVerifyReport>;
  /**
   * The worker's sweep, for a host to call at start (docs/embedding.md, "A worker that picks up
   * what was left"): continues every session of the log that owes work — every held call
   * answered and not yet resumed, or a turn a crash cut off with no live driver — once each, one
   * at a time, each confirmed on its own fold under the session's lease (`sessionLease`) before
   * anything runs. A session another process drives is skipped (`SessionBusyError`), one still
   * waiting for a person is left alone (with `autoResume`, waited on: its answers resume it as if
   * this runtime had parked it). Resolves with what became of each; `signal` stops the sweep.
   *
   * @example
   * const runtime = await createRuntime({ log, provider, tools, autoResume: { onOutcome } });
   * const report = await runtime.resumeAll();
   * logger.info({ continued: report.continued.length, waiting: report.waiting.length, failed: report.failed.length }, "picked up");
   */
  resumeAll(options?: ResumeAllOptions): Promise<ResumeAllReport>;
  /**
   * Closes the runtime (docs/embedding.md, "Closing"): every wait ends — a pending
   * `waitForAnswers()` rejects with `RuntimeClosedError`, a `session.events()` loop ends, an
   * auto-resume stops waiting — and a `send`, `resume` or `runTool` under way is cancelled as its
   * signal would cancel it (the turn ends `stopped` / `cancelled`). It resolves once those have
   * recorded how they ended, what was appended is sealed, the MCP servers are closed, and the log
   * too if the runtime opened it. Every later call of the runtime or its sessions rejects with
   * `RuntimeClosedError`; closing again is harmless.
   */
  close(): Promise<void>;
}

/** How `runtime.openSession` treats an ID the log does not hold. */
export interface OpenSessionOptions {
  /** `true` (default): start a new session under that ID. `false`: throw `UnknownSessionError`. */
  create?: boolean;
}

/** What `runtime.replay` may judge a session under instead of what it recorded. */
export type ReplayOptions = ReaderReplayOptions;


/**
 * The live span emitter, loaded only when a host passes a tracer: the root entry never imports
 * `@opentelemetry/api`, which a host that does not trace need not install.
 */
async function spanEmitter(tracer: OtelTracer, options: { includeContent: boolean; redactor: SecretRedactor }): Promise<SpanEmitter> {
  let emitter: typeof import("../otel/span-emitter.js");
  try {
    emitter = await import("../otel/span-emitter.js");
  } catch (error) {
    throw new ConfigError([`tracer: live spans need the package @opentelemetry/api (npm install @opentelemetry/api): ${describeThrown(error)}`]);
  }
  return emitter.createSpanEmitter(tracer, options);
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
  // First: a mistake in the options (a typo, a bad value, a provider without `complete`) is the
  // host's, reported as one ConfigError before any MCP server starts or the log is opened.
  checkRuntimeOptions(options);
  // A bad secret is the host's mistake too, reported before anything starts.
  const redactor = createSecretRedactor({ secrets: options.secrets ?? [] });
  const spans = options.tracer !== undefined ? await spanEmitter(options.tracer, { includeContent: options.traceContent === true, redactor }) : undefined;
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
    (await openLogLocation(logLocationFromEnvironment(process.env) ?? { dir: ".turnlog" }, { durability: "sync" }).catch(async (error: unknown) => {
      await closeMcp();
      throw error;
    }));
  let leasePolicy: SessionLeasePolicy;
  try {
    leasePolicy = resolveSessionLeasePolicy(options.sessionLease, sessionLeasesOf(log));
  } catch (error) {
    await closeMcp();
    if (ownsLog) await log.close();
    throw error;
  }
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
  const maxStoredOutputChars = options.maxStoredOutputChars ?? defaultMaxStoredOutputChars;
  const maxAttempts = options.providerAttempts ?? 3;
  const providerRetry = resolveProviderRetry(options.providerRetry);
  const clock = options.clock ?? systemClock;
  const ids = options.ids ?? { next: () => randomUUID() };
  const provider = options.provider;
  const decisionsVersion = resolveDecisionsVersion(options.decisionsVersion ?? "latest");
  const upgradeSessions = options.upgradeSessions ?? "on-resume";
  const maxOpenSessions = options.maxOpenSessions ?? defaultMaxOpenSessions;
  const snapshotUse: SnapshotUse = options.snapshots === false ? false : { every: options.snapshots?.every ?? defaultSnapshotEvery };
  /** Sessions being opened (their store loading, created or recovered). */
  const opening = new Map<string, Promise<Session>>();
  /** Sessions whose state is in memory, least recently used first (a use moves one to the end). */
  const resident = new Map<string, Session>();
  /**
   * Sessions released from memory, weakly: while a host still holds one, `openSession` returns
   * that same object (one `Session` per ID in a runtime); once the host let go of it, it is gone
   * and its entry with it.
   */
  const released = new Map<string, WeakRef<Session>>();
  const forgetReleased = new FinalizationRegistry<string>((sessionId) => {
    if (released.get(sessionId)?.deref() === undefined) released.delete(sessionId);
  });
  // The read side (events, replay, time travel, fork, audit, verify) is the read API over this log;
  // it follows the registry as MCP servers change their tools. Its time-travel snapshots are an
  // in-memory, bounded cache; it also reads the log's own (docs/design.md#5-projections) unless
  // `snapshots: false`.
  const reader = createLogReader(log, {
    tools: registry,
    snapshots: { logSnapshots: options.snapshots !== false },
    gate,
    ...(options.history?.compressor ? { compressor: options.history.compressor } : {}),
    // Its fork announces and seals the new session with the runtime's key and witness.
    ...(seals !== undefined ? { seals: { ...seals, ...(options.clock !== undefined ? { clock: options.clock } : {}) } } : {}),
  });

  const providerInForce = { id: provider.id, format: provider.format, maxAttempts };
  const recovery: RecoveryDependencies = { registry, gate, redactor, rerunInDoubt: leasePolicy.rerunInDoubt };
  const history = {
    maxTokens: options.history?.maxTokens ?? defaultHistoryMaxTokens,
    ...(options.history?.system !== undefined ? { system: redactor.redactText(wellFormedText(options.history.system)).text } : {}),
  };
  const sessionOpening: SessionOpening = {
    registry,
    provider: providerInForce,
    leasePolicy,
    recovery,
    start: (sessionId) => ({
      type: "startSession",
      sessionId,
      policy,
      tools: registry.snapshot(),
      budgets,
      concurrency,
      provider: providerInForce,
      history,
      decisionsVersion,
      environment: observeEnvironment(),
    }),
  };
  const closing = new AbortController();
  /** Operations under way (sends, answers, openings, auto-resumes): `close()` lets each end first. */
  const inFlight = new Set<Promise<unknown>>();
  const track = (work: Promise<unknown>) => {
    const settled = work.catch(() => undefined).finally(() => inFlight.delete(settled));
    inFlight.add(settled);
  };
  /** After `close()`, every operation is refused with the reason the closing signal carries. */
  const ensureOpen = () => closing.signal.throwIfAborted();
  let closed: Promise<void> | undefined;
  const hosting: SessionHosting = {
    ...(leasePolicy.leases !== undefined ? { leases: leasePolicy.leases, recovery } : {}),
    ...(options.autoResume !== undefined && options.autoResume !== false ? { autoResume: options.autoResume === true ? {} : options.autoResume } : {}),
    closing: closing.signal,
    track,
    // After a failed append, the session is taken up again as opening it here would.
    reopen: (store) => prepareSession(store, false, sessionOpening),
    residency: {
      used: (session) => {
        released.delete(session.id);
        resident.delete(session.id);
        resident.set(session.id, session);
        releaseIdle();
      },
      load: (sessionId) => loadStore(sessionId, false),
    },
  };

  /**
   * Releases idle sessions, least recently used first, until at most `maxOpenSessions` are in
   * memory (or only busy ones are left beyond it). A released session's live spans are
   * forgotten too (loading it again tells the span emitter its history anew), and so is the last
   * seal the sealer remembers of it (read back from the log at its next seal).
   */
  function releaseIdle(): void {
    if (resident.size <= maxOpenSessions) return;
    for (const [sessionId, session] of resident) {
      if (resident.size <= maxOpenSessions) return;
      if (!session[releaseSession]()) continue;
      resident.delete(sessionId);
      spans?.forget(sessionId);
      sealer?.forget(sessionStream(sessionId));
      released.set(sessionId, new WeakRef(session));
      forgetReleased.register(session, sessionId);
    }
  }

  /**
   * A session's store, loaded from the log and created or recovered (\`prepareSession\`): what
   * opening a session does, and what a released session does before its next operation.
   */
  async function loadStore(sessionId: string, create: boolean, leasedRecovery = false): Promise<SessionStore> {
    // A sealing runtime announces each answer, turn end and new session in a seal before appending it.
    const store = await SessionStore.load(log, sessionId, spans, sealer !== undefined ? (stream, version, events) => sealer.announce(stream, version, events) : undefined, snapshotUse);
    await prepareSession(store, create, sessionOpening, { leasedRecovery });
    return store;
  }

  /**
   * Opens a session's store, creating or recovering it. Another host may create, reopen or
   * recover it at the same moment: an append of this preparation that loses that race folds what
   * the other host appended and prepares again from there.
   */
  async function load(sessionId: string, create: boolean, leasedRecovery = false): Promise<Session> {
    const store = await loadStore(sessionId, create, leasedRecovery);
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
        sync: new SessionSync(registry, upgradeSessions === "on-resume" ? decisionsVersion : undefined, providerInForce),
        ...(options.history?.compressor ? { compressor: options.history.compressor } : {}),
        ...(options.onDelta ? { onDelta: options.onDelta } : {}),
        ...(options.onAttemptDiscarded ? { onAttemptDiscarded: options.onAttemptDiscarded } : {}),
        maxStoredOutputChars,
        shared: sessionLeasesOf(log) !== undefined,
        rerunInDoubt: recovery.rerunInDoubt,
        ...(spans !== undefined ? { inCallContext: <T>(callId: string, run: () => T) => spans.inCallSpan(sessionId, callId, run) } : {}),
      },
      sealer,
      hosting,
    );
  }

  /**
   * The one `Session` per ID: the open one, reloaded, or a new one loaded from the log. With
   * `leasedRecovery`, a turn left in flight is not recovered on opening but by the caller's next
   * operation under the lease (resumeAll's), so the opening takes no lease of its own.
   */
  async function openOne(sessionId: string, create: boolean, leasedRecovery = false): Promise<Session> {
    const pending = opening.get(sessionId);
    const known = resident.get(sessionId) ?? released.get(sessionId)?.deref() ?? (pending !== undefined ? await pending : undefined);
    if (known !== undefined) {
      // Already open here (or released while the host kept it): current with whatever another
      // writer appended since — a released one loads from the log, as opening it would.
      hosting.residency?.used(known);
      await known.refresh();
      return known;
    }
    const session = load(sessionId, create, leasedRecovery);
    track(session);
    opening.set(sessionId, session);
    try {
      const loaded = await session;
      hosting.residency?.used(loaded);
      return loaded;
    } finally {
      opening.delete(sessionId);
    }
  }

  // On a LevelDB log, answers other processes hand this one through the owner channel are recorded
  // here, with this runtime's redaction, tools and seals; its sessions see them at once (docs/log.md, "The owner channel").
  const stopAnswering = serveAnswers(
    log,
    { redactor, tools: registry, editOwner: (toolName) => runningEditOwner(registry.get(toolName), gate.realPath, redactor), ...(sealer !== undefined ? { sealer } : {}) },
    track,
  );

  const runtime: Runtime = {
    log,
    async openSession(requestedId, openOptions = {}) {
      ensureOpen();
      const create = openOptions.create ?? true;
      if (typeof create !== "boolean") throw new TypeError("openSession: `create` is true or false");
      if (requestedId === undefined && !create) throw new TypeError("openSession: `create: false` needs the ID of an existing session");
      const sessionId = requestedId ?? ids.next();
      if (!sessionIdPattern.test(sessionId)) throw new TypeError(`session ID "${sessionId}" must match ${sessionIdPattern}`);
      return openOne(sessionId, create);
    },
    listTools() {
      return registry.snapshot();
    },
    async listSessions() {
      ensureOpen();
      return reader.sessionIds();
    },
    async events(sessionId) {
      ensureOpen();
      return reader.events(sessionId);
    },
    async replay(sessionId, replayOptions) {
      ensureOpen();
      return reader.replay(sessionId, replayOptions);
    },
    async stateAt(sessionId, position) {
      ensureOpen();
      return reader.stateAt(sessionId, position);
    },
    async fork(sessionId, forkOptions) {
      ensureOpen();
      return reader.fork(sessionId, forkOptions);
    },
    async audit(sessionId) {
      ensureOpen();
      return reader.audit(sessionId);
    },
    async verify() {
      ensureOpen();
      return reader.verify({ keys: seals !== undefined ? [seals.key] : [], ...(seals?.witness !== undefined ? { witness: seals.witness } : {}) });
    },
    async resumeAll(sweepOptions = {}) {
      ensureOpen();
      // The host's signal, or the runtime's close, stops the sweep and cancels the resume under way.
      const linked = linkSignals([sweepOptions.signal, closing.signal]);
      const sweep = resumeAll(
        {
          log,
          reader,
          // Two workers opening one session must not take its lease from each other just to
          // recover it: the continuing step recovers it under the lease (session.ts, continueLeftWork).
          open: (sessionId) => {
            ensureOpen();
            return openOne(sessionId, false, true);
          },
          autoResume: hosting.autoResume !== undefined,
        },
        linked.signal,
      ).finally(() => linked.dispose());
      track(sweep);
      return sweep;
    },
    close() {
      closed ??= (async () => {
        // Every wait ends (waitForAnswers rejects, events() loops end), turns under way are
        // cancelled (they end stopped: cancelled, in the log), later calls are refused; then what
        // is under way is let finish before anything it appends to is closed.
        closing.abort(new RuntimeClosedError());
        stopAnswering();
        while (inFlight.size > 0) await Promise.all(inFlight);
        try {
          // What was appended since the last seal (a recovery, a host's stream, a run record) is sealed before the log closes.
          await sealer?.sealTouched();
        } finally {
          sealer?.dispose();
          await closeMcp();
          if (ownsLog) await log.close();
        }
      })();
      return closed;
    },
  };
  return runtime;
}
