import { z } from "zod";
import { BudgetsSchema } from "./budgets.js";
import { GateDecisionSchema, ApprovalModeSchema, PolicySnapshotSchema } from "./policy.js";
import {
  FinishReasonSchema,
  ProviderFailureKindSchema,
  ProviderFormatSchema,
  RawToolCallSchema,
  UsageSchema,
} from "./provider.js";
import { RiskClassSchema } from "./risk.js";
import { ToolSnapshotSchema } from "./tools.js";

/*
 * The event catalogue (docs/events.md). One schema per event type; the TypeScript union is inferred
 * from them. Add fields freely; rename nothing without a schema version bump.
 */

const turnId = z.string().min(1);
const callId = z.string().min(1);

function event<const Type extends string, Data extends z.ZodType>(type: Type, data: Data) {
  return z.object({ type: z.literal(type), data });
}

/** The provider a session's requests go to, as `session.started` and `session.config.changed` record it. */
const ProviderConfigSchema = z.object({
  id: z.string(),
  format: ProviderFormatSchema,
  /** Provider attempts allowed per turn (1 + retries of retryable failures). */
  maxAttempts: z.number().int().positive(),
});

export const SessionStartedSchema = event(
  "session.started",
  z.object({
    sessionId: z.string().min(1),
    policy: PolicySnapshotSchema,
    tools: z.array(ToolSnapshotSchema),
    budgets: BudgetsSchema,
    concurrency: z.number().int().positive(),
    provider: ProviderConfigSchema,
    /** How provider requests are built from the history: the token budget and the system text. */
    history: z.object({ maxTokens: z.number().int().positive(), system: z.string().optional() }).optional(),
    /** Set on a fork: the session and stream position its copied prefix comes from. */
    forkedFrom: z.object({ sessionId: z.string().min(1), position: z.number().int().positive() }).optional(),
    /**
     * The decisions version this session's decisions are computed under (src/core/decision-versions.ts).
     * Absent: version 1, every log recorded before decision versions existed.
     */
    decisionsVersion: z.number().int().positive().optional(),
    /**
     * What the gate reads of the machine it runs on, observed when the session started (decisions
     * version 2 on): the system temporary directory and the user's home directory, as command
     * safety judges `rm -rf` targets against them. Recorded so a replay elsewhere decides the same.
     */
    environment: z.object({ tempDir: z.string(), homeDir: z.string() }).optional(),
  }),
);

export const DecisionsUpgradedSchema = event(
  "session.decisions.upgraded",
  z.object({
    /** The version the session's decisions were computed under until here. */
    from: z.number().int().positive(),
    /** The version later decisions are computed under. */
    to: z.number().int().positive(),
    /**
     * What the gate reads of the machine, observed at the upgrade, for a session whose
     * `session.started` did not record it (sessions started under version 1).
     */
    environment: z.object({ tempDir: z.string(), homeDir: z.string() }).optional(),
  }),
);

export const ToolsChangedSchema = event(
  "session.tools.changed",
  z.object({
    /** The whole tool set offered from here on (a tool added, removed or changed; an MCP server's `tools/list_changed`). */
    tools: z.array(ToolSnapshotSchema),
  }),
);

export const EnvironmentObservedSchema = event(
  "session.environment.observed",
  z.object({
    /**
     * Paths the gate resolved through symlinks for the first time, with what they resolved to
     * (decisions version 2 on): recorded before the decision that read them, so replay reads the
     * log instead of a file system that may have changed or be gone.
     */
    realPaths: z.array(z.object({ path: z.string(), realPath: z.string() })),
    /**
     * Git entries the gate read for the first time (decisions version 5 on): whether a directory
     * is a git directory, and the directories a `.git` file's `gitdir:`, a git directory's
     * `commondir` or its `core.worktree` name, which the writing tools' protected paths cover too
     * (docs/security.md, "Protected paths").
     */
    gitLinks: z
      .array(z.object({ path: z.string(), links: z.array(z.object({ via: z.enum(["repository", "gitdir", "commondir", "worktree"]), directory: z.string() })) }))
      .optional(),
  }),
);

