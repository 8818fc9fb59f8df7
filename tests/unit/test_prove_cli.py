"""``gapless prove``: table, ``--json`` shape, exit codes."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from gapless.cli.main import cli

pytestmark = pytest.mark.proofs


def test_json_shape_and_exit_0() -> None:
    result = CliRunner().invoke(cli, ["prove", "--json"])
    assert result.exit_code == 0, result.output
    rows = json.loads(result.output)
    assert isinstance(rows, list)
    assert len(rows) >= 30
    for row in rows:
        assert set(row) == {"obligation", "kind", "status", "seconds", "witness"}
        assert row["kind"] in ("law", "fact", "inductive", "twin")
        assert row["status"] in ("proved", "refuted", "unknown")
        assert isinstance(row["seconds"], float)
        assert row["seconds"] >= 0
        assert (row["witness"] is None) == (row["status"] == "proved")
    laws = [r for r in rows if r["kind"] == "law"]
    assert len(laws) >= 15
    assert all(r["status"] == "proved" for r in laws)
    facts = {r["obligation"]: r for r in rows if r["kind"] == "fact"}
    assert facts["knowledge_distributive"]["status"] == "refuted"
    assert facts["knowledge_distributive"]["witness"]


def test_table_output_exit_0() -> None:
    result = CliRunner().invoke(cli, ["prove"])
    assert result.exit_code == 0, result.output
    assert "k_join_is_least" in result.output
    assert "knowledge_distributive" in result.output
    assert "laws proved" in result.output


@pytest.mark.parametrize("variant", ["broken-merge"])  # the others: tests/proofs
def test_broken_variant_exits_1(variant: str) -> None:
    result = CliRunner().invoke(cli, ["prove", "--json", "--variant", variant])
    assert result.exit_code == 1
    rows = json.loads(result.output)
    assert any(r["kind"] == "law" and r["status"] == "refuted" for r in rows)


def test_unknown_variant_exits_2() -> None:
    result = CliRunner().invoke(cli, ["prove", "--variant", "nope"])
    assert result.exit_code == 2
    assert "allowed" in result.output
