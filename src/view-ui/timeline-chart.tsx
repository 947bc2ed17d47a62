import type { CallDecision, SessionTimeline, TimelineCall, TimelineTurn } from "../cli/view/view-api.js";
import { formatMs } from "./format.js";

/** The colours of the timeline, in legend order, with what each means. */
const decisions: readonly { decision: CallDecision; meaning: string }[] = [
  { decision: "allow", meaning: "allowed by the gate" },
  { decision: "ask", meaning: "held for a person" },
  { decision: "deny", meaning: "denied by policy" },
  { decision: "block", meaning: "blocked (hard rule)" },
  { decision: "rejected", meaning: "plan rejected before the gate" },
];

/** Share of the axis, as a CSS percentage (set through the CSSOM: the page's CSP allows no inline style attribute). */
function at(ms: number, total: number): string {
  return `${Math.min(100, Math.max(0, (ms / total) * 100)).toFixed(3)}%`;
}

function span(from: number, to: number, total: number): { left: string; width: string } {
  return { left: at(from, total), width: `${Math.max(0, ((to - from) / total) * 100).toFixed(3)}%` };
}

/**
 * The session on a time axis (milliseconds since its first event): one row per turn, with its
 * provider attempts (a failed one marked: a retry), how it ended (a budget stop with its reason),
 * and one lane per tool call coloured by the gate's decision, with the wait for a person (held →
 * answered, by whom) and the tool's run drawn over it. Every call of the audit has its bar.
 */
export function TimelineChart(props: { timeline: SessionTimeline; selectedTurn: string | undefined; onSelectTurn(turnId: string): void }) {
  const { timeline } = props;
  const total = Math.max(1, timeline.durationMs);
  const ticks = [0, 0.25, 0.5, 0.75, 1].map((share) => share * total);
  return (
    <div class="timeline" data-duration-ms={timeline.durationMs}>
      <Legend />
      <div class="timeline-grid">
        <div class="row axis-row">
          <div class="row-label muted">ms since start</div>
          <div class="track axis">
            {ticks.map((ms) => (
              <span key={ms} class="tick" style={{ left: at(ms, total) }}>
                {formatMs(ms)}
              </span>
            ))}
          </div>
        </div>
        {timeline.userMessages.length > 0 && (
          <div class="row">
            <div class="row-label muted">user messages</div>
            <div class="track lane">
              {timeline.userMessages.map((message) => (
                <span key={message.position} class="user-message" style={{ left: at(message.atMs, total) }} title={`#${message.position} · ${message.text}`}>
                  ✉
                </span>
              ))}
            </div>
          </div>
        )}
        {timeline.turns.map((turn) => (
          <TurnRow key={turn.turnId} turn={turn} total={total} durationMs={timeline.durationMs} selected={turn.turnId === props.selectedTurn} onSelect={() => props.onSelectTurn(turn.turnId)} />
        ))}
      </div>
    </div>
  );
}

function Legend() {
  return (
    <ul class="legend" aria-label="legend">
      {decisions.map(({ decision, meaning }) => (
        <li key={decision}>
          <span class={`swatch call decision-${decision}`} /> {decision} <span class="muted">({meaning})</span>
        </li>
      ))}
      <li>
        <span class="swatch wait" /> waiting for a person
      </li>
      <li>
        <span class="swatch run" /> tool running
      </li>
      <li>
        <span class="mark retry">↻</span> provider attempt failed (retry)
      </li>
      <li>
        <span class="mark stop">■</span> turn stopped (budget, cancel, refusal)
      </li>
    </ul>
  );
}

