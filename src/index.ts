/**
 * turnlog: an event-sourced runtime for the tool path of an LLM agent. Public names only; the
 * list is a contract (docs/design.md#12-the-public-surface).
 */
export { createRuntime } from "./runtime/create-runtime.js";
export type { AutoResumeOptions, OpenSessionOptions, Runtime, RuntimeOptions } from "./runtime/create-runtime.js";
export type { ResumeAllOptions, ResumeAllReport, ResumeAllSkipReason } from "./runtime/resume-all.js";
export { defaultProviderRetry } from "./runtime/provider-retry.js";
export type { ProviderRetryOptions } from "./runtime/provider-retry.js";
// A host gets sessions from `runtime.openSession`; the loop, the tool runner and the host-tool
// executor inside them are built by the runtime only. The engine is `turnlog/core`.
export type { ApprovalAnswer, Session, WaitForAnswersOptions } from "./runtime/session.js";
export { AgentLoopBuilder } from "./runtime/agent-loop-builder.js";
export type { HostToolOptions, HostToolResult } from "./runtime/host-tool-executor.js";
export type { DeltaContext, DiscardedAttempt, SendOutcome } from "./runtime/provider-turn-loop.js";
export type { PendingApproval } from "./core/held-calls.js";
// What `createRuntime({ tracer })` takes, structurally: the spans themselves are `turnlog/otel`.
export type { OtelTracer } from "./otel/otel-tracer.js";

export { defineTool } from "./tools/define-tool.js";
export type { NeedsApprovalContext, ToolContext, ToolDefinition, ToolOptions, ToolResult } from "./tools/define-tool.js";
export { registrationPhases, ToolRegistry } from "./tools/tool-registry.js";
export type { ProviderToolSchema } from "./contracts/tools.js";
export type { RegistrationPhase, ToolProvider, ToolRegistrationContext } from "./tools/tool-registry.js";
export { stableToolCallId } from "./tools/stable-tool-call-id.js";
export { planToolCalls } from "./tools/tool-call-planner.js";
export { workspaceTools } from "./tools/workspace/workspace-tools.js";
export { bubblewrapSandbox, defaultHiddenHomePaths, defaultReadableHomePaths, defaultSandboxEnv } from "./tools/workspace/command-sandbox.js";
export { defaultSandboxLimits } from "./tools/workspace/sandbox-limits.js";
export type { BubblewrapOptions, CommandSandbox, SandboxReport, SandboxRequest, WrappedCommand } from "./tools/workspace/command-sandbox.js";
export type { ExceededLimit, SandboxLimits } from "./tools/workspace/sandbox-limits.js";
export type { WorkspaceToolsOptions } from "./tools/workspace/workspace-tools.js";
export { jsonSchemaInput } from "./tools/json-schema-input.js";
export { connectMcpServer, connectMcpServers } from "./tools/mcp/mcp-tools.js";
export type { McpHttpServerConfig, McpServerConfig, McpServerConnection, McpStdioServerConfig } from "./tools/mcp/mcp-tools.js";
export { mcpRiskClass } from "./tools/mcp/mcp-risk.js";
export type { McpToolHints } from "./tools/mcp/mcp-risk.js";
export { mcpToolName } from "./tools/mcp/mcp-tool-name.js";
export { mcpToolResult } from "./tools/mcp/mcp-tool-result.js";
export { gateToolCall } from "./policy/gate.js";
export type { GatedTool, GateEnvironment } from "./policy/gate.js";
export { classifyCommand } from "./policy/command-safety/command-safety.js";
export type { CommandVerdict } from "./policy/command-safety/catalogue.js";
export { containsSecret, createSecretRedactor, findSecrets, redactJsonText, redactText, redactValue } from "./policy/secrets/secret-detector.js";
export type { SecretFinding, SecretKind, SecretRedactor } from "./policy/secrets/secret-detector.js";
export { callFingerprint } from "./policy/fingerprint.js";

