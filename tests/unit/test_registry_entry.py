"""The registry owns what a command needs of a protocol: its trace writer beside its trace
reader, and each scenario's kind of drawing — no command picks either by protocol name."""

from __future__ import annotations

import attrs
import pytest

from gapless.cli.simulate_cmd import PLOT_KINDS
from gapless.impl.errors import ProtocolMisuse
from gapless.models.gd_protocol import ENTRY as GD
from gapless.models.protocols import PROTOCOLS


def test_a_trace_reader_without_a_writer_is_refused() -> None:
    with pytest.raises(ProtocolMisuse, match="needs both trace_check and write_trace"):
        attrs.evolve(GD, write_trace=None)
    with pytest.raises(ProtocolMisuse, match="needs both trace_check and write_trace"):
        attrs.evolve(GD, trace_check=None)


def test_every_protocol_with_trace_files_writes_them_and_every_plot_kind_is_drawn() -> None:
    for entry in PROTOCOLS.values():
        assert (entry.trace_check is None) == (entry.write_trace is None), entry.name
        for sc in entry.scenarios:
            assert sc.plot in PLOT_KINDS, (sc.name, sc.plot)