function TurnRow(props: { turn: TimelineTurn; total: number; durationMs: number; selected: boolean; onSelect(): void }) {
  const { turn, total } = props;
  const host = turn.status === "host";
  const end = turn.endMs ?? props.durationMs;
  return (
    <div class={`row turn-row${props.selected ? " selected" : ""}`} data-turn-id={turn.turnId} data-turn-status={turn.status}>
      <div class="row-label">
        {host ? (
          <span>host calls</span>
        ) : (
          <button type="button" class="link" onClick={props.onSelect} title="show this turn's path through the turn machine">
            turn {turn.turnSeq}
          </button>
        )}{" "}
        <span class={`turn-status turn-${turn.status}`}>{host ? "" : turn.status}</span>
        {turn.reason !== undefined && <div class="reason">{turn.reason}</div>}
      </div>
      <div class="track">
        {!host && (
          <div class="lane turn-lane">
            <span class="turn-span" style={span(turn.startMs, end, total)} title={`turn ${turn.turnSeq}: ${formatMs(turn.startMs)} → ${turn.endMs === undefined ? "open" : formatMs(turn.endMs)}`} />
            {turn.attempts.map((attempt) =>
              attempt.failed !== undefined ? (
                <span
                  key={attempt.attempt}
                  class="mark retry"
                  data-attempt={attempt.attempt}
                  style={{ left: at(attempt.endMs ?? attempt.requestedMs, total) }}
                  title={`attempt ${attempt.attempt} failed: ${attempt.failed.kind}${attempt.failed.retryable ? " (retryable)" : ""}${attempt.failed.message !== undefined ? ` — ${attempt.failed.message}` : ""}`}
                >
                  ↻
                </span>
              ) : (
                <span key={attempt.attempt} class="attempt" style={{ left: at(attempt.requestedMs, total) }} title={`provider attempt ${attempt.attempt}`} />
              ),
            )}
            {turn.status === "stopped" && <EndMark kind="stop" symbol="■" text={turn.reason ?? "stopped"} ms={end} total={total} />}
            {turn.status === "failed" && <EndMark kind="failed" symbol="✕" text={`failed${turn.reason !== undefined ? `: ${turn.reason}` : ""}`} ms={end} total={total} />}
          </div>
        )}
        {turn.calls.map((call) => (
          <CallLane key={call.callId} call={call} total={total} />
        ))}
      </div>
    </div>
  );
}

/** How a turn ended, marked where it ended (the reason is in the mark's tooltip and the row's label). */
function EndMark(props: { kind: "stop" | "failed"; symbol: string; text: string; ms: number; total: number }) {
  return (
    <span class={`mark ${props.kind}`} data-end-mark={props.kind} data-reason={props.text} style={{ left: at(props.ms, props.total) }} title={props.text}>
      {props.symbol}
    </span>
  );
}

/** A call's label goes after its bar, or before it when the bar ends in the right part of the axis. */
function labelPlace(call: TimelineCall, total: number): { left: string } | { right: string } {
  if (call.endMs / total <= 0.6) return { left: `calc(${at(call.endMs, total)} + 14px)` };
  return { right: `calc(${(100 - (call.decidedMs / total) * 100).toFixed(3)}% + 6px)` };
}

function CallLane(props: { call: TimelineCall; total: number }) {
  const { call, total } = props;
  const wait = call.wait;
  const run = call.run;
  const answer = wait?.toMs === undefined ? "waiting for an answer" : `${wait.granted === true ? "approved" : "denied"} by ${wait.by ?? "?"}`;
  const title = [
    `${call.tool} ${call.callId}`,
    `decision: ${call.decision} (${call.rule})`,
    wait !== undefined ? `held ${formatMs((wait.toMs ?? call.endMs) - wait.fromMs)}: ${answer}${wait.note !== undefined ? ` — "${wait.note}"` : ""}` : undefined,
    run !== undefined ? `ran ${run.toMs === undefined ? "(still running)" : formatMs(run.toMs - run.fromMs)}` : undefined,
    `outcome: ${call.outcome}`,
  ]
    .filter((line) => line !== undefined)
    .join("\n");
  return (
    <div class="lane call-lane">
      <span class={`call decision-${call.decision}`} data-call-id={call.callId} data-decision={call.decision} data-outcome={call.outcome} style={span(call.decidedMs, call.endMs, total)} title={title} />
      {wait !== undefined && <span class="wait" data-wait-for={call.callId} style={span(wait.fromMs, wait.toMs ?? call.endMs, total)} title={title} />}
      {run !== undefined && <span class="run" style={span(run.fromMs, run.toMs ?? call.endMs, total)} title={title} />}
      <span class="call-label" style={labelPlace(call, total)}>
        {call.tool} <span class="muted">{call.outcome}</span>
        {wait !== undefined && <span class={`answer ${wait.granted === false ? "denied" : ""}`}> · {call.outcome === "denied" && wait.granted === false ? `by ${wait.by ?? "?"}` : answer}</span>}
      </span>
    </div>
  );
}