export { MemoryEventLog } from "./log/memory-event-log.js";
export { LevelEventLog } from "./log/level/level-event-log.js";
export { PostgresEventLog } from "./log/postgres/postgres-event-log.js";
export type { PostgresEventLogOptions } from "./log/postgres/postgres-event-log.js";
export type { PostgresPool, PostgresQueryResult } from "./log/postgres/postgres-pool.js";
export { migratePostgres } from "./log/postgres/postgres-migrations.js";
export type { MigrationReport } from "./log/postgres/postgres-migrations.js";
export type { LogLocation } from "./log/log-location.js";
export { followStream } from "./log/follow-stream.js";
export type { SnapshotStore } from "./log/snapshot-store.js";
export type { FollowStreamOptions } from "./log/follow-stream.js";
export type {
  AppendOptions,
  AppendResult,
  Clock,
  EventLog,
  EventToAppend,
  IdSource,
  LogLease,
  ReadAllOptions,
  ReadStreamOptions,
  RecordedEvent,
  RecordedEventMeta,
  RecordedTurnlogEvent,
  SessionLeases,
  VerifyReport,
} from "./log/event-log.js";

export { StreamSealer } from "./log/seal/stream-sealer.js";
export type { SealOptions } from "./log/seal/stream-sealer.js";
export { userSeals } from "./log/seal/user-seals.js";
export { generateSealKey, loadOrCreateSealKey, loadSealKey, sealKeyFromPem, sealKeyId } from "./log/seal/seal-key.js";
export type { SealKey } from "./log/seal/seal-key.js";
export { SealWitness } from "./log/seal/seal-witness.js";
export type { SealWitnessStore, WitnessedSeal } from "./log/seal/seal-witness.js";
export { DirectoryWitness } from "./log/seal/directory-witness.js";
export { HttpWitness } from "./log/seal/http-witness.js";
export { witnessAt } from "./log/seal/witness-address.js";
export { SealedLogRecord } from "./log/seal/sealed-log-record.js";
export type { SealedLogEntry } from "./log/seal/sealed-log-record.js";
export { isSealStream, sealEventType, sealSignatureValid, sealStreamOf } from "./log/seal/seal-record.js";
export type { Seal, SealStatement } from "./log/seal/seal-record.js";
export { verifySealedLog } from "./log/seal/seal-verifier.js";
export type { SealedVerifyReport, SealFault, SealFaultKind, SealVerifyOptions, UnsealedTail } from "./log/seal/seal-verifier.js";
export { defaultRunLogDirectory, sealKeyDirectory, turnlogStateDirectory } from "./util/state-directories.js";

export {
  ExpectedVersionConflictError,
  NO_CONCURRENCY_CHECK,
  STREAM_DOES_NOT_EXIST,
  STREAM_EXISTS,
} from "./errors/expected-version-conflict-error.js";
export type { ExpectedStreamVersion } from "./errors/expected-version-conflict-error.js";
export { TurnlogError } from "./errors/turnlog-error.js";
export { errorCodes } from "./errors/error-codes.js";
export type { ErrorActor, ErrorCode, ErrorCodeInfo } from "./errors/error-codes.js";
export { LogLockedError } from "./errors/log-locked-error.js";
export { OwnerChannelError } from "./errors/owner-channel-error.js";
export { LogClosedError } from "./errors/log-closed-error.js";
export { LogNotFoundError } from "./errors/log-not-found-error.js";
export { ConfigError } from "./errors/config-error.js";
export { LogCorruptedError } from "./errors/log-corrupted-error.js";
export { LogWriteError } from "./errors/log-write-error.js";
export { LogFormatError } from "./errors/log-format-error.js";
export { SealFileError } from "./errors/seal-file-error.js";
export { UnexpectedEventError } from "./errors/unexpected-event-error.js";
export { PositionOutOfRangeError } from "./errors/position-out-of-range-error.js";
export { McpServerError } from "./errors/mcp-server-error.js";
export { SessionStateError } from "./errors/session-state-error.js";
export { SessionBusyError } from "./errors/session-busy-error.js";
export { RuntimeClosedError } from "./errors/runtime-closed-error.js";
export { EventRefusedError } from "./errors/event-refused-error.js";
export { LogStalledError } from "./errors/log-stalled-error.js";
export { LogUnavailableError } from "./errors/log-unavailable-error.js";
export type { LogUnavailableKind } from "./errors/log-unavailable-error.js";
export { UnknownSessionError } from "./errors/unknown-session-error.js";
export { ProviderError } from "./errors/provider-error.js";
export { createOpenAiChatFinalizer, finalizeOpenAiChatChunks } from "./providers/openai-chat/openai-chat-finalizer.js";
export { createAnthropicMessagesFinalizer, finalizeAnthropicMessagesEvents } from "./providers/anthropic-messages/anthropic-messages-finalizer.js";
export { asProviderError, unwrapFinalization } from "./providers/stream-finalization.js";
export type { FinalizationResult } from "./providers/stream-finalization.js";
export type { FinalizedResponse, FinalizedToolCall, Provider, ProviderRequest } from "./providers/provider.js";
export { openAiChatProvider } from "./providers/openai-chat/openai-chat-provider.js";
export type { OpenAiChatProviderOptions } from "./providers/openai-chat/openai-chat-provider.js";
export { anthropicMessagesProvider } from "./providers/anthropic-messages/anthropic-messages-provider.js";
export type { AnthropicMessagesProviderOptions } from "./providers/anthropic-messages/anthropic-messages-provider.js";

