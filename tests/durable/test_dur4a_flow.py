"""Flow control of the SHB's nacks [DUR §4.1]: the constream asks for the next window as soon
as an answer lands (driven by answers, so by capacity, not by the timer alone), and a catchup
stream never has more than its ``catchup_window`` matched ticks asked beyond its position."""

from __future__ import annotations

import pytest

from gapless.impl.durable.catchup import catchup_step
from gapless.impl.durable.pfs import PfsStream
from gapless.impl.durable.shb import ShbConfig, on_knowledge, shb_start
from gapless.impl.effects import Send
from gapless.impl.errors import ProtocolMisuse
from gapless.impl.filters import parse_filter
from gapless.impl.gd.messages import Data, Knowledge, Nack
from gapless.impl.streams import KnowledgeStream


def _nacks(fx: tuple[object, ...]) -> list[tuple[int, int]]:
    return [(e.msg.start, e.msg.end) for e in fx if type(e) is Send and type(e.msg) is Nack]


def _with_hole() -> object:
    """An SHB at latestDelivered 4 that has heard of tick 100: ticks 5..99 are a hole."""
    shb = shb_start(ShbConfig(shb="shb1", upstream="ib", pubends=("p",), window=10))
    shb, _ = on_knowledge(shb, Knowledge(pubend="p", silence=((0, 4),)), 0)
    shb, fx = on_knowledge(shb, Knowledge(pubend="p", data=Data(pubend="p", tick=100)), 0)
    assert shb.latest_delivered("p") == 4
    assert _nacks(fx) == []  # first-time knowledge: the timer asks, not this
    return shb


def test_an_answer_that_moves_latest_delivered_asks_for_the_next_window_at_once() -> None:
    shb = _with_hole()
    answer = Knowledge(pubend="p", silence=((5, 14),), retransmission=True)
    shb, fx = on_knowledge(shb, answer, 1)  # type: ignore[arg-type]
    assert shb.latest_delivered("p") == 14
    assert _nacks(fx) == [(15, 24)]  # the window: 10 ticks
    shb, fx = on_knowledge(shb, Knowledge(pubend="p", silence=((15, 99),), retransmission=True), 2)
    assert shb.latest_delivered("p") == 100
    assert _nacks(fx) == []  # no hole left


def test_answers_that_do_not_move_latest_delivered_ask_nothing() -> None:
    shb = _with_hole()
    # above the hole's start: latestDelivered cannot move, so no new window
    above = Knowledge(pubend="p", silence=((50, 60),), retransmission=True)
    shb2, fx = on_knowledge(shb, above, 1)  # type: ignore[arg-type]
    assert shb2.latest_delivered("p") == 4
    assert _nacks(fx) == []
    # a data answer (no silence: the answer's last message is its silence) asks nothing
    data = Knowledge(pubend="p", data=Data(pubend="p", tick=5), retransmission=True)
    shb3, fx = on_knowledge(shb, data, 1)  # type: ignore[arg-type]
    assert shb3.latest_delivered("p") == 5
    assert _nacks(fx) == []


def _pfs_with(matches: range, number: int = 0) -> PfsStream:
    pfs = PfsStream.empty("p")
    for t in matches:
        pfs, _ = pfs.write(t, (number,))
    pfs, _ = pfs.write(matches[-1] + 1, ())
    return pfs


@pytest.mark.parametrize("window", [1, 4, 64])
def test_a_catchup_stream_asks_at_most_its_window_beyond_its_position(window: int) -> None:
    """The SHB holds none of the 200 matched ticks (no event cache): the stream asks for the
    first ``window`` of them, and asks nothing more while they are outstanding."""
    pfs = _pfs_with(range(0, 400, 2))
    args = {
        "pubend": "p",
        "subscriber": 0,
        "flt": parse_filter("true"),
        "position": -1,
        "latest_delivered": 400,
        "knowledge": KnowledgeStream(),
        "pfs": pfs,
        "window": window,
    }
    step = catchup_step(asked=-1, **args)  # type: ignore[arg-type]
    asked = [t for a, b in step.nacks for t in range(a, b + 1)]
    assert asked == list(range(0, 2 * window, 2))
    assert step.asked == 2 * (window - 1)
    again = catchup_step(asked=step.asked, **args)  # type: ignore[arg-type]
    assert again.nacks == ()  # nothing new until the answers come (or the timer retries)


def test_catchup_window_is_its_own_knob() -> None:
    assert ShbConfig(shb="s", upstream="u", pubends=("p",), window=9).catchup_window is None
    with pytest.raises(ProtocolMisuse, match="catchup_window"):
        ShbConfig(shb="s", upstream="u", pubends=("p",), catchup_window=0)
