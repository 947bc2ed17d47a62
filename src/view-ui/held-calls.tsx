import { useEffect, useState } from "preact/hooks";
import type { AccessResponse, HeldCall } from "../cli/view/view-api.js";
import { api } from "./api.js";

/** Where the page keeps the name the person answers as, so it is asked for once. */
const byKey = "turnlog-view-by";

/** The name kept from an earlier answer, if the browser keeps storage for this origin. */
function keptName(): string | undefined {
  try {
    return localStorage.getItem(byKey) ?? undefined;
  } catch {
    return undefined;
  }
}

function keepName(name: string): void {
  try {
    localStorage.setItem(byKey, name);
  } catch {
    // Storage refused (a private window with storage off): the name lasts as long as the page.
  }
}

/**
 * The edited arguments a person typed, checked as the server will check them: JSON, and a JSON
 * object (a tool's arguments are one). The gate then decides again on them.
 *
 * @example
 * editedArguments('{"version":"v3"}'); // { value: { version: "v3" } }
 * editedArguments("[1]"); // { error: "the arguments are a JSON object: { … }" }
 */
export function editedArguments(text: string): { value: Record<string, unknown> } | { error: string } {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    return { error: `not JSON: ${error instanceof Error ? error.message : String(error)}` };
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) return { error: "the arguments are a JSON object: { … }" };
  return { value: value as Record<string, unknown> };
}

/** The arguments as the page shows them: indented when they parse, as the model wrote them otherwise. */
function shownArguments(call: HeldCall): string {
  if (call.input !== undefined) return JSON.stringify(call.input, null, 2);
  return call.argumentsText;
}

/** An answer the page sent, kept in view after its call leaves the held list. */
interface SentAnswer {
  callId: string;
  tool: string;
  text: string;
  ok: boolean;
}

/**
 * The calls the session holds for a person, each with Approve / Deny / Edit. Every text here came
 * from a model or a log: it is rendered as text (Preact escapes it), never as markup. The answer
 * is a POST the server checks (cookie, Origin, CSRF token); the page then hears of it as of any
 * new event, and the call leaves the list once the log records the answer.
 */
export function HeldCalls(props: { sessionId: string; held: HeldCall[] }) {
  const { sessionId, held } = props;
  const [access, setAccess] = useState<AccessResponse | undefined>(undefined);
  const [accessError, setAccessError] = useState<string | undefined>(undefined);
  const [by, setBy] = useState<string>(() => keptName() ?? "");
  const [sent, setSent] = useState<SentAnswer[]>([]);

  useEffect(() => {
    api.access().then(
      (loaded) => {
        setAccess(loaded);
        setBy((current) => (current === "" ? loaded.defaultBy : current));
      },
      (reason: unknown) => setAccessError(String(reason)),
    );
  }, []);

  const record = (answer: SentAnswer) => setSent((list) => [...list.filter((entry) => entry.callId !== answer.callId), answer]);

  if (held.length === 0 && sent.length === 0) {
    return (
      <p class="muted" data-field="held" data-count="0">
        No call is waiting for a person.
      </p>
    );
  }
  const canAnswer = access?.answers !== undefined;
  return (
    <div class="held" data-field="held" data-count={held.length}>
      {accessError !== undefined && <p class="error">{accessError}</p>}
      {held.length > 0 && (
        <p class="answerer">
          <label>
            answering as{" "}
            <input
              type="text"
              value={by}
              maxLength={200}
              onInput={(event) => {
                const name = (event.currentTarget as HTMLInputElement).value;
                setBy(name);
                keepName(name);
              }}
              data-control="by"
            />
          </label>{" "}
          {access?.answers !== undefined ? <span class="muted">answers are {access.answers}</span> : access !== undefined && <span class="muted">this view is read-only</span>}
        </p>
      )}
      {held.map((call) => (
        <HeldCallCard key={call.callId} sessionId={sessionId} call={call} by={by.trim()} canAnswer={canAnswer} onSent={record} />
      ))}
      {sent.length > 0 && (
        <ul class="sent-answers">
          {sent.map((answer) => (
            <li key={answer.callId} class={answer.ok ? "sent-ok" : "sent-failed"} data-answered-call-id={answer.callId} data-ok={String(answer.ok)}>
              {answer.tool} <code>{answer.callId}</code>: {answer.text}
            </li>
          ))}
        </ul>
      )}
    </div>
  );
}