export const SessionConfigChangedSchema = event(
  "session.config.changed",
  z.object({
    /**
     * The provider that answers from here on: the session was reopened by a runtime with another
     * provider (id, format or attempts per turn). Later `turn.provider.requested` events name it,
     * the rest of a turn in progress goes to it, and its `maxAttempts` applies from the next turn.
     */
    provider: ProviderConfigSchema.optional(),
    policy: PolicySnapshotSchema.optional(),
    tools: z.array(ToolSnapshotSchema).optional(),
    budgets: BudgetsSchema.optional(),
  }),
);

export const UserMessageAddedSchema = event("session.user_message.added", z.object({ content: z.string() }));

export const TurnStartedSchema = event(
  "turn.started",
  z.object({
    turnId,
    /** 1-based sequence number of the turn in the session. */
    turnSeq: z.number().int().positive(),
    /** 1-based provider iteration within the current user message. */
    iteration: z.number().int().positive(),
  }),
);

export const ProviderRequestedSchema = event(
  "turn.provider.requested",
  z.object({
    turnId,
    attempt: z.number().int().positive(),
    providerId: z.string(),
    format: ProviderFormatSchema,
    messageCount: z.number().int().nonnegative(),
    toolNames: z.array(z.string()),
  }),
);

export const ProviderRespondedSchema = event(
  "turn.provider.responded",
  z.object({
    turnId,
    attempt: z.number().int().positive(),
    content: z.string(),
    toolCalls: z.array(RawToolCallSchema),
    finishReason: FinishReasonSchema,
    usage: UsageSchema.optional(),
    /** Provider replay echo (e.g. `reasoning_content`), kept only for native replay of a safe group. */
    echo: z.record(z.string(), z.unknown()).optional(),
    /** Why an echo the provider sent was not kept. */
    echoDropped: z.enum(["echo_oversized", "unsafe_arguments", "echo_secret"]).optional(),
  }),
);

export const ProviderFailedSchema = event(
  "turn.provider.failed",
  z.object({
    turnId,
    attempt: z.number().int().positive(),
    kind: ProviderFailureKindSchema,
    retryable: z.boolean(),
    message: z.string().optional(),
    status: z.number().int().optional(),
    /** How long the server asked to wait before another attempt (`Retry-After`), in milliseconds. */
    retryAfterMs: z.number().int().nonnegative().optional(),
  }),
);

export const NormalizedCallSchema = z.object({
  index: z.number().int().nonnegative(),
  id: callId,
  idSource: z.enum(["provider", "derived"]),
  /** The provider's own ID, when it gave one (kept even when turnlog derived another). */
  providerId: z.string().optional(),
  name: z.string(),
  argumentsText: z.string().optional(),
  argumentsRedacted: z.boolean().optional(),
}).meta({ id: "NormalizedCall" });
export type NormalizedCall = z.infer<typeof NormalizedCallSchema>;

export const ToolCallsNormalizedSchema = event(
  "turn.tool_calls.normalized",
  z.object({
    turnId,
    content: z.string(),
    calls: z.array(NormalizedCallSchema),
    nativeReplaySafe: z.boolean(),
    unsafeReasons: z.array(z.string()),
  }),
);

export const RejectionReasonSchema = z.enum([
  "unknown-tool",
  "missing-name",
  "missing-arguments",
  "malformed-arguments",
  "not-an-object",
  "schema-invalid",
  "duplicate-id",
  "over-budget",
  /** The arguments held a secret (never stored) and the process restarted before planning. */
  "arguments-unavailable",
]);
export type RejectionReason = z.infer<typeof RejectionReasonSchema>;

