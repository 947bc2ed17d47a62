import { readGitLinks, type GitLink } from "../util/git-links.js";
import { resolveRealPath } from "../util/real-path.js";
import { decideAll, decisionsVersionOf, type Decision, type DecisionInputs } from "./decide.js";
import type { DecisionAction } from "./actions.js";

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
  const observed = new Map<string, string>();
  const observeRealPath = (absolute: string) => {
    let real = observed.get(absolute);
    if (real === undefined) {
      real = resolve(absolute);
      observed.set(absolute, real);
    }
    return real;
  };
  const linksObserved = new Map<string, GitLink[]>();
  const observeGitLinks = (absolute: string) => {
    let links = linksObserved.get(absolute);
    if (links === undefined) {
      links = readLinks(absolute);
      linksObserved.set(absolute, links);
    }
    return links;
  };
  const decision = decideAll(action, { ...inputs, observeRealPath, observeGitLinks });
  if (observed.size === 0 && linksObserved.size === 0) return decision;
  const realPaths = [...observed].map(([path, realPath]) => ({ path, realPath }));
  const gitLinks = [...linksObserved].map(([path, links]) => ({ path, links }));
  const data = gitLinks.length > 0 ? { realPaths, gitLinks } : { realPaths };
  return { ...decision, events: [{ type: "session.environment.observed", data }, ...decision.events] };
}
