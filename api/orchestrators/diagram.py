"""Draw a compiled LangGraph graph as a small standalone SVG, with no network and no Graphviz.

Nodes are placed in layers by their longest distance from the start along forward edges; solid arrows are fixed
edges, dashed ones conditional, and loops back (a retry, a next step) curve up the right-hand side.
``python -m api.orchestrators.diagram`` rewrites docs/diagrams/agent_graph.svg, and a test fails when the committed
picture no longer matches the code.
"""

from __future__ import annotations

import sys
from html import escape
from pathlib import Path
from typing import Any

from langgraph.graph.state import CompiledStateGraph

DIAGRAM = Path(__file__).resolve().parents[2] / "docs" / "diagrams" / "agent_graph.svg"
BOX_W, BOX_H, GAP_X, GAP_Y, MARGIN = 150, 36, 30, 56, 20


def render_svg(graph: CompiledStateGraph[Any, Any, Any, Any]) -> str:
    drawable = graph.get_graph()
    nodes = list(drawable.nodes)
    edges = [(e.source, e.target, bool(e.conditional)) for e in drawable.edges]
    back = _back_edges(nodes, edges)
    forward = [(s, t) for s, t, _ in edges if (s, t) not in back and s != t]
    depth = {node: 0 for node in nodes}
    for _ in nodes:  # longest path by relaxation over the forward (acyclic) edges
        for source, target in forward:
            depth[target] = max(depth[target], depth[source] + 1)
    layers: dict[int, list[str]] = {}
    for node in nodes:
        layers.setdefault(depth[node], []).append(node)
    widest = max(len(layer) for layer in layers.values())
    width = MARGIN * 2 + widest * BOX_W + (widest - 1) * GAP_X + (BOX_W if back else 0)  # room for the loops
    height = MARGIN * 2 + len(layers) * BOX_H + (len(layers) - 1) * GAP_Y
    position: dict[str, tuple[float, float]] = {}
    for level, layer in sorted(layers.items()):
        row_width = len(layer) * BOX_W + (len(layer) - 1) * GAP_X
        left = (width - (BOX_W if back else 0) - row_width) / 2
        for i, node in enumerate(sorted(layer)):
            position[node] = (left + i * (BOX_W + GAP_X), MARGIN + level * (BOX_H + GAP_Y))
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0f}" height="{height:.0f}" '
        f'viewBox="0 0 {width:.0f} {height:.0f}" font-family="sans-serif" font-size="13">',
        '<defs><marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" markerHeight="7" '
        'orient="auto-start-reverse"><path d="M 0 0 L 10 5 L 0 10 z" fill="#444"/></marker></defs>',
    ]
    for source, target, conditional in sorted(edges):
        (sx, sy), (tx, ty) = position[source], position[target]
        dash = ' stroke-dasharray="5,4"' if conditional else ""
        if (source, target) in back or source == target:
            bend = min(width - 4, max(sx, tx) + BOX_W + BOX_W * 0.6)
            parts.append(
                f'<path d="M {sx + BOX_W:.0f} {sy + BOX_H / 2:.0f} C {bend:.0f} {sy + BOX_H / 2:.0f} {bend:.0f} '
                f'{ty + BOX_H / 2:.0f} {tx + BOX_W:.0f} {ty + BOX_H / 2 + 6:.0f}" fill="none" stroke="#888"{dash} '
                'marker-end="url(#arrow)"/>'
            )
            continue
        parts.append(
            f'<line x1="{sx + BOX_W / 2:.0f}" y1="{sy + BOX_H:.0f}" x2="{tx + BOX_W / 2:.0f}" y2="{ty:.0f}" '
            f'stroke="#444"{dash} marker-end="url(#arrow)"/>'
        )
    for node in nodes:
        x, y = position[node]
        terminal = node in ("__start__", "__end__")
        fill = "#ffffff" if terminal else "#f2f0ff"
        radius = BOX_H / 2 if terminal else 6
        label = node.strip("_") if terminal else node
        parts.append(
            f'<rect x="{x:.0f}" y="{y:.0f}" width="{BOX_W}" height="{BOX_H}" rx="{radius:.0f}" fill="{fill}" '
            f'stroke="#6a5acd"/><text x="{x + BOX_W / 2:.0f}" y="{y + BOX_H / 2 + 4:.0f}" '
            f'text-anchor="middle">{escape(label)}</text>'
        )
    parts.append("</svg>")
    return "\n".join(parts) + "\n"


def _back_edges(nodes: list[str], edges: list[tuple[str, str, bool]]) -> set[tuple[str, str]]:
    """Edges that close a loop: found by a depth-first walk from the start, in a stable order."""
    children: dict[str, list[str]] = {n: [] for n in nodes}
    for source, target, _ in sorted(edges):
        children[source].append(target)
    back: set[tuple[str, str]] = set()
    state: dict[str, int] = {}  # 1 on the walk's path, 2 done

    def walk(node: str) -> None:
        state[node] = 1
        for child in children[node]:
            if state.get(child) == 1:
                back.add((node, child))
            elif child not in state:
                walk(child)
        state[node] = 2

    for root in ["__start__", *nodes]:
        if root in children and root not in state:
            walk(root)
    return back


def main() -> int:
    from api.orchestrators.query.graph import build_query_graph

    DIAGRAM.parent.mkdir(parents=True, exist_ok=True)
    DIAGRAM.write_text(render_svg(build_query_graph()))
    sys.stdout.write(f"wrote {DIAGRAM}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
