import type { SessionTimeline } from "../cli/view/view-api.js";
import { plural } from "./format.js";

/**
 * Each turn's answer from the provider, in turn order: its finish reason, calls and usage, the
 * reasoning the format's echo holds (thinking text, reasoning summaries, a note for an encrypted or
 * redacted part) and what the model said. All of it came from a model: rendered as text (Preact
 * escapes it), never as markup.
 */
export function ProviderAnswers(props: { timeline: SessionTimeline }) {
  const answered = props.timeline.turns.flatMap((turn) => (turn.answer !== undefined ? [{ turn, answer: turn.answer }] : []));
  if (answered.length === 0) return <p class="muted">No answer yet.</p>;
  return (
    <ol class="provider-answers">
      {answered.map(({ turn, answer }) => (
        <li key={turn.turnId} class="provider-answer" data-answer-turn={turn.turnId} data-finish-reason={answer.finishReason}>
          <div class="answer-head">
            <strong>turn {turn.turnSeq}</strong> <code>{answer.finishReason}</code> · {plural(answer.toolCalls, "tool call")}
            {answer.usage !== undefined && ` · ${answer.usage.inputTokens ?? 0}→${answer.usage.outputTokens ?? 0} tokens`} <span class="muted">#{answer.position}</span>
          </div>
          {answer.reasoning.length > 0 && (
            <ul class="reasoning" data-field="reasoning" title="the reasoning recorded with this answer">
              {answer.reasoning.map((text, index) => (
                <li key={index}>{text}</li>
              ))}
            </ul>
          )}
          {answer.echoDropped !== undefined && (
            <p class="muted" data-field="echo-dropped">
              reasoning not kept: {answer.echoDropped}
            </p>
          )}
          {answer.text !== "" && (
            <p class="answer-text" data-field="answer-text">
              {answer.text}
            </p>
          )}
        </li>
      ))}
    </ol>
  );
}
