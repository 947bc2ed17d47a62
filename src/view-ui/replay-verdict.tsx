import { useEffect, useState } from "preact/hooks";
import type { ReplayResponse } from "../cli/view/view-api.js";
import { api } from "./api.js";
import { plural } from "./format.js";

const short = (value: unknown) => {
  const text = JSON.stringify(value) ?? String(value);
  return text.length > 120 ? `${text.slice(0, 119)}…` : text;
};

/**
 * The replay verdict (`LogReader.replay`): every decision recomputed from the log and compared —
 * identical, or each divergence with what the log holds and what the code computes now.
 */
export function ReplayVerdict(props: { sessionId: string; length: number }) {
  const { sessionId, length } = props;
  const [report, setReport] = useState<ReplayResponse | undefined>(undefined);
  const [error, setError] = useState<string | undefined>(undefined);
  useEffect(() => {
    let current = true;
    api.replay(sessionId).then(
      (loaded) => {
        if (!current) return;
        setReport(loaded);
        setError(undefined);
      },
      (reason: unknown) => current && setError(String(reason)),
    );
    return () => {
      current = false;
    };
  }, [sessionId, length]);
  if (error !== undefined) return <p class="error">{error}</p>;
  if (report === undefined) return <p class="muted">replaying…</p>;
  return (
    <div class="replay" data-identical={String(report.identical)}>
      <p>
        <span class={`verdict ${report.identical ? "identical" : "diverged"}`} data-field="verdict">
          {report.identical ? "identical" : "diverged"}
        </span>{" "}
        {plural(report.compared, "decision")} recomputed, {plural(report.divergences.length, "divergence")}
      </p>
      {report.toolsFromLog.length > 0 && (
        <p class="muted">
          Tools replayed from their recorded definitions (the host's code is not here): {report.toolsFromLog.join(", ")}.
        </p>
      )}
      {report.divergences.length > 0 && (
        <table class="divergences">
          <thead>
            <tr>
              <th class="number">#</th>
              <th>event</th>
              <th>where</th>
              <th>the log holds</th>
              <th>the code computes</th>
            </tr>
          </thead>
          <tbody>
            {report.divergences.map((divergence) => (
              <tr key={`${divergence.position}:${divergence.path}`}>
                <td class="number">{divergence.position}</td>
                <td>
                  <code>{divergence.type}</code>
                </td>
                <td>
                  <code>{divergence.path}</code>
                </td>
                <td>
                  <code>{short(divergence.expected)}</code>
                </td>
                <td>
                  <code>{short(divergence.actual)}</code>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {report.unverifiable.length > 0 && (
        <ul class="muted">
          {report.unverifiable.map((entry) => (
            <li key={`${entry.position}:${entry.callId}`}>
              #{entry.position} {entry.type} {entry.callId}: not verifiable ({entry.reason})
            </li>
          ))}
        </ul>
      )}
    </div>
  );
}
