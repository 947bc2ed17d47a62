/**
 * The page's requests to its server (src/cli/view/view-server.ts): same origin only, the token
 * riding in the HttpOnly cookie the first visit set. An answer to a held call is a POST that also
 * carries the server's CSRF token in a header (read once from `/api/access`). The shapes are the
 * server's own types.
 */
import type { AccessResponse, AnswerRequest, AnswerResponse, ApiError, MachineResponse, PositionState, ReplayResponse, SessionTimeline, SessionsResponse } from "../cli/view/view-api.js";

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

/** `/api/access`, asked once per page: the CSRF token lives as long as the server. */
let access: Promise<AccessResponse> | undefined;
function loadAccess(): Promise<AccessResponse> {
  access ??= getJson<AccessResponse>("/api/access").catch((reason: unknown) => {
    access = undefined;
    throw reason;
  });
  return access;
}

async function postAnswer(sessionId: string, callId: string, decision: "approve" | "deny", body: AnswerRequest): Promise<AnswerResponse> {
  const { csrfToken } = await loadAccess();
  const response = await fetch(`${sessionPath(sessionId)}/calls/${encodeURIComponent(callId)}/${decision}`, {
    method: "POST",
    credentials: "same-origin",
    headers: { Accept: "application/json", "Content-Type": "application/json", "X-Turnlog-CSRF": csrfToken },
    body: JSON.stringify(body),
  });
  if (!response.ok) {
    const failed = (await response.json().catch(() => ({ error: response.statusText }))) as ApiError;
    throw new Error(`${response.status}: ${failed.error}`);
  }
  return (await response.json()) as AnswerResponse;
}

export const api = {
  sessions: () => getJson<SessionsResponse>("/api/sessions"),
  machine: () => getJson<MachineResponse>("/api/machine"),
  timeline: (sessionId: string) => getJson<SessionTimeline>(sessionPath(sessionId)),
  state: (sessionId: string, at: number) => getJson<PositionState>(`${sessionPath(sessionId)}/state?at=${at}`),
  replay: (sessionId: string) => getJson<ReplayResponse>(`${sessionPath(sessionId)}/replay`),
  access: loadAccess,
  approve: (sessionId: string, callId: string, body: AnswerRequest) => postAnswer(sessionId, callId, "approve", body),
  deny: (sessionId: string, callId: string, body: Omit<AnswerRequest, "arguments">) => postAnswer(sessionId, callId, "deny", body),
};

/** The server-sent events of `/api/live`, following `sessionId` from `after` events on when given. */
export function liveUrl(sessionId: string | undefined, after: number): string {
  if (sessionId === undefined) return "/api/live";
  return `/api/live?session=${encodeURIComponent(sessionId)}&after=${after}`;
}
