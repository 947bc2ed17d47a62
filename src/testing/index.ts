/** Test helpers: `import { scriptedProvider, given } from "turnlog/testing"`. */
export { MemoryEventLog } from "../log/memory-event-log.js";
export { scriptedProvider } from "../providers/scripted-provider.js";
export type { ScriptedProvider, ScriptStep } from "../providers/scripted-provider.js";
export { given, recordForTest } from "./given-when-then.js";
export type { CommandExpectation, EventExpectation, ThenExpectation } from "./given-when-then.js";
export { SessionFold } from "../core/session-fold.js";
export { UnexpectedEventError } from "../errors/unexpected-event-error.js";
