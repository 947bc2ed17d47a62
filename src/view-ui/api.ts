/**
 * The page's requests to its server (src/cli/view/view-server.ts): same origin only, the token
 * riding in the HttpOnly cookie the first visit set. The shapes are the server's own types.
 */
import type { ApiError, MachineResponse, PositionState, ReplayResponse, SessionTimeline, SessionsResponse } from "../cli/view/view-api.js";

async function getJson<T>(path: string): Promise<T> {
  const response = await fetch(path, { headers: { Accept: "application/json" }, credentials: "same-origin" });
  if (!response.ok) {
    const body = (await response.json().catch(() => ({ error: response.statusText }))) as ApiError;
    // The server's one-line reason, shown where the data would have been.
    throw new Error(`${response.status}: ${body.error}`);
  }
  return (await response.json()) as T;
}

const sessionPath = (sessionId: string) => `/api/sessions/${encodeURIComponent(sessionId)}`;

export const api = {
  sessions: () => getJson<SessionsResponse>("/api/sessions"),
  machine: () => getJson<MachineResponse>("/api/machine"),
  timeline: (sessionId: string) => getJson<SessionTimeline>(sessionPath(sessionId)),
  state: (sessionId: string, at: number) => getJson<PositionState>(`${sessionPath(sessionId)}/state?at=${at}`),
  replay: (sessionId: string) => getJson<ReplayResponse>(`${sessionPath(sessionId)}/replay`),
};

/** The server-sent events of `/api/live`, following `sessionId` from `after` events on when given. */
export function liveUrl(sessionId: string | undefined, after: number): string {
  if (sessionId === undefined) return "/api/live";
  return `/api/live?session=${encodeURIComponent(sessionId)}&after=${after}`;
}
