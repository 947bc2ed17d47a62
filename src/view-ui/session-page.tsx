import { useEffect, useRef, useState } from "preact/hooks";
import type { LiveSessionMessage, MachineResponse, SessionTimeline } from "../cli/view/view-api.js";
import type { SessionListing } from "../reader/index.js";
import { api, liveUrl } from "./api.js";
import { AuditTable } from "./audit-table.js";
import { formatMs, formatTime, plural } from "./format.js";
import { HeldCalls } from "./held-calls.js";
import { MachineDiagram } from "./machine-diagram.js";
import { PositionPanel } from "./position-panel.js";
import { ProviderAnswers } from "./provider-answers.js";
import { ReplayVerdict } from "./replay-verdict.js";
import { TimelineChart } from "./timeline-chart.js";

/**
 * One session: the calls it holds for a person (with Approve / Deny / Edit), its timeline, a turn's path through the turn machine, the state at any position,
 * the audit trail and the replay verdict. New events (the server's `session` events) reload it in
 * place.
 */
export function SessionPage(props: { sessionId: string; listing: SessionListing | undefined }) {
  const { sessionId } = props;
  const [timeline, setTimeline] = useState<SessionTimeline | undefined>(undefined);
  const [error, setError] = useState<string | undefined>(undefined);
  const [version, setVersion] = useState(0);
  const [machine, setMachine] = useState<MachineResponse | undefined>(undefined);
  const [selectedTurn, setSelectedTurn] = useState<string | undefined>(undefined);
  const known = useRef(0);

  useEffect(() => {
    let current = true;
    api.timeline(sessionId).then(
      (loaded) => {
        if (!current) return;
        known.current = loaded.length;
        setTimeline(loaded);
        setError(undefined);
      },
      (reason: unknown) => current && setError(String(reason)),
    );
    return () => {
      current = false;
    };
  }, [sessionId, version]);

  useEffect(() => {
    api.machine().then(setMachine, (reason: unknown) => setError(String(reason)));
  }, []);

  // Follow the session once its first read is in: the server says when it grows past that.
  const loaded = timeline !== undefined;
  useEffect(() => {
    if (!loaded) return undefined;
    const source = new EventSource(liveUrl(sessionId, known.current));
    source.addEventListener("session", (event) => {
      const message = JSON.parse((event as MessageEvent<string>).data) as LiveSessionMessage;
      if (message.sessionId === sessionId && message.length > known.current) setVersion((value) => value + 1);
    });
    return () => source.close();
  }, [sessionId, loaded]);

  // The sessions list also tells of growth (and is all a reconnecting page needs).
  const listed = props.listing?.events;
  useEffect(() => {
    if (listed !== undefined && loaded && listed > known.current) setVersion((value) => value + 1);
  }, [listed, loaded]);

  if (error !== undefined && timeline === undefined) return <p class="error">{error}</p>;
  if (timeline === undefined) return <p class="muted">loading {sessionId}…</p>;

  const turnId = selectedTurn ?? timeline.paths.at(-1)?.turnId;
  const path = timeline.paths.find((candidate) => candidate.turnId === turnId);
  const calls = timeline.audit.length;
  return (
    <div class="session" data-session-id={sessionId} data-length={timeline.length}>
      <h1>{sessionId}</h1>
      <p class="summary">
        <span class={`status status-${timeline.status}`} data-field="session-status">
          {timeline.status}
        </span>{" "}
        · <span data-field="session-provider">{timeline.provider.id} ({timeline.provider.format})</span> · <span data-field="session-length">{plural(timeline.length, "event")}</span> · {plural(timeline.paths.length, "turn")} · {plural(calls, "tool call")} · {formatMs(timeline.durationMs)} from {formatTime(timeline.startedAt)}
      </p>
      {error !== undefined && <p class="error">{error}</p>}

      <section class="held-section">
        <h2>Held calls: answer them</h2>
        <HeldCalls sessionId={sessionId} held={timeline.held} />
      </section>

      <section>
        <h2>Timeline</h2>
        <TimelineChart timeline={timeline} selectedTurn={turnId} onSelectTurn={setSelectedTurn} />
      </section>

      <section>
        <h2>Answers</h2>
        <ProviderAnswers timeline={timeline} />
      </section>

      <section>
        <h2>Turn machine</h2>
        <div class="machine-controls">
          <label>
            turn{" "}
            <select value={turnId ?? ""} onChange={(event) => setSelectedTurn((event.currentTarget as HTMLSelectElement).value)} data-control="turn">
              {timeline.paths.map((candidate) => (
                <option key={candidate.turnId} value={candidate.turnId}>
                  {`turn ${candidate.turnSeq} (${candidate.turnId}) · ${candidate.states.at(-1) ?? ""}`}
                </option>
              ))}
            </select>
          </label>
        </div>
        {machine === undefined ? <p class="muted">loading the machine…</p> : timeline.paths.length === 0 ? <p class="muted">No turn yet.</p> : <MachineDiagram graph={machine} path={path} />}
      </section>

      <section>
        <h2>State at a position</h2>
        <PositionPanel sessionId={sessionId} length={timeline.length} />
      </section>

      <section>
        <h2>Audit</h2>
        <AuditTable rows={timeline.audit} />
      </section>

      <section>
        <h2>Replay</h2>
        <ReplayVerdict sessionId={sessionId} length={timeline.length} />
      </section>
    </div>
  );
}
