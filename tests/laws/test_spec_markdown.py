"""spec/lattices.md holds exactly the generated diagrams and tables: it cannot go stale."""

from __future__ import annotations

from pathlib import Path

import pytest

from gapless.spec import lattices as sp

MD = Path(__file__).resolve().parents[2] / "spec" / "lattices.md"


def test_markdown_blocks_are_current() -> None:
    text = MD.read_text(encoding="utf-8")
    assert sp.update_blocks(text) == text, (
        "spec/lattices.md is stale: run python -m gapless.spec.lattices spec/lattices.md"
    )


def test_every_block_is_present_and_non_empty() -> None:
    text = MD.read_text(encoding="utf-8")
    for name, body in sp.generated_blocks().items():
        assert body.strip()
        assert f"<!-- BEGIN generated: {name} -->\n{body}\n<!-- END generated: {name} -->" in text


def test_hasse_diagram_is_generated_from_the_edges() -> None:
    diagram = sp.generated_blocks()["knowledge-hasse"]
    assert diagram.count(" --> ") == len(sp.KNOWLEDGE_COVERS)
    assert "    Q --> L" in diagram


def test_stale_or_unknown_blocks_are_refused() -> None:
    with pytest.raises(ValueError, match="exactly once"):
        sp.update_blocks("no blocks here")
    good = sp.update_blocks(MD.read_text(encoding="utf-8"))
    with pytest.raises(ValueError, match="unknown generated block"):
        sp.update_blocks(good + "\n<!-- BEGIN generated: nope -->\n")
    stale = good.replace("| Q | Q | L |", "| Q | Q | Q |", 1)
    assert stale != good
    assert sp.update_blocks(stale) == good
