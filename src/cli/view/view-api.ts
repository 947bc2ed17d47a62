/**
 * The JSON `turnlog view`'s server sends its page: one type per API route. The page (src/view-ui)
 * imports these as types only, so the browser bundle and the server cannot disagree on a shape.
 */
import type { AuditOutcome, AuditRow, ReplayReport, SessionListing, SessionStatus, TurnMachineGraph, TurnPath } from "../../reader/index.js";

/** A call's colour on the timeline: the gate's decision, or `rejected` for a plan rejected before the gate. */
export type CallDecision = "allow" | "ask" | "deny" | "block" | "rejected";

/** One tool call on the timeline. Times are milliseconds since the session's first event (`meta.recordedAt`). */
export interface TimelineCall {
  callId: string;
  tool: string;
  decision: CallDecision;
  /** The rule that decided (or `rejected:<reason>`). */
  rule: string;
  outcome: AuditOutcome;
  /** When the gate decided (or the plan was rejected). */
  decidedMs: number;
  /** A wait for a person: from the gate's question to the answer (`toMs` absent while it waits). */
  wait?: { fromMs: number; toMs?: number; by?: string; granted?: boolean; note?: string };
  /** The tool's run: from `turn.tool.started` to its end (`toMs` absent while it runs). */
  run?: { fromMs: number; toMs?: number; ok?: boolean };
  /** The last moment the call is known at (its end, its answer, or its decision). */
  endMs: number;
  /** Stream position of the last event about the call. */
  position: number;
}

/** One provider attempt of a turn. */
export interface TimelineAttempt {
  attempt: number;
  requestedMs: number;
  /** When it answered or failed (absent while the provider is still being called). */
  endMs?: number;
  failed?: { kind: string; retryable: boolean; message?: string };
}

/**
 * A turn's answer from the provider (its last `turn.provider.responded`): what the model said, the
 * reasoning its echo holds (read by the format's adapter: thinking text, reasoning summaries, a note
 * for encrypted or redacted parts) and the usage. Everything here came from a model: the page shows it as text.
 */
export interface TimelineAnswer {
  /** Stream position of the response. */
  position: number;
  text: string;
  finishReason: string;
  toolCalls: number;
  /** One entry per reasoning part recorded in the answer's echo; empty when it had none (or its echo was dropped). */
  reasoning: string[];
  /** Why an echo the provider sent was not kept (`echo_oversized`, `unsafe_arguments`, `echo_secret`). */
  echoDropped?: string;
  usage?: { inputTokens?: number; outputTokens?: number };
}

/** One turn as a row of the timeline. `turnSeq` 0 and `turnId` "host" hold host-routed calls. */
export interface TimelineTurn {
  turnId: string;
  turnSeq: number;
  iteration: number;
  startMs: number;
  /** When the turn ended (absent while it is open). */
  endMs?: number;
  /** `active` while open; otherwise how it ended. */
  status: "active" | "completed" | "continued" | "stopped" | "failed" | "host";
  /** Why it stopped or failed (`budget:max-iterations`, `cancelled`, …). */
  reason?: string;
  attempts: TimelineAttempt[];
  /** The provider's answer, once one arrived. */
  answer?: TimelineAnswer;
  calls: TimelineCall[];
}

/** `GET /api/sessions/<id>`: everything the session page draws but the state at a position. */
export interface SessionTimeline {
  sessionId: string;
  /** Events in the session's stream. */
  length: number;
  status: SessionStatus;
  /** The first event's `recordedAt`: time zero of the axis. */
  startedAt: string;
  /** From the first event to the last. */
  durationMs: number;
  /** The provider the session calls now: its ID and wire format (`openai-chat`, `anthropic-messages`, `ai-sdk`). */
  provider: { id: string; format: string };
  turns: TimelineTurn[];
  /** Each user message, where the axis marks it. */
  userMessages: { position: number; atMs: number; text: string }[];
  audit: AuditRow[];
  /** How each turn went through the turn machine (`turnPaths`). */
  paths: TurnPath[];
  /** The calls held for a person now (at the session's end): what the Approve / Deny / Edit buttons answer. */
  held: HeldCall[];
}

