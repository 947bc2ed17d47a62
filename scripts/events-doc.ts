import { writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { z } from "zod";
import { eventCatalogue, eventTypes } from "../src/contracts/events.js";

/**
 * Renders docs/events.md from the zod schemas themselves (via zod's own JSON Schema output), so the
 * page cannot drift from the catalogue: a test compares the committed page with this output.
 */
type Schema = {
  type?: string | string[];
  enum?: unknown[];
  const?: unknown;
  properties?: Record<string, Schema>;
  required?: string[];
  items?: Schema;
  anyOf?: Schema[];
  additionalProperties?: Schema | boolean;
  $ref?: string;
  $defs?: Record<string, Schema>;
};

function typeOf(schema: Schema, depth: number): string {
  if (schema.$ref) {
    const name = schema.$ref.split("/").at(-1) ?? "unknown";
    return `[${name}](#${name.toLowerCase()})`;
  }
  if (schema.const !== undefined) return JSON.stringify(schema.const);
  if (schema.enum) return schema.enum.map((value) => JSON.stringify(value)).join(" \\| ");
  if (schema.anyOf) return schema.anyOf.map((option) => typeOf(option, depth)).join(" \\| ");
  if (schema.type === "array") return `${schema.items ? typeOf(schema.items, depth) : "unknown"}[]`;
  if (schema.type === "object" && schema.properties) {
    if (depth > 2) return "object";
    const required = new Set(schema.required ?? []);
    const fields = Object.entries(schema.properties).map(([name, field]) => `${name}${required.has(name) ? "" : "?"}: ${typeOf(field, depth + 1)}`);
    return `{ ${fields.join(", ")} }`;
  }
  if (schema.type === "object") return "object";
  if (Array.isArray(schema.type)) return schema.type.join(" \\| ");
  return schema.type ?? "unknown";
}

/** Code spans cannot hold links, so links stay outside them. */
function cell(text: string): string {
  return text.includes("](") ? text : `\`${text}\``;
}

/** How events are read back (src/core/read-events.ts): written by hand, kept with the generated catalogue. */
const readingEvents = [
  "## Reading events",
  "",
  "The log stores any `RecordedEvent` (its `data` is `unknown`). A session's events become the typed",
  "union `RecordedTurnlogEvent` once, where they are read from a log — `readEvent` / `readEvents` in",
  "src/core/read-events.ts: the reader (`events`, `state`, `stateAt`, `view`, `sessions`, `replay`,",
  "and `fork`'s copied start), a runtime's session store when it loads a session, `followSession` and",
  "`session.events()`, replay's `verifyReplay`, span derivation (`deriveSpans`, `sessionSpans`) and",
  "the CLI's live and followed events. Each event is first upcast to the current schema version",
  "(src/core/upcast.ts), then checked. From there on the fold, the projections, replay, the CLI,",
  "the view and the spans narrow on `event.type` and never cast `event.data`; every `switch` on an",
  "event type ends in `satisfies never`, so a new event type fails to compile until each one says",
  "what it does with it. The events a runtime has just appended are typed without a read",
  "(`appendedEvents`): it built them from the typed union itself.",
  "",
  "An event that is not one of the catalogue — a type it does not have (a log written by a newer",
  "turnlog, or by hand), or data that is not an object — is refused where it is read with",
  "`UnexpectedEventError` (`TURNLOG_UNEXPECTED_EVENT`): its `position` and `type`, `problem` saying",
  "why, `machineState` `\"unread\"`. Every reader refuses it the same way, so a bad event never",
  "surfaces as a crash deep in a projection. `sessions()` lists such a session as `unreadable`.",
  "",
  "**How strict the check is, and why.** Every read checks the *shape*: the type is in the",
  "catalogue and the data is an object. A full zod parse of each event (`readEvent(event,",
  "\"schema\")`) is available for data of unknown origin. It is not the default because the data",
  "it would check has been checked already: the runtime builds every event it appends from the",
  "typed union (and the test suite parses each one against its schema before appending it), a",
  "session's hash chain is checked when the reader reads its events (and by `verify()`), and a full",
  "parse costs about as much as folding the event. Measured with `node --import tsx --expose-gc bench/fold.ts 100000 10 60`",
  "(the fold part of `npm run bench`; 99 971 events of a generated long session, held in memory, on",
  "a shared 2-core machine):",
  "",
  "| per event | µs |",
  "| --- | --- |",
  "| read: upcast + shape check (every read) | 0.18 |",
  "| read: upcast + full schema parse | 7.84 |",
  "| fold, `retain: \"live\"` (replay's fold) | 6.55 |",
  "| fold, full projection | 7.62 |",
  "",
  "A full parse would double the cost of folding a session in memory (and add about a fifth to",
  "folding one streamed from LevelDB, 36 µs per event there); the shape check adds under 3 %.",
  "Reading the recorded data without parsing it also keeps what replay compares exactly what the",
  "log holds: a parse would fill in defaults (an approval's `scope`) that the log never wrote.",
  "",
];

export function renderEventsDoc(): string {
  const lines = [
    "# Events",
    "",
    "<!-- Generated by `npm run docs:events` from src/contracts/events.ts; do not edit by hand. -->",
    "",
    "Every event turnlog writes, in the order a turn produces them. **Input** events record what the",
    "world did (a user, a provider, a tool, a person approving) and are taken as given by replay;",
    "**decision** events record what turnlog decided and are recomputed and compared by replay",
    "(see [replay.md](replay.md) and [design.md](design.md#3-events-and-the-deciders)). Each event is `{ type, data }`; the log adds",
    "`meta` (`eventId`, `stream`, `streamPosition`, `globalPosition`, `recordedAt`, `schemaVersion`,",
    "`prevHash`, `hash`). One session is one stream, `session-<sessionId>`.",
    "",
    "| event | kind | what it records |",
    "| --- | --- | --- |",
    ...eventTypes.map((type) => `| [\`${type}\`](#${type.replace(/\./g, "")}) | ${eventCatalogue[type].kind} | ${eventCatalogue[type].summary} |`),
    "",
    ...readingEvents,
  ];
  const shared = new Map<string, Schema>();
  const fieldTable = (schema: Schema) => {
    const required = new Set(schema.required ?? []);
    const rows = ["| field | type | required |", "| --- | --- | --- |"];
    for (const [name, field] of Object.entries(schema.properties ?? {})) {
      rows.push(`| \`${name}\` | ${cell(typeOf(field, 1))} | ${required.has(name) ? "yes" : "no"} |`);
    }
    return rows;
  };
  for (const type of eventTypes) {
    const entry = eventCatalogue[type];
    const json = z.toJSONSchema(entry.schema.shape.data, { io: "input", unrepresentable: "any" }) as Schema;
    for (const [name, definition] of Object.entries(json.$defs ?? {})) shared.set(name, definition);
    lines.push(`## ${type}`, "", `*${entry.kind}* — ${entry.summary}.`, "", ...fieldTable(json), "");
  }
  lines.push("## Shared types", "");
  for (const [name, definition] of [...shared.entries()].sort(([a], [b]) => a.localeCompare(b))) {
    lines.push(`### ${name}`, "");
    lines.push(...(definition.properties ? fieldTable(definition) : [`One of ${cell(typeOf(definition, 1))}.`]), "");
  }
  return lines.join("\n");
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  writeFileSync(new URL("../docs/events.md", import.meta.url), renderEventsDoc());
  console.log("wrote docs/events.md");
}
