import { z } from "zod";
import type { EventLog } from "../../log/event-log.js";
import type { SealOptions } from "../../log/seal/stream-sealer.js";
import { answerHeldCall, createLogReader, type LogReader } from "../../reader/index.js";
import { isRecord } from "../../util/json-value.js";
import type { AnswerRequest } from "./view-api.js";

/** A person's answer to a held call, as the view's server passes it on. */
export interface ViewAnswer {
  granted: boolean;
  by: string;
  note?: string;
  /** The fingerprint of the call the person saw: the log refuses the answer when the held call differs. */
  fingerprint?: string;
  /** Approve only: the edited arguments (a JSON object). */
  arguments?: Record<string, unknown>;
}

/**
 * How `turnlog view` records an answer: the backend's own way for a process that does not own the
 * session (docs/embedding.md, "Answering from anywhere"). It throws what the log throws: an
 * unknown session, a call that is not held (answered already, or never asked), a refused edit.
 */
export interface ViewAnswers {
  /** In words, for the page and the server's first lines: how an answer reaches the log. */
  readonly description: string;
  answer(sessionId: string, callId: string, answer: ViewAnswer): Promise<void>;
}

/** The longest `by` and `note` the view accepts: a name and a sentence or a paragraph, not a document. */
const maxByLength = 200;
const maxNoteLength = 4_000;

/** Control characters (C0, DEL, C1) and the bidi controls: no name or note needs them, and a terminal printing one later would obey it. */
const controls = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/;

const answerBody = z.strictObject({
  by: z
    .string()
    .trim()
    .min(1, "by: who answers — a name")
    .max(maxByLength, `by: at most ${maxByLength} characters`)
    .refine((value) => !controls.test(value), "by: no control characters"),
  note: z
    .string()
    .max(maxNoteLength, `note: at most ${maxNoteLength} characters`)
    .refine((value) => !controls.test(value), "note: no control characters other than line breaks and tabs")
    .optional(),
  fingerprint: z.string().min(1).max(200, "fingerprint: at most 200 characters").optional(),
  // Checked, not rebuilt: a record schema would copy the object key by key, and a `__proto__` key of
  // the person's JSON would then set a prototype instead of staying an argument.
  arguments: z.custom<Record<string, unknown>>(isRecord, { error: "arguments: a JSON object" }).optional(),
});

/**
 * The answer a POST body asks for, or the one-line reason it is not one: a JSON object with `by`
 * (a name), an optional `note` and, to approve only, optional `arguments` (a JSON object). Unknown
 * fields are refused, so a misspelt `arguments` never approves the model's original ones.
 *
 * @example
 * answerFromBody({ by: "ana", note: "ok" }, true); // { answer: { granted: true, by: "ana", note: "ok" } }
 * answerFromBody({ by: "ana", arguments: {} }, false); // { error: "arguments: only an approval may edit the call" }
 */
export function answerFromBody(body: unknown, granted: boolean): { answer: ViewAnswer } | { error: string } {
  const parsed = answerBody.safeParse(body);
  if (!parsed.success) return { error: parsed.error.issues.map((issue) => (issue.code === "unrecognized_keys" ? `unknown field ${issue.keys.join(", ")}` : issue.message)).join("; ") };
  const { by, note, fingerprint, arguments: edited } = parsed.data satisfies AnswerRequest;
  if (!granted && edited !== undefined) return { error: "arguments: only an approval may edit the call" };
  return {
    answer: {
      granted,
      by,
      ...(note !== undefined && note.trim() !== "" ? { note } : {}),
      ...(fingerprint !== undefined ? { fingerprint } : {}),
      ...(edited !== undefined ? { arguments: edited } : {}),
    },
  };
}

/** Records `answer` with a reader's checked append (`LogReader.approve` / `deny`). */
function recordWith(reader: LogReader, sessionId: string, callId: string, answer: ViewAnswer): Promise<unknown> {
  const { by, note, fingerprint } = answer;
  const common = { by, ...(note !== undefined ? { note } : {}), ...(fingerprint !== undefined ? { fingerprint } : {}) };
  if (answer.granted) return reader.approve(sessionId, callId, { ...common, ...(answer.arguments !== undefined ? { arguments: answer.arguments } : {}) });
  return reader.deny(sessionId, callId, common);
}

/**
 * The seals an answer is recorded with, asked for at the first answer (a view that answers nothing
 * touches no key): the user's, as `turnlog approve` seals what it appends.
 */
export type AnswerSeals = () => Promise<SealOptions>;

/**
 * Answers on a PostgreSQL log the view has open: appended directly, as any process may append to a
 * shared log, and sealed with `seals`; the host that parked the session hears of it
 * (LISTEN/NOTIFY) and continues.
 *
 * @example
 * startViewServer({ source: postgresViewSource(log), assets, answers: postgresAnswers(log, () => userSeals(location)) });
 */
export function postgresAnswers(log: EventLog, seals: AnswerSeals): ViewAnswers {
  let reader: Promise<LogReader> | undefined;
  return {
    description: "appended to the PostgreSQL log",
    async answer(sessionId, callId, answer) {
      reader ??= seals().then(
        (loaded) => createLogReader(log, { seals: loaded }),
        (error: unknown) => {
          reader = undefined;
          throw error;
        },
      );
      await recordWith(await reader, sessionId, callId, answer);
    },
  };
}

/**
 * Answers on a LevelDB log directory, where one process at a time holds the log: the answer goes
 * to the process that holds it, through its owner channel, and that process records it with its
 * own checked append and seals (`answerHeldCall`); when no process holds the log, the log is opened
 * for the one append (sealed with `seals`) and closed. Nothing writes the log behind its owner's back.
 *
 * @example
 * startViewServer({ source: await directoryViewSource(dir), assets, answers: directoryAnswers(dir, () => userSeals(dir)) });
 */
export function directoryAnswers(directory: string, seals: AnswerSeals): ViewAnswers {
  let loaded: Promise<SealOptions> | undefined;
  return {
    description: "recorded by the process that holds the log, or appended when none does",
    async answer(sessionId, callId, answer) {
      const { granted, by, note, fingerprint } = answer;
      const common = { by, ...(note !== undefined ? { note } : {}), ...(fingerprint !== undefined ? { fingerprint } : {}) };
      await answerHeldCall(
        { dir: directory },
        sessionId,
        callId,
        granted ? { decision: "approve", ...common, ...(answer.arguments !== undefined ? { arguments: answer.arguments } : {}) } : { decision: "deny", ...common },
        {
          seals: await (loaded ??= seals().catch((error: unknown) => {
            loaded = undefined;
            throw error;
          })),
        },
      );
    },
  };
}