export const ToolPlanSchema = z.object({
  callId,
  status: z.enum(["planned", "rejected"]),
  tool: z.string().optional(),
  input: z.unknown().optional(),
  reason: RejectionReasonSchema.optional(),
  /** Model-readable explanation of a rejection (zod issues, parse error). */
  issues: z.array(z.object({ path: z.string(), message: z.string() })).optional(),
}).meta({ id: "ToolPlan" });
export type ToolPlan = z.infer<typeof ToolPlanSchema>;

export const ToolCallsPlannedSchema = event("turn.tool_calls.planned", z.object({ turnId, plans: z.array(ToolPlanSchema) }));

export const GateDecisionRecordSchema = z.object({
  callId,
  decision: GateDecisionSchema,
  /** The rule that decided, e.g. `mode:ask`, `hard-block:unknown-tool`, `deny:tool=rm`. */
  rule: z.string(),
  riskClass: RiskClassSchema.nullable(),
  /** SHA-256 of tool name + canonical arguments: an approval binds to it. */
  fingerprint: z.string(),
  /**
   * A command tool's call, from decisions version 4: whether it would run inside an OS sandbox
   * (the tool is `contained`). Absent for other tools and in older logs.
   */
  contained: z.boolean().optional(),
}).meta({ id: "GateDecisionRecord" });
export type GateDecisionRecord = z.infer<typeof GateDecisionRecordSchema>;

export const ToolCallsGatedSchema = event(
  "turn.tool_calls.gated",
  z.object({ turnId, approvalMode: ApprovalModeSchema, decisions: z.array(GateDecisionRecordSchema) }),
);

const approval = z.object({
  turnId,
  callId,
  fingerprint: z.string(),
  by: z.string(),
  note: z.string().optional(),
  /** `call`: this call only; `tool`: this tool for the rest of the session (granted only). */
  scope: z.enum(["call", "tool"]).default("call"),
});
export const ApprovalGrantedSchema = event(
  "turn.approval.granted",
  approval.extend({
    /**
     * A `tool`-scope approval of a command tool: the command prefix the person approved
     * (`git status`, `npm test`, `ls`), computed from the held call's command text. From decisions
     * version 3 such an approval lets later calls run only when their command has the same prefix
     * and is known-safe (docs/policy.md).
     */
    commandPrefix: z.string().optional(),
    /**
     * The same approval's exact command (`commandScope`: every word, operator, assignment and
     * redirection of the held call's command, in canonical JSON). From decisions version 5 it is
     * what the approval covers: a later command runs on it only when it is the same command and
     * known-safe; a new option or argument asks again (docs/policy.md).
     */
    commandScope: z.string().optional(),
    /**
     * Decisions version 7 on: the arguments the person approved the call with, when they changed the
     * model's (edit on approval, docs/policy.md#edit-on-approval). The call runs with them, the history
     * shows the call with them, and `fingerprint` is over them (tool + canonical edited arguments).
     */
    arguments: z.record(z.string(), z.unknown()).optional(),
    /**
     * With `arguments`: the fingerprint of the call as the model proposed it and the gate held it
     * (what the person reviewed), kept beside the edited call's.
     */
    proposedFingerprint: z.string().optional(),
  }),
);
export const ApprovalDeniedSchema = event("turn.approval.denied", approval);

export const ToolStartedSchema = event(
  "turn.tool.started",
  z.object({
    turnId,
    callId,
    tool: z.string(),
    /** Index of the execution segment (calls of one group may overlap). */
    group: z.number().int().nonnegative(),
  }),
);

/**
 * The cut of a tool output longer than the runtime's `maxStoredOutputChars`: the log keeps its
 * first `headChars` and its last `output.length - headChars` characters, and the length it had.
 * The kept parts cover what the packetizer shows the model, so packets are computed exactly.
 */
export const StoredCutSchema = z.object({
  /** The output's length (after redaction) before it was cut. */
  originalChars: z.number().int().nonnegative(),
  /** How many characters of `output` are its head; the rest is its tail. */
  headChars: z.number().int().nonnegative(),
}).meta({ id: "StoredCut" });
export type StoredCut = z.infer<typeof StoredCutSchema>;

