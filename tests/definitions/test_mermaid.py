from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from stepwell.features.definitions.mermaid import render_image, to_mermaid
from stepwell.features.definitions.validation import parse_definition

from .test_validation import base


def test_every_node_and_edge_is_drawn() -> None:
    text = to_mermaid(parse_definition(base()))
    lines = text.splitlines()
    assert lines[0] == "flowchart TD"
    assert '    n0(["start: on signed_up"])' in lines
    assert '    n2{"check: data.age > 18"}' in lines
    assert '    n4{{"act: activated or 3d"}}' in lines
    assert '    n8[["both: join all"]]' in lines
    assert '    n2 -- "true" --> n3' in lines
    assert sum(1 for line in lines if "-->" in line) == len(base()["edges"])


def test_quotes_in_labels_are_escaped() -> None:
    document = base()
    document["nodes"][2]["expression"] = 'data.name == "x"'
    text = to_mermaid(parse_definition(document))
    assert "data.name == #quot;x#quot;" in text


def test_image_needs_a_renderer(tmp_path: Path) -> None:
    if shutil.which("mmdc"):
        out = render_image("flowchart TD\n  a --> b\n", tmp_path / "g.svg")
        assert out.read_text().lstrip().startswith("<svg")
    else:
        with pytest.raises(RuntimeError, match="no Mermaid renderer 'mmdc' on PATH"):
            render_image("flowchart TD\n  a --> b\n", tmp_path / "g.svg")
    with pytest.raises((ValueError, RuntimeError)):
        render_image("flowchart TD\n", tmp_path / "g.txt")