function HeldCallCard(props: { sessionId: string; call: HeldCall; by: string; canAnswer: boolean; onSent(answer: SentAnswer): void }) {
  const { sessionId, call, by, canAnswer, onSent } = props;
  const [note, setNote] = useState("");
  const [editing, setEditing] = useState(false);
  const [draft, setDraft] = useState(() => shownArguments(call));
  const [busy, setBusy] = useState(false);
  const [failure, setFailure] = useState<string | undefined>(undefined);
  const checked = editing ? editedArguments(draft) : undefined;
  const ready = canAnswer && !busy && by !== "";

  const send = async (decision: "approve" | "deny", edited?: Record<string, unknown>) => {
    setBusy(true);
    setFailure(undefined);
    const base = { by, ...(note.trim() !== "" ? { note } : {}), ...(call.fingerprint !== undefined ? { fingerprint: call.fingerprint } : {}) };
    try {
      if (decision === "approve") await api.approve(sessionId, call.callId, { ...base, ...(edited !== undefined ? { arguments: edited } : {}) });
      else await api.deny(sessionId, call.callId, base);
      const verb = decision === "approve" ? (edited !== undefined ? "approved with edited arguments" : "approved") : "denied";
      onSent({ callId: call.callId, tool: call.tool, text: `${verb} by ${by} — the session's host continues the turn`, ok: true });
    } catch (reason) {
      setFailure(reason instanceof Error ? reason.message : String(reason));
    } finally {
      setBusy(false);
    }
  };

  return (
    <article class="held-call" data-call-id={call.callId} data-tool={call.tool}>
      <header>
        <strong class="tool">{call.tool}</strong> <code>{call.callId}</code>
        {call.rule !== undefined && (
          <>
            {" "}
            <span class="pill decision-ask">{call.rule}</span>
          </>
        )}
        {call.riskClass !== undefined && <span class="muted"> · {call.riskClass}</span>}
      </header>
      {editing ? (
        <div class="edit">
          <label>
            arguments to run with (JSON)
            <textarea rows={Math.min(16, Math.max(3, draft.split("\n").length + 1))} value={draft} spellcheck={false} onInput={(event) => setDraft((event.currentTarget as HTMLTextAreaElement).value)} data-control="arguments" />
          </label>
          {checked !== undefined && "error" in checked && (
            <p class="error" data-field="arguments-error">
              {checked.error}
            </p>
          )}
          <p class="muted">The policy decides again on the edited arguments: an edit can never allow more than the original call.</p>
        </div>
      ) : (
        <pre class="arguments" data-field="arguments">
          {shownArguments(call)}
        </pre>
      )}
      {call.argumentsRedacted && <p class="muted">The arguments held a secret and are shown redacted; they cannot be edited here.</p>}
      <div class="answer-controls">
        <input type="text" placeholder="note (optional)" value={note} maxLength={4000} onInput={(event) => setNote((event.currentTarget as HTMLInputElement).value)} data-control="note" />
        {editing ? (
          <>
            <button type="button" class="approve" disabled={!ready || checked === undefined || "error" in checked} onClick={() => checked !== undefined && "value" in checked && void send("approve", checked.value)} data-action="approve-edited">
              Approve with these arguments
            </button>
            <button type="button" disabled={busy} onClick={() => setEditing(false)} data-action="cancel-edit">
              Cancel
            </button>
          </>
        ) : (
          <>
            <button type="button" class="approve" disabled={!ready} onClick={() => void send("approve")} data-action="approve">
              Approve
            </button>
            <button type="button" class="deny" disabled={!ready} onClick={() => void send("deny")} data-action="deny">
              Deny
            </button>
            <button
              type="button"
              disabled={!ready || call.argumentsRedacted}
              onClick={() => {
                setDraft(shownArguments(call));
                setEditing(true);
              }}
              data-action="edit"
            >
              Edit
            </button>
          </>
        )}
      </div>
      {by === "" && canAnswer && <p class="muted">Name who answers above.</p>}
      {busy && <p class="muted" data-field="answer-state">sending…</p>}
      {failure !== undefined && (
        <p class="error" data-field="answer-error">
          {failure}
        </p>
      )}
    </article>
  );
}
