import { useEffect, useState } from "preact/hooks";
import type { LiveSessionsMessage } from "../cli/view/view-api.js";
import type { SessionListing } from "../reader/index.js";
import { api, liveUrl } from "./api.js";
import { SessionPage } from "./session-page.js";
import { SessionsList } from "./sessions-list.js";

/** Where the page is: `#/` (the sessions) or `#/session/<id>`. */
type Route = { kind: "sessions" } | { kind: "session"; sessionId: string };

function routeOf(hash: string): Route {
  const match = /^#\/session\/(.+)$/.exec(hash);
  if (match === null) return { kind: "sessions" };
  try {
    return { kind: "session", sessionId: decodeURIComponent(match[1] as string) };
  } catch {
    return { kind: "sessions" };
  }
}

/**
 * The whole page: the sessions (kept current by the server's `sessions` events) and, when the
 * location names one, that session.
 */
export function App() {
  const [route, setRoute] = useState<Route>(() => routeOf(location.hash));
  const [sessions, setSessions] = useState<SessionListing[] | undefined>(undefined);
  const [error, setError] = useState<string | undefined>(undefined);
  const [live, setLive] = useState<"connecting" | "live" | "reconnecting">("connecting");

  useEffect(() => {
    const onHash = () => setRoute(routeOf(location.hash));
    addEventListener("hashchange", onHash);
    return () => removeEventListener("hashchange", onHash);
  }, []);

  useEffect(() => {
    api.sessions().then(setSessions, (reason: unknown) => setError(String(reason)));
    // The server tells of every change in the log; EventSource reconnects by itself.
    const source = new EventSource(liveUrl(undefined, 0));
    source.addEventListener("open", () => setLive("live"));
    source.addEventListener("error", () => setLive("reconnecting"));
    source.addEventListener("sessions", (event) => {
      const message = JSON.parse((event as MessageEvent<string>).data) as LiveSessionsMessage;
      setSessions(message.sessions);
    });
    return () => source.close();
  }, []);

  return (
    <div class="page">
      <header class="top">
        <a class="brand" href="#/">
          turnlog view
        </a>
        <span class={`live live-${live}`} data-live={live} title="updates arrive by server-sent events">
          {live === "live" ? "● live" : live === "connecting" ? "○ connecting" : "○ reconnecting"}
        </span>
      </header>
      {error !== undefined && <p class="error">{error}</p>}
      {route.kind === "sessions" ? (
        <main>
          <h1>Sessions</h1>
          <SessionsList sessions={sessions} />
        </main>
      ) : (
        <div class="with-nav">
          <nav class="side">
            <SessionsList sessions={sessions} current={route.sessionId} compact />
          </nav>
          <main>
            <SessionPage key={route.sessionId} sessionId={route.sessionId} listing={sessions?.find((session) => session.id === route.sessionId)} />
          </main>
        </div>
      )}
    </div>
  );
}
