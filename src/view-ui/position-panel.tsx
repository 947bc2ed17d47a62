import { useEffect, useRef, useState } from "preact/hooks";
import type { PositionState } from "../cli/view/view-api.js";
import { api } from "./api.js";
import { formatMs, plural } from "./format.js";

/**
 * A slider over the session's positions (1..length) and the session as it stood right after the
 * event there (`LogReader.view(id, { at })`): status, the open turn's machine state, held calls,
 * every call with its status, messages and totals. At the end it follows new events.
 */
export function PositionPanel(props: { sessionId: string; length: number }) {
  const { sessionId, length } = props;
  const [position, setPosition] = useState(length);
  const [state, setState] = useState<PositionState | undefined>(undefined);
  const [error, setError] = useState<string | undefined>(undefined);
  const lastLength = useRef(length);

  // At the end, stay at the end as the session grows.
  useEffect(() => {
    if (position === lastLength.current || position > length) setPosition(length);
    lastLength.current = length;
  }, [length]);

  useEffect(() => {
    let current = true;
    // A short pause, so that dragging the slider asks only for where it stops.
    const timer = setTimeout(() => {
      api.state(sessionId, position).then(
        (loaded) => {
          if (!current) return;
          setState(loaded);
          setError(undefined);
        },
        (reason: unknown) => current && setError(String(reason)),
      );
    }, 60);
    return () => {
      current = false;
      clearTimeout(timer);
    };
  }, [sessionId, position, length]);

  return (
    <div class="position" data-position={state?.position}>
      <div class="slider">
        <label for="position">position</label>
        <input
          id="position"
          type="range"
          min={1}
          max={length}
          step={1}
          value={position}
          onInput={(event) => setPosition(Number((event.currentTarget as HTMLInputElement).value))}
          data-control="position"
        />
        <output for="position">
          #{position} of {length}
        </output>
      </div>
      {error !== undefined && <p class="error">{error}</p>}
      {state === undefined ? (
        <p class="muted">loading…</p>
      ) : (
        <PositionDetails state={state} />
      )}
    </div>
  );
}

function PositionDetails(props: { state: PositionState }) {
  const { state } = props;
  return (
    <div class="position-details" data-shown-position={state.position}>
      <p class="event-line">
        <span class="muted">#{state.position} · +{formatMs(state.event.atMs)}</span> <code data-field="event-type">{state.event.type}</code> <span class="event-summary">{state.event.summary}</span>
      </p>
      <dl class="facts">
        <dt>status</dt>
        <dd>
          <span class={`status status-${state.status}`} data-field="status">
            {state.status}
          </span>
        </dd>
        <dt>turn machine</dt>
        <dd data-field="machine-state" data-value={state.machineState ?? ""}>
          {state.machineState !== undefined ? `${state.machineState}${state.openTurn !== undefined ? ` (turn ${state.openTurn.turnSeq})` : ""}` : "between turns"}
        </dd>
        <dt>messages</dt>
        <dd data-field="messages">{state.messages}</dd>
        <dt>turns</dt>
        <dd data-field="turns">{state.turns.length}</dd>
        <dt>tool calls</dt>
        <dd data-field="calls">{state.calls.length}</dd>
        <dt>tokens</dt>
        <dd>
          {state.totals.inputTokens} in · {state.totals.outputTokens} out
        </dd>
        <dt>last outcome</dt>
        <dd data-field="outcome">{state.lastOutcome === null ? "—" : `${state.lastOutcome.status}${state.lastOutcome.reason !== undefined ? ` (${state.lastOutcome.reason})` : ""}`}</dd>
      </dl>
      <h3>Held for a person</h3>
      {state.pendingApprovals.length === 0 ? (
        <p class="muted" data-field="pending" data-count="0">
          none
        </p>
      ) : (
        <ul data-field="pending" data-count={state.pendingApprovals.length}>
          {state.pendingApprovals.map((call) => (
            <li key={call.callId} data-call-id={call.callId}>
              {call.tool} <code>{call.callId}</code> {call.rule !== undefined && <span class="muted">({call.rule})</span>}
            </li>
          ))}
        </ul>
      )}
      <h3>Calls ({plural(state.calls.length, "call")})</h3>
      {state.calls.length === 0 ? (
        <p class="muted">none yet</p>
      ) : (
        <table class="calls">
          <thead>
            <tr>
              <th>call</th>
              <th>tool</th>
              <th>decision</th>
              <th>status</th>
            </tr>
          </thead>
          <tbody>
            {state.calls.map((call) => (
              <tr key={call.callId} data-call-id={call.callId} data-status={call.status}>
                <td>
                  <code>{call.callId}</code>
                </td>
                <td>{call.tool}</td>
                <td>{call.decision !== undefined ? <span class={`pill decision-${call.decision}`}>{call.decision}</span> : <span class="muted">—</span>}</td>
                <td>{call.status}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </div>
  );
}
