import { Graph, layout, type EdgeLabel, type GraphLabel, type NodeLabel } from "@dagrejs/dagre";
import { useMemo } from "preact/hooks";
import type { TurnMachineGraph, TurnPath } from "../reader/index.js";

/** Pseudo-states of the drawing: where a turn starts, and "any state" for the machine's root transitions. */
const startNode = "(start)";
const anyNode = "(any state)";

interface DrawnNode {
  name: string;
  x: number;
  y: number;
  width: number;
  height: number;
  kind: "state" | "final" | "start" | "any";
}

interface DrawnEdge {
  key: string;
  from: string;
  to: string;
  /** The events that take it, without the `turn.` prefix (guards in the tooltip). */
  events: string[];
  title: string;
  /** The SVG path of the edge. */
  d: string;
  label: { x: number; y: number; anchor: "middle" | "start" } | undefined;
}

interface Drawing {
  width: number;
  height: number;
  nodes: DrawnNode[];
  edges: DrawnEdge[];
}

const edgeKey = (from: string, to: string) => `${from}→${to}`;

/**
 * Lays the turn machine out with dagre: one node per state (plus the start and "any state"), one
 * edge per pair of states a transition joins, labelled with the events that take it. Computed
 * once per graph; the highlighting of a turn's path is drawn over it.
 */
function layoutMachine(graph: TurnMachineGraph): Drawing {
  const g = new Graph<GraphLabel, NodeLabel, EdgeLabel>();
  g.setGraph({ rankdir: "TB", nodesep: 28, ranksep: 34, edgesep: 12, marginx: 12, marginy: 12 });
  g.setDefaultEdgeLabel(() => ({}));
  const kinds = new Map<string, DrawnNode["kind"]>();
  const addNode = (name: string, kind: DrawnNode["kind"]) => {
    kinds.set(name, kind);
    const width = kind === "start" ? 18 : Math.max(70, name.length * 7.4 + 24);
    g.setNode(name, { width, height: kind === "start" ? 18 : 30 });
  };
  addNode(startNode, "start");
  for (const state of graph.states) addNode(state.name, state.final ? "final" : "state");
  if (graph.transitions.some((transition) => transition.from === null)) addNode(anyNode, "any");

  const edges = new Map<string, { from: string; to: string; events: string[]; titles: string[] }>();
  const addEdge = (from: string, to: string, event: string, title: string) => {
    const key = edgeKey(from, to);
    const edge = edges.get(key) ?? { from, to, events: [], titles: [] };
    const short = event.replace(/^turn\./, "");
    if (short !== "" && !edge.events.includes(short)) edge.events.push(short);
    edge.titles.push(title);
    edges.set(key, edge);
  };
  addEdge(startNode, graph.initial, "", "a turn starts (turn.started)");
  for (const transition of graph.transitions) {
    const from = transition.from ?? anyNode;
    addEdge(from, transition.to, transition.event, `${transition.event}${transition.guard !== undefined ? ` [${transition.guard}]` : ""}${transition.reenter ? " (re-enters)" : ""}`);
  }
  for (const edge of edges.values()) {
    const longest = Math.max(0, ...edge.events.map((event) => event.length));
    g.setEdge(edge.from, edge.to, edge.events.length === 0 ? {} : { width: longest * 6 + 8, height: edge.events.length * 12 + 4, labelpos: "c" });
  }
  layout(g);

  const nodes: DrawnNode[] = g.nodes().map((name) => {
    const node = g.node(name);
    return { name, x: node.x ?? 0, y: node.y ?? 0, width: node.width, height: node.height, kind: kinds.get(name) ?? "state" };
  });
  const drawn: DrawnEdge[] = g.edges().map((ends) => {
    const label = g.edge(ends);
    const edge = edges.get(edgeKey(ends.v, ends.w));
    const common = { key: edgeKey(ends.v, ends.w), from: ends.v, to: ends.w, events: edge?.events ?? [], title: (edge?.titles ?? []).join("\n") };
    if (ends.v === ends.w) {
      // A re-entry (a provider retry): a loop on the node's right side, where dagre left room for it.
      const node = g.node(ends.v);
      const right = (node.x ?? 0) + node.width / 2;
      const y = node.y ?? 0;
      return { ...common, d: `M ${right} ${y - 8} C ${right + 44} ${y - 30}, ${right + 44} ${y + 30}, ${right + 2} ${y + 8}`, label: { x: right + 40, y: y + 4, anchor: "start" } };
    }
    const points = label.points ?? [];
    return {
      ...common,
      d: points.map((point, index) => `${index === 0 ? "M" : "L"} ${point.x.toFixed(1)} ${point.y.toFixed(1)}`).join(" "),
      label: label.x !== undefined && label.y !== undefined && common.events.length > 0 ? { x: label.x, y: label.y, anchor: "middle" } : undefined,
    };
  });
  const size = g.graph();
  return { width: size.width ?? 600, height: size.height ?? 400, nodes, edges: drawn };
}