/** A call held for a person's answer, as the page shows it. Everything here came from a model or a tool: the page shows it as text. */
export interface HeldCall {
  callId: string;
  tool: string;
  turnId: string;
  /** The rule that asked (`ask:…`). */
  rule?: string;
  riskClass?: string;
  /** The arguments as the model wrote them (redacted when they held a secret). */
  argumentsText: string;
  /** The arguments held a secret and `argumentsText` is the redacted form: an edit would start from the redaction, so the page offers none. */
  argumentsRedacted: boolean;
  /** The parsed arguments the gate judged, when they parsed. */
  input?: unknown;
  /** The gate's fingerprint of the call (tool and canonical arguments): the answer names it, so it answers this call as shown and no other. */
  fingerprint?: string;
}

/** `GET /api/sessions/<id>/state?at=N`: the session right after the event at position N (`LogReader.view`). */
export interface PositionState {
  sessionId: string;
  position: number;
  length: number;
  event: { type: string; summary: string; atMs: number; recordedAt: string };
  status: SessionStatus;
  /** The open turn's machine state, or absent between turns. */
  machineState?: string;
  openTurn?: { turnId: string; turnSeq: number };
  messages: number;
  turns: { turnId: string; turnSeq: number; status: string; reason?: string }[];
  calls: { callId: string; tool: string; status: string; decision?: CallDecision }[];
  pendingApprovals: { callId: string; tool: string; rule?: string }[];
  totals: { turns: number; toolCalls: number; inputTokens: number; outputTokens: number };
  lastOutcome: { status: string; reason?: string } | null;
}

/** `GET /api/machine`: the turn machine's graph, read from its definition. */
export type MachineResponse = TurnMachineGraph;

/** `GET /api/sessions`. */
export type SessionsResponse = SessionListing[];

/** `GET /api/sessions/<id>/replay`. */
export type ReplayResponse = ReplayReport;

/** What the server-sent events of `GET /api/live` carry. */
export interface LiveSessionsMessage {
  sessions: SessionListing[];
}

/** `event: session`: the followed session grew to `length` events. */
export interface LiveSessionMessage {
  sessionId: string;
  length: number;
}

/**
 * `GET /api/access`: what the page needs to answer held calls. Only a page of the view's own origin
 * can read it (no CORS header is ever sent), so the CSRF token reaches no other origin.
 */
export interface AccessResponse {
  /** This server's CSRF token: every POST sends it back in the `X-Turnlog-CSRF` header. */
  csrfToken: string;
  /** Whom an answer is recorded as until the person names someone: the operating-system user the view runs as. */
  defaultBy: string;
  /** How answers reach the log, in words (`appended to the PostgreSQL log`, …); absent: this view answers nothing. */
  answers?: string;
}

/** The body of `POST /api/sessions/<id>/calls/<callId>/approve` (or `/deny`, without `arguments`). */
export interface AnswerRequest {
  /** Who answers: recorded in the answer (`turn.approval.granted` / `denied`). */
  by: string;
  note?: string;
  /** The fingerprint of the call as the page showed it (`HeldCall.fingerprint`): the answer is refused if the held call is not that call. */
  fingerprint?: string;
  /** Approve only: the arguments the call is to run with instead of the model's (a JSON object); the gate decides again on them. */
  arguments?: Record<string, unknown>;
}

/** What a recorded answer's POST returns. */
export interface AnswerResponse {
  sessionId: string;
  callId: string;
  granted: boolean;
  by: string;
  /** How the answer was recorded (as `AccessResponse.answers`). */
  recordedBy: string;
}

/** A failed API request's body. */
export interface ApiError {
  error: string;
}