export const ToolSucceededSchema = event(
  "turn.tool.succeeded",
  z.object({
    turnId,
    callId,
    output: z.string(),
    metadata: z.record(z.string(), z.unknown()).optional(),
    durationMs: z.number().nonnegative(),
    /** Secrets in the output were replaced before it was logged. */
    redacted: z.boolean().optional(),
    /** Present when the output was longer than the runtime stores: `output` is its head and tail. */
    stored: StoredCutSchema.optional(),
  }),
);

export const ToolFailedSchema = event(
  "turn.tool.failed",
  z.object({
    turnId,
    callId,
    code: z.string(),
    message: z.string(),
    durationMs: z.number().nonnegative(),
    /** Secrets in the message were replaced before it was logged. */
    redacted: z.boolean().optional(),
    /**
     * Present when the message was longer than the runtime stores: `message` is its head and tail
     * (cut so that the packet's text, `Error (<code>): <message>`, is computed exactly).
     */
    stored: StoredCutSchema.optional(),
  }),
);

export const ToolInterruptedSchema = event("turn.tool.interrupted", z.object({ turnId, callId }));

export const PacketSchema = z.object({
  callId,
  tool: z.string(),
  ok: z.boolean(),
  /** What the model sees as the tool result. */
  content: z.string(),
  truncated: z.boolean(),
  originalChars: z.number().int().nonnegative(),
  errorCode: z.string().optional(),
}).meta({ id: "Packet" });
export type Packet = z.infer<typeof PacketSchema>;

export const ResultsPacketizedSchema = event("turn.results.packetized", z.object({ turnId, packets: z.array(PacketSchema) }));

export const NativeToolRequestedSchema = event(
  "session.native_tool.requested",
  z.object({
    /** `native-<n>`: host-routed calls are numbered in the session, apart from provider calls. */
    callId,
    tool: z.string(),
    /** The arguments as given, redacted when they held a secret. */
    input: z.unknown(),
    inputRedacted: z.boolean().optional(),
    /** Who asked (the host's user or component). */
    by: z.string(),
    /** A person who approved the call up front, for a gate that would ask. */
    approvedBy: z.string().optional(),
  }),
);

export const NativeToolDecidedSchema = event(
  "session.native_tool.decided",
  z.object({
    callId,
    plan: ToolPlanSchema,
    /** The gate's decision; null when the plan was rejected. */
    decision: GateDecisionRecordSchema.nullable(),
    /** Whether the call runs: allowed, or asked about and approved up front. */
    runs: z.boolean(),
  }),
);

export const NativeToolCompletedSchema = event(
  "session.native_tool.completed",
  z.object({
    callId,
    ok: z.boolean(),
    output: z.string().optional(),
    code: z.string().optional(),
    message: z.string().optional(),
    durationMs: z.number().nonnegative(),
    redacted: z.boolean().optional(),
    /**
     * Present when the output (or, for a failed call, the message) was longer than the runtime
     * stores: it is its head and tail.
     */
    stored: StoredCutSchema.optional(),
  }),
);

export const TurnCompletedSchema = event("turn.completed", z.object({ turnId, text: z.string() }));
export const TurnContinuedSchema = event("turn.continued", z.object({ turnId, reason: z.string() }));
export const TurnStoppedSchema = event("turn.stopped", z.object({ turnId, reason: z.string() }));
/**
 * The host cancelled the turn (its `signal` aborted, or the runtime closed). An input: the
 * machine then owes `stopCancelled`, whose decision `turn.stopped` (reason `cancelled`) ends the
 * turn in the same append.
 */
export const TurnCancelRequestedSchema = event("turn.cancel.requested", z.object({ turnId }));
export const TurnFailedSchema = event(
  "turn.failed",
  z.object({ turnId, reason: z.string(), message: z.string().optional() }),
);

