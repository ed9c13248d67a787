"""Render a definition as a Mermaid flowchart, and as an image when a renderer (`mmdc`) is installed."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path

from stepwell.features.definitions.model import Definition, Node

_SHAPES = {
    "trigger": ("([", "])"),
    "action": ("[", "]"),
    "wait": ("[/", "/]"),
    "trigger_or_timeout": ("{{", "}}"),
    "condition": ("{", "}"),
    "parallel": ("[[", "]]"),
    "join": ("[[", "]]"),
    "end": ("((", "))"),
}


def _escape(text: str) -> str:
    return text.replace('"', "#quot;").replace("\n", " ")


def _label(node: Node) -> str:
    return _escape(describe_node(node))


def describe_node(node: Node) -> str:
    """`id: what it does`, the text a node is drawn with (here and in the console's graphs)."""
    if node.type == "trigger":
        detail = f"on {node.event}"
    elif node.type == "action":
        detail = f"{node.action}"
    elif node.type == "wait":
        detail = (
            f"wait {node.raw.get('duration')}"
            if node.duration is not None
            else f"until {node.raw.get('until')}"
        )
    elif node.type == "trigger_or_timeout":
        detail = f"{node.event} or {node.raw.get('timeout')}"
    elif node.type == "condition":
        detail = str(node.raw.get("expression"))
    elif node.type == "join":
        detail = f"join {node.mode}" + (f" {node.n}" if node.n else "")
    else:
        detail = node.type
    return f"{node.id}: {detail}"


def to_mermaid(definition: Definition) -> str:
    ids = {node_id: _stable_id(index) for index, node_id in enumerate(definition.nodes)}
    lines = ["flowchart TD"]
    for node_id, node in definition.nodes.items():
        left, right = _SHAPES[node.type]
        lines.append(f'    {ids[node_id]}{left}"{_label(node)}"{right}')
    for edge in definition.edges:
        arrow = f'-- "{_escape(edge.branch)}" -->' if edge.branch else "-->"
        lines.append(f"    {ids[edge.source]} {arrow} {ids[edge.target]}")
    return "\n".join(lines) + "\n"


def _stable_id(index: int) -> str:
    return f"n{index}"


def render_image(mermaid: str, output: Path, renderer: str = "mmdc") -> Path:
    """Render with `mmdc` (format from the output's suffix: .svg, .png, .pdf). RuntimeError when the
    renderer is missing or fails."""
    executable = shutil.which(renderer)
    if executable is None:
        raise RuntimeError(
            f"no Mermaid renderer {renderer!r} on PATH; install @mermaid-js/mermaid-cli (npm) or use the text"
        )
    if output.suffix not in (".svg", ".png", ".pdf"):
        raise ValueError(f"image output {str(output)!r} must end in .svg, .png or .pdf")
    with tempfile.TemporaryDirectory() as tmp:
        source = Path(tmp) / "graph.mmd"
        source.write_text(mermaid, encoding="utf-8")
        result = subprocess.run(
            [executable, "-i", str(source), "-o", str(output)], capture_output=True, text=True, timeout=120
        )
    if result.returncode != 0:
        raise RuntimeError(f"{renderer} failed ({result.returncode}): {result.stderr.strip()[:500]}")
    return output