/**
 * The turn machine's diagram, read from its definition (`/api/machine`) and laid out with dagre,
 * with `path` — the states one turn went through, and the transitions it took — highlighted.
 */
export function MachineDiagram(props: { graph: TurnMachineGraph; path: TurnPath | undefined }) {
  const drawing = useMemo(() => layoutMachine(props.graph), [props.graph]);
  const { path } = props;
  const visited = new Set(path?.states ?? []);
  const taken = new Set<string>();
  const order = new Map<string, number[]>();
  if (path !== undefined) {
    taken.add(edgeKey(startNode, path.states[0] ?? ""));
    path.states.forEach((state, index) => order.set(state, [...(order.get(state) ?? []), index + 1]));
    for (const step of path.steps) {
      taken.add(edgeKey(step.anyState ? anyNode : step.from, step.to));
      if (step.anyState) visited.add(anyNode);
    }
    visited.add(startNode);
  }
  const current = path?.states.at(-1);
  return (
    <figure class="machine" data-turn-id={path?.turnId}>
      <svg viewBox={`0 0 ${drawing.width} ${drawing.height}`} width={drawing.width} height={drawing.height} role="img" aria-label="the provider turn machine">
        <defs>
          <marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse">
            <path d="M 0 0 L 10 5 L 0 10 z" class="arrowhead" />
          </marker>
          <marker id="arrow-taken" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse">
            <path d="M 0 0 L 10 5 L 0 10 z" class="arrowhead taken" />
          </marker>
        </defs>
        {drawing.edges.map((edge) => {
          const isTaken = taken.has(edge.key);
          return (
            <g key={edge.key} class={`edge${isTaken ? " taken" : ""}`} data-edge={edge.key} data-taken={String(isTaken)}>
              <title>{edge.title}</title>
              <path d={edge.d} marker-end={isTaken ? "url(#arrow-taken)" : "url(#arrow)"} />
              {edge.label !== undefined && (
                <text x={edge.label.x} y={edge.label.y - ((edge.events.length - 1) * 12) / 2 + 4} text-anchor={edge.label.anchor}>
                  {edge.events.map((event, index) => (
                    <tspan key={event} x={edge.label?.x} dy={index === 0 ? 0 : 12}>
                      {event}
                    </tspan>
                  ))}
                </text>
              )}
            </g>
          );
        })}
        {drawing.nodes.map((node) => {
          const isState = node.kind === "state" || node.kind === "final";
          const isVisited = isState && visited.has(node.name);
          const classes = ["node", `node-${node.kind}`, isVisited ? "visited" : "", isState && node.name === current ? "current" : ""].filter(Boolean).join(" ");
          return (
            <g key={node.name} class={classes} {...(isState ? { "data-state": node.name, "data-visited": String(isVisited) } : {})}>
              <title>{isState ? `${node.name}${isVisited ? ` — step ${(order.get(node.name) ?? []).join(", ")} of this turn` : ""}` : node.name}</title>
              {node.kind === "start" ? (
                <circle cx={node.x} cy={node.y} r={7} />
              ) : (
                <rect x={node.x - node.width / 2} y={node.y - node.height / 2} width={node.width} height={node.height} rx={node.kind === "any" ? 2 : 8} />
              )}
              {node.kind !== "start" && (
                <text x={node.x} y={node.y + 4} text-anchor="middle">
                  {node.name}
                </text>
              )}
            </g>
          );
        })}
      </svg>
      {path !== undefined && (
        <figcaption>
          <span class="muted">turn {path.turnSeq} went</span>{" "}
          <span data-field="path">{path.states.join(" → ")}</span>
          {!path.done && <span class="muted"> (still open)</span>}
          <ol class="steps">
            {path.steps.map((step) => (
              <li key={step.position}>
                #{step.position} <code>{step.event}</code>: {step.from} → {step.to}
                {step.anyState ? <span class="muted"> (from any state)</span> : null}
                {step.reenter ? <span class="muted"> (re-entered)</span> : null}
              </li>
            ))}
          </ol>
        </figcaption>
      )}
    </figure>
  );
}