export const HistoryCompactedSchema = event(
  "session.history.compacted",
  z.object({
    /** Units recorded before this stream position are replaced by the summary. */
    beforePosition: z.number().int().positive(),
    summary: z.string(),
    unitsSummarized: z.number().int().nonnegative(),
    /** The compressor that wrote the summary (`deterministic` is recomputed by replay). */
    compressor: z.string().optional(),
  }),
);

export const DiagnosticRecordedSchema = event(
  "session.diagnostic.recorded",
  z.object({
    name: z.enum([
      "structured-tool-history-selected",
      "structured-tool-history-repaired",
      "structured-tool-history-skipped",
      "structured-tool-history-serialized",
    ]),
    counts: z.record(z.string(), z.number().int().nonnegative()),
    reasons: z.array(z.string().regex(/^[a-z_]+$/)),
  }),
);

/** Every event schema, keyed by type, with its kind: input (recorded) or decision (recomputable). */
export const eventCatalogue = {
  "session.started": { schema: SessionStartedSchema, kind: "input", summary: "a session began, with the policy, tools and budgets in force" },
  "session.config.changed": { schema: SessionConfigChangedSchema, kind: "input", summary: "a new provider, policy, tool set or budgets from here on (a session reopened with another provider)" },
  "session.decisions.upgraded": { schema: DecisionsUpgradedSchema, kind: "input", summary: "the host moved the session to a newer decisions version for later decisions" },
  "session.tools.changed": { schema: ToolsChangedSchema, kind: "input", summary: "the tool set offered changed (a tool added or removed, an MCP server's list changed)" },
  "session.environment.observed": { schema: EnvironmentObservedSchema, kind: "input", summary: "what the gate read of the machine (real paths through symlinks), recorded before the decision that read it" },
  "session.user_message.added": { schema: UserMessageAddedSchema, kind: "input", summary: "the user said something" },
  "turn.started": { schema: TurnStartedSchema, kind: "decision", summary: "a provider turn began" },
  "turn.provider.requested": { schema: ProviderRequestedSchema, kind: "decision", summary: "the provider is about to be called (write-ahead)" },
  "turn.provider.responded": { schema: ProviderRespondedSchema, kind: "input", summary: "the provider's finalized response" },
  "turn.provider.failed": { schema: ProviderFailedSchema, kind: "input", summary: "a provider attempt failed" },
  "turn.tool_calls.normalized": { schema: ToolCallsNormalizedSchema, kind: "decision", summary: "the persisted provider tool-call turn with stable call IDs" },
  "turn.tool_calls.planned": { schema: ToolCallsPlannedSchema, kind: "decision", summary: "each call planned against its tool's schema, or rejected as data" },
  "turn.tool_calls.gated": { schema: ToolCallsGatedSchema, kind: "decision", summary: "the gate's decision and deciding rule for each planned call" },
  "turn.approval.granted": { schema: ApprovalGrantedSchema, kind: "input", summary: "a person approved a held call" },
  "turn.approval.denied": { schema: ApprovalDeniedSchema, kind: "input", summary: "a person denied a held call" },
  "turn.tool.started": { schema: ToolStartedSchema, kind: "decision", summary: "a tool is about to run (write-ahead)" },
  "turn.tool.succeeded": { schema: ToolSucceededSchema, kind: "input", summary: "a tool returned" },
  "turn.tool.failed": { schema: ToolFailedSchema, kind: "input", summary: "a tool threw, timed out or returned garbage" },
  "turn.tool.interrupted": { schema: ToolInterruptedSchema, kind: "input", summary: "recovery found a tool that started but never ended" },
  "turn.results.packetized": { schema: ResultsPacketizedSchema, kind: "decision", summary: "the model-visible results, in call order" },
  "turn.completed": { schema: TurnCompletedSchema, kind: "decision", summary: "the model answered without tool calls" },
  "turn.continued": { schema: TurnContinuedSchema, kind: "decision", summary: "another provider turn follows" },
  "turn.stopped": { schema: TurnStoppedSchema, kind: "decision", summary: "the loop stopped (budget, cancel, refusal)" },
  "turn.failed": { schema: TurnFailedSchema, kind: "decision", summary: "the turn could not go on" },
  "turn.cancel.requested": { schema: TurnCancelRequestedSchema, kind: "input", summary: "the host cancelled the turn; a turn.stopped (cancelled) follows in the same append" },
  "session.native_tool.requested": { schema: NativeToolRequestedSchema, kind: "input", summary: "the host asked to run a tool directly (never part of a provider turn)" },
  "session.native_tool.decided": { schema: NativeToolDecidedSchema, kind: "decision", summary: "the plan and gate decision for a host-routed call (write-ahead when it runs)" },
  "session.native_tool.completed": { schema: NativeToolCompletedSchema, kind: "input", summary: "a host-routed call ended" },
  "session.history.compacted": { schema: HistoryCompactedSchema, kind: "decision", summary: "older history units replaced by a summary" },
  "session.diagnostic.recorded": { schema: DiagnosticRecordedSchema, kind: "decision", summary: "counts and reason enums about a history build" },
} as const;

