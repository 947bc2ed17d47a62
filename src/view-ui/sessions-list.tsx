import type { SessionListing } from "../reader/index.js";
import { formatTime } from "./format.js";

/** The log's sessions: ID (a link to its page), events, last activity and status. */
export function SessionsList(props: { sessions: SessionListing[] | undefined; current?: string; compact?: boolean }) {
  const { sessions, current, compact } = props;
  if (sessions === undefined) return <p class="muted">loading sessions…</p>;
  if (sessions.length === 0) return <p class="muted">No sessions in this log yet — "npx turnlog demo" records one.</p>;
  // Newest activity first: the session just running is on top.
  const rows = [...sessions].reverse();
  if (compact) {
    return (
      <ul class="session-nav" data-sessions>
        {rows.map((session) => (
          <li key={session.id} class={session.id === current ? "current" : undefined} data-session-id={session.id} data-events={session.events}>
            <a href={`#/session/${encodeURIComponent(session.id)}`}>{session.id}</a>
            <span class="nav-meta">
              <span class={`status status-${session.status}`}>{session.status}</span> · {session.events} events
            </span>
          </li>
        ))}
      </ul>
    );
  }
  return (
    <table class="sessions" data-sessions>
      <thead>
        <tr>
          <th>session</th>
          <th class="number">events</th>
          <th>last activity</th>
          <th>status</th>
        </tr>
      </thead>
      <tbody>
        {rows.map((session) => (
          <tr key={session.id} data-session-id={session.id} data-events={session.events}>
            <td>
              <a href={`#/session/${encodeURIComponent(session.id)}`}>{session.id}</a>
            </td>
            <td class="number">{session.events}</td>
            <td>{formatTime(session.lastRecordedAt)}</td>
            <td>
              <span class={`status status-${session.status}`}>{session.status}</span>
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}
