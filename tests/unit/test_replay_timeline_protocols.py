"""A replay's timeline reads every registered protocol's wire summary, not only GD's.

``gapless replay`` of a GES or ZeroMQ counterexample used to stop with an internal error
(``'GesWire' object has no attribute 'retransmission'``): the timeline printer read GD's
``Wire`` fields from every message. Each protocol's short correct run is recorded here and its
timeline built the way a replay builds it; every send must name its message kind."""

from __future__ import annotations

from pathlib import Path

import attrs
import pytest

from gapless.impl.ges.messages import GesWire
from gapless.impl.trace import Wire
from gapless.impl.zmq.messages import ZmqWire
from gapless.models.protocols import protocols
from gapless.spark_fuzz.backend import load_backend
from gapless.spark_fuzz.config import load_config
from gapless.spark_fuzz.runner_backend import _wire


@pytest.mark.parametrize("name", [entry.name for entry in protocols()])
def test_every_protocol_run_gives_a_readable_timeline(name: str, tmp_path: Path) -> None:
    backend = load_backend(name)
    config = load_config(None, {"protocol": name, "duration_s": 1.0, "out": str(tmp_path)})
    spec = backend.make_spec(config)
    outcome = backend.run(spec, backend.generate_schedule(spec, 3), 3, record_trace=True)
    sends = [e for e in outcome.timeline if e["event"] == "send"]
    assert sends, f"{name}: a one-second run sent nothing"
    for entry in sends:
        assert entry["to"], entry
        assert entry["detail"], entry
        assert "object at 0x" not in entry["detail"], entry


def test_a_gd_summary_keeps_its_ranges() -> None:
    line = _wire(Wire(kind="knowledge", pubend="P1", data_ticks=(5,), final_ranges=((0, 4),)))
    assert line == "knowledge pubend=P1 D@5 F[0,4]"


def test_another_protocols_summary_shows_its_own_fields_and_skips_defaults() -> None:
    line = _wire(GesWire(kind="event", storage="n3", epoch=7, dests=("n1", "n2")))
    assert line == "event storage=n3 epoch=7 dests=[n1,n2]"
    many = _wire(ZmqWire(kind="data", origin="pub", seq=4, payload=b"x" * 40))
    assert many.startswith("data origin=pub seq=4 payload=b'")
    assert many.endswith("...'")


def test_a_summary_that_is_not_attrs_is_shown_by_repr() -> None:
    @attrs.define
    class Odd:
        kind: str

    assert _wire(Odd(kind="k")) == "k"
    assert _wire(("plain", 1)) == "('plain', 1)"
