"""A definition drawn as an SVG graph (layered top-down), optionally coloured by one context's progress.

Layers: a node sits one layer below the deepest of its predecessors, following edges found by a
depth-first walk from the nodes nothing points to; an edge back to an earlier layer (a loop) is drawn
as a curve on the right. A context's node states come from its execution's history: the operations the
interpreter names after the node (`node`, `node#2` for a revisit, `node:listen`...), and the context's
open waits.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from html import escape
from typing import Any

from stepwell.features.definitions.mermaid import describe_node
from stepwell.features.definitions.model import Definition

NODE_WIDTH = 250
NODE_HEIGHT = 40
LAYER_GAP = 70
COLUMN_GAP = 30
MARGIN = 20
LABEL_LIMIT = 32
STATE_COLOURS = {
    "succeeded": "#d5f0de",
    "failed": "#f8d3d0",
    "running": "#fdebc8",
    "waiting": "#d6e5f7",
    "pending": "#ffffff",
}


def _layers(definition: Definition) -> tuple[dict[str, int], set[tuple[str, str]]]:
    """Each node's layer, and the back edges (source, target) that close a loop."""
    targets = {edge.target for edge in definition.edges}
    roots = [node_id for node_id in definition.nodes if node_id not in targets] or list(definition.nodes)[:1]
    back: set[tuple[str, str]] = set()
    on_path: set[str] = set()
    seen: set[str] = set()
    order: list[str] = []

    def walk(node_id: str) -> None:
        seen.add(node_id)
        on_path.add(node_id)
        for edge in definition.outgoing.get(node_id, ()):
            if edge.target in on_path:
                back.add((edge.source, edge.target))
            elif edge.target not in seen:
                walk(edge.target)
        on_path.discard(node_id)
        order.append(node_id)

    for root in roots:
        if root not in seen:
            walk(root)
    for node_id in definition.nodes:
        if node_id not in seen:
            walk(node_id)
    layer: dict[str, int] = {}
    for node_id in reversed(order):  # reverse post-order: predecessors first
        incoming = [
            layer[edge.source]
            for edge in definition.edges
            if edge.target == node_id and (edge.source, edge.target) not in back and edge.source in layer
        ]
        layer[node_id] = max(incoming, default=-1) + 1
    return layer, back


def node_states(
    definition: Definition, history: Iterable[Mapping[str, Any]], waiting: Iterable[str] = ()
) -> dict[str, str]:
    """Node id -> succeeded, failed, running or waiting, from a context's execution history."""
    states: dict[str, str] = {}
    for event in history:
        name = str(event.get("Name") or "")
        node_id = name.split(":", 1)[0].split("#", 1)[0]
        if node_id not in definition.nodes:
            continue
        event_type = str(event.get("EventType", ""))
        if event_type.endswith("Started"):
            states.setdefault(node_id, "running")
        elif event_type.endswith("Failed") and not _retried(event):
            states[node_id] = "failed"
        elif event_type.endswith("Succeeded") and states.get(node_id) != "failed":
            states[node_id] = "succeeded"
    for node_id in waiting:
        if node_id in definition.nodes:
            states[node_id] = "waiting"
    return states


def _retried(event: Mapping[str, Any]) -> bool:
    details = event.get(f"{event.get('EventType')}Details")
    retry = details.get("RetryDetails") if isinstance(details, Mapping) else None
    return isinstance(retry, Mapping) and retry.get("NextAttemptDelaySeconds") is not None


def render_svg(definition: Definition, states: Mapping[str, str] | None = None) -> str:
    """The definition's nodes and edges as SVG (every text HTML-escaped)."""
    layer, back = _layers(definition)
    rows: dict[int, list[str]] = {}
    for node_id in definition.nodes:
        rows.setdefault(layer[node_id], []).append(node_id)
    widest = max(len(ids) for ids in rows.values())
    width = 2 * MARGIN + widest * NODE_WIDTH + (widest - 1) * COLUMN_GAP + 80
    height = 2 * MARGIN + len(rows) * NODE_HEIGHT + (len(rows) - 1) * LAYER_GAP
    centre: dict[str, tuple[float, float]] = {}
    for depth, ids in rows.items():
        span = len(ids) * NODE_WIDTH + (len(ids) - 1) * COLUMN_GAP
        left = (width - 80 - span) / 2
        for index, node_id in enumerate(ids):
            x = left + index * (NODE_WIDTH + COLUMN_GAP) + NODE_WIDTH / 2
            centre[node_id] = (x, MARGIN + depth * (NODE_HEIGHT + LAYER_GAP) + NODE_HEIGHT / 2)
    parts = [
        f'<svg class="graph" xmlns="http://www.w3.org/2000/svg" width="{width:.0f}" height="{height}" '
        f'viewBox="0 0 {width:.0f} {height}" role="img" aria-label="definition graph">'
        '<defs><marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" '
        'orient="auto-start-reverse"><path d="M 0 0 L 10 5 L 0 10 z" fill="#555"/></marker></defs>'
    ]
    for edge in definition.edges:
        (x1, y1), (x2, y2) = centre[edge.source], centre[edge.target]
        if (edge.source, edge.target) in back or y2 <= y1:
            bend = max(x1, x2) + NODE_WIDTH / 2 + 40
            path = f"M {x1 + NODE_WIDTH / 2:.1f} {y1:.1f} C {bend:.1f} {y1:.1f}, {bend:.1f} {y2:.1f}, "
            path += f"{x2 + NODE_WIDTH / 2:.1f} {y2:.1f}"
            label_x, label_y = bend - 10, (y1 + y2) / 2
        else:
            path = f"M {x1:.1f} {y1 + NODE_HEIGHT / 2:.1f} L {x2:.1f} {y2 - NODE_HEIGHT / 2:.1f}"
            label_x, label_y = (x1 + x2) / 2 + 4, (y1 + y2) / 2
        parts.append(f'<path class="edge" d="{path}" fill="none" stroke="#555" marker-end="url(#arrow)"/>')
        if edge.branch:
            parts.append(
                f'<text class="edge-label" x="{label_x:.1f}" y="{label_y:.1f}" font-size="11" fill="#555">'
                f"{escape(edge.branch)}</text>"
            )
    for node_id, node in definition.nodes.items():
        x, y = centre[node_id]
        state = (states or {}).get(node_id, "pending")
        label = describe_node(node)
        shown = label if len(label) <= LABEL_LIMIT else label[: LABEL_LIMIT - 1] + "…"
        parts.append(
            f'<g class="node node-{escape(node.type)}" data-node="{escape(node_id)}" data-state="{state}">'
            f'<rect x="{x - NODE_WIDTH / 2:.1f}" y="{y - NODE_HEIGHT / 2:.1f}" width="{NODE_WIDTH}" '
            f'height="{NODE_HEIGHT}" rx="{18 if node.type in ("trigger", "end") else 4}" '
            f'fill="{STATE_COLOURS.get(state, "#ffffff")}" stroke="#4b5d73"/>'
            f'<text x="{x:.1f}" y="{y + 4:.1f}" text-anchor="middle" font-size="12">{escape(shown)}'
            f"<title>{escape(label)} ({escape(state)})</title></text></g>"
        )
    parts.append("</svg>")
    return "".join(parts)
