import { useState } from "preact/hooks";
import type { AuditRow } from "../reader/index.js";
import type { CallDecision } from "../cli/view/view-api.js";
import { formatMs } from "./format.js";

const decisionOf = (row: AuditRow): CallDecision => row.decision ?? "rejected";

/** The audit trail (`LogReader.audit`): one row per call, filtered by decision, tool and outcome. */
export function AuditTable(props: { rows: AuditRow[] }) {
  const { rows } = props;
  const [decision, setDecision] = useState("");
  const [tool, setTool] = useState("");
  const [outcome, setOutcome] = useState("");
  const tools = [...new Set(rows.map((row) => row.tool))].sort();
  const decisions = [...new Set(rows.map(decisionOf))];
  const outcomes = [...new Set(rows.map((row) => row.outcome))];
  const shown = rows.filter((row) => (decision === "" || decisionOf(row) === decision) && (tool === "" || row.tool === tool) && (outcome === "" || row.outcome === outcome));
  const select = (name: string, value: string, options: string[], set: (value: string) => void) => (
    <label>
      {name}{" "}
      <select value={value} onChange={(event) => set((event.currentTarget as HTMLSelectElement).value)} data-filter={name}>
        <option value="">all</option>
        {options.map((option) => (
          <option key={option} value={option}>
            {option}
          </option>
        ))}
      </select>
    </label>
  );
  return (
    <div class="audit">
      <div class="filters">
        {select("decision", decision, decisions, setDecision)}
        {select("tool", tool, tools, setTool)}
        {select("outcome", outcome, outcomes, setOutcome)}
        <span class="muted" data-field="audit-count">
          {shown.length} of {rows.length} calls
        </span>
      </div>
      <table class="audit-rows">
        <thead>
          <tr>
            <th>turn</th>
            <th>call</th>
            <th>tool</th>
            <th>risk</th>
            <th>decision</th>
            <th>rule</th>
            <th>approval</th>
            <th>outcome</th>
            <th class="number">duration</th>
            <th class="number">#</th>
          </tr>
        </thead>
        <tbody>
          {shown.map((row) => (
            <tr key={row.callId} data-call-id={row.callId} data-decision={decisionOf(row)} data-outcome={row.outcome}>
              <td>{row.turn ?? "host"}</td>
              <td>
                <code>{row.callId}</code>
              </td>
              <td>{row.tool}</td>
              <td>{row.riskClass ?? "—"}</td>
              <td>
                <span class={`pill decision-${decisionOf(row)}`}>{decisionOf(row)}</span>
              </td>
              <td>
                <code>{row.rule}</code>
              </td>
              <td>
                {row.approval !== undefined ? `${row.approval.granted ? "approved" : "denied"} by ${row.approval.by}${row.approval.note !== undefined ? ` — "${row.approval.note}"` : ""}` : row.approvedBy !== undefined ? `approved by ${row.approvedBy}` : "—"}
                {row.edited !== undefined && (
                  <details class="edited" data-edited="true">
                    <summary>with edited arguments</summary>
                    proposed <code>{JSON.stringify(row.edited.proposed)}</code>
                    <br />
                    ran <code>{JSON.stringify(row.edited.ran)}</code>
                  </details>
                )}
              </td>
              <td>
                {row.outcome}
                {row.errorCode !== undefined && <span class="muted"> ({row.errorCode})</span>}
              </td>
              <td class="number">{row.durationMs !== undefined ? formatMs(row.durationMs) : "—"}</td>
              <td class="number">{row.position}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