export { buildNativeHistory } from "./providers/format-history.js";
export type { NativeHistoryOptions } from "./providers/format-history.js";
export type { NativeHistory } from "./history/native-history.js";
export { deterministicCompressor, precomputedCompressor } from "./history/history-compressor.js";
export type { HistoryCompressor } from "./history/history-compressor.js";
export { defaultTokenEstimator } from "./history/token-estimator.js";
export type { TokenEstimator } from "./history/token-estimator.js";
export type { HistoryDiagnostic } from "./history/history-diagnostics.js";
export { sessionStateProjection } from "./projections/session-state.js";
export type { CallState, SessionMessage, SessionState, TurnState } from "./projections/session-state.js";
export { auditDecisions, auditOutcomes, auditRows } from "./projections/audit.js";
export type { AuditOutcome, AuditRow } from "./projections/audit.js";
export type { Divergence, HostRuleTaken, ReplayReport, Unverifiable } from "./replay/replay-verifier.js";
export type { DecisionAndRule, DecisionChange } from "./replay/what-if.js";
export { currentSchemaVersion, upcastEvent } from "./core/upcast.js";
export { followSession } from "./reader/follow-session.js";
export type { FollowSessionOptions } from "./reader/follow-session.js";
export { readEvent, readEvents } from "./core/read-events.js";
export type { EventCheck } from "./core/read-events.js";
export { decisionsVersions, latestDecisionsVersion, resolveDecisionsVersion } from "./core/decision-versions.js";
export { approvalDeadlines, expiredApprovals } from "./core/approval-deadlines.js";
export type { ApprovalDeadline } from "./core/approval-deadlines.js";
export type { DecisionsVersion } from "./core/decision-versions.js";
export { SnapshotCache } from "./replay/snapshot-cache.js";
export type { SnapshotCacheOptions } from "./replay/snapshot-cache.js";
export { forkSession } from "./replay/fork.js";
export type { ForkResult } from "./replay/fork.js";
export { sessionStream } from "./core/session-stream.js";

export { answerHeldCall, createLogReader, openLog } from "./reader/index.js";
export type {
  AnswerHeldCallOptions,
  ApproveAnswer,
  DenyAnswer,
  HeldCallAnswer,
  LogReader,
  LogReaderOptions,
  OpenLogOptions,
  ReaderReplayOptions,
  RecordedAnswer,
  ReaderVerifyOptions,
  SessionEventsOptions,
  SessionHistoryView,
  SessionListing,
  SessionStatus,
  SessionView,
} from "./reader/index.js";

export { eventCatalogue, eventTypes, parseEvent, TurnlogEventSchema } from "./contracts/events.js";
export type { EventOf, GateDecisionRecord, NormalizedCall, Packet, ToolPlan, TurnlogEvent, TurnlogEventType } from "./contracts/events.js";
export { defaultBudgets } from "./contracts/budgets.js";
export type { Budgets } from "./contracts/budgets.js";
export type { ApprovalMode, GateDecision, PolicyInput, PolicyRule, PolicySnapshot } from "./contracts/policy.js";
export { riskClasses } from "./contracts/risk.js";
export type { RiskClass } from "./contracts/risk.js";
export type { ToolSnapshot } from "./contracts/tools.js";
export type { FinishReason, ProviderFormat } from "./contracts/provider.js";