export type TurnlogEventType = keyof typeof eventCatalogue;
export const eventTypes = Object.keys(eventCatalogue) as TurnlogEventType[];

export const TurnlogEventSchema = z.discriminatedUnion("type", [
  SessionStartedSchema,
  SessionConfigChangedSchema,
  DecisionsUpgradedSchema,
  ToolsChangedSchema,
  EnvironmentObservedSchema,
  UserMessageAddedSchema,
  TurnStartedSchema,
  ProviderRequestedSchema,
  ProviderRespondedSchema,
  ProviderFailedSchema,
  ToolCallsNormalizedSchema,
  ToolCallsPlannedSchema,
  ToolCallsGatedSchema,
  ApprovalGrantedSchema,
  ApprovalDeniedSchema,
  ToolStartedSchema,
  ToolSucceededSchema,
  ToolFailedSchema,
  ToolInterruptedSchema,
  ResultsPacketizedSchema,
  TurnCompletedSchema,
  TurnContinuedSchema,
  TurnStoppedSchema,
  TurnFailedSchema,
  TurnCancelRequestedSchema,
  NativeToolRequestedSchema,
  NativeToolDecidedSchema,
  NativeToolCompletedSchema,
  HistoryCompactedSchema,
  DiagnosticRecordedSchema,
]);

/** Any turnlog event: `{ type, data }`, discriminated on `type`. */
export type TurnlogEvent = z.infer<typeof TurnlogEventSchema>;
/** The event of one type. */
export type EventOf<Type extends TurnlogEventType> = Extract<TurnlogEvent, { type: Type }>;
/** The events that belong to one provider turn (they all carry `turnId`). */
export type TurnEvent = Extract<TurnlogEvent, { type: `turn.${string}` }>;

/**
 * Whether an event belongs to one provider turn (its type begins with `turn.`): narrows a typed
 * event — a `TurnlogEvent` or a recorded one — to those, which all carry `data.turnId`.
 *
 * @example
 * if (isTurnEvent(event)) turnsSeen.add(event.data.turnId);
 */
export function isTurnEvent<Event extends { type: string }>(event: Event): event is Extract<Event, { type: `turn.${string}` }> {
  return event.type.startsWith("turn.");
}

export function isDecisionEvent(type: string): boolean {
  return Object.hasOwn(eventCatalogue, type) && eventCatalogue[type as TurnlogEventType].kind === "decision";
}

/** Validates an event against the catalogue; throws a `ZodError` naming the bad field. */
export function parseEvent(value: unknown): TurnlogEvent {
  return TurnlogEventSchema.parse(value);
}
