import { readGitLinks, type GitLink } from "../util/git-links.js";
import { resolveRealPath } from "../util/real-path.js";
import { decideAll, decisionsVersionOf, type Decision, type DecisionInputs } from "./decide.js";
import type { DecisionAction } from "./actions.js";
import type { EventOf } from "../contracts/events.js";

/**
 * A decision made live, with what it read of this machine recorded first (decisions version 2
 * on): every path the gate resolved through the live file system for the first time — and from
 * version 5 every git entry it read (`readGitLinks`) — goes into a `session.environment.observed`
 * event ahead of the decision, in the same atomic append, so replay reads the log where the live
 * run read the disk. The resolvers are inputs the caller supplies, like the clock (default: the
 * real file system); the decision stays a pure function of the state it is computed from plus
 * those recorded answers. Replay uses `decideAll`, never this.
 */
export function decideObserving(
  action: DecisionAction,
  inputs: DecisionInputs,
  resolve: (absolute: string) => string = resolveRealPath,
  readLinks: (absolute: string) => GitLink[] = readGitLinks,
): Decision {
  if (decisionsVersionOf(inputs) < 2) return decideAll(action, inputs);
  const observer = environmentObserver(resolve, readLinks);
  const decision = decideAll(action, { ...inputs, ...observer.readers });
  const observed = observer.observed();
  return observed === undefined ? decision : { ...decision, events: [observed, ...decision.events] };
}

/**
 * Wraps the machine's resolvers (those given) so that each path is read once and every answer is
 * kept for the `session.environment.observed` that records it ahead of the decision that read it
 * (a gate decision, an edited approval: docs/policy.md#edit-on-approval).
 *
 * @example
 * const observer = environmentObserver(resolveRealPath, readGitLinks);
 * gateToolCall(plan, tool, policy, gateEnvironment({ state, ...observer.readers }));
 * const event = observer.observed(); // recorded first, in the same append
 */
export function environmentObserver(
  resolve?: (absolute: string) => string,
  readLinks?: (absolute: string) => readonly GitLink[],
): {
  readers: { observeRealPath?: (absolute: string) => string; observeGitLinks?: (absolute: string) => readonly GitLink[] };
  /** The `session.environment.observed` of everything read so far; `undefined` when nothing was. */
  observed(): EventOf<"session.environment.observed"> | undefined;
} {
  const paths = new Map<string, string>();
  const links = new Map<string, readonly GitLink[]>();
  const remembered = <T>(seen: Map<string, T>, read: (absolute: string) => T) => (absolute: string) => {
    if (!seen.has(absolute)) seen.set(absolute, read(absolute));
    return seen.get(absolute) as T;
  };
  return {
    readers: {
      ...(resolve !== undefined ? { observeRealPath: remembered(paths, resolve) } : {}),
      ...(readLinks !== undefined ? { observeGitLinks: remembered(links, readLinks) } : {}),
    },
    observed() {
      if (paths.size === 0 && links.size === 0) return undefined;
      const realPaths = [...paths].map(([path, realPath]) => ({ path, realPath }));
      const gitLinks = [...links].map(([path, read]) => ({ path, links: [...read] }));
      return { type: "session.environment.observed", data: gitLinks.length > 0 ? { realPaths, gitLinks } : { realPaths } };
    },
  };
}
