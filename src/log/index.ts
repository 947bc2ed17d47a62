/**
 * The event log: the interface every backend implements, the memory and LevelDB backends, and
 * the hash chain that makes a log tamper-evident.
 */
export type {
  AppendOptions,
  AppendResult,
  Clock,
  EventLog,
  EventToAppend,
  IdSource,
  JsonValue,
  ReadAllOptions,
  ReadStreamOptions,
  RecordedEvent,
  RecordedEventMeta,
  SubscribeOptions,
  VerifyReport,
} from "./event-log.js";
export { MemoryEventLog } from "./memory-event-log.js";
export type { MemoryEventLogOptions, MemoryEventLogStorage } from "./memory-event-log.js";
export { LevelEventLog } from "./level-event-log.js";
export type { LevelEventLogOptions } from "./level-event-log.js";
export { ChainVerifier, EMPTY_STREAM_HEAD, computeEventHash, verifyChain } from "./hash-chain.js";
export type { ChainFaultKind, ChainVerification, StoredChainEntry, StreamHead, UnhashedEvent } from "./hash-chain.js";
export type { ListenerErrorHandler } from "./subscriber-registry.js";
