"""Pinned findings about real libzmq 4.3 (``spec/zmq.md``): sequences where libzmq's own
trace breaks an invariant the model keeps. Each test fails if libzmq starts behaving (then
the finding is fixed upstream: update ``spec/zmq.md`` and the README)."""

from __future__ import annotations

from pathlib import Path

import attrs
import pytest

zmq = pytest.importorskip("zmq", reason="pyzmq is not installed (pip install 'gapless[zmq]')")

from _zmq_rig import Mismatch, Rig  # noqa: E402

from gapless.invariants.zmq import check  # noqa: E402

TWO_SUBSCRIBERS = [
    ("subscribe", 0, b"A"),
    ("subscribe", 1, b"A"),
    ("unsubscribe", 0, b"A"),
    ("unsubscribe", 1, b"A"),
]
ONE_SUBSCRIBER_TWICE = [
    ("subscribe", 0, b"A"),
    ("subscribe", 0, b"A"),
    ("unsubscribe", 0, b"A"),
    ("unsubscribe", 0, b"A"),
]
TWO_SUBSCRIBERS_GONE = [
    ("subscribe", 0, b"A"),
    ("subscribe", 1, b"A"),
    ("disconnect", 0),
    ("disconnect", 1, True),
]

FINDINGS = [
    ("verbose", TWO_SUBSCRIBERS),
    ("verbose", ONE_SUBSCRIBER_TWICE),
    ("verbose", TWO_SUBSCRIBERS_GONE),
    ("verboser", ONE_SUBSCRIBER_TWICE),
    ("manual", ONE_SUBSCRIBER_TWICE),
]


def apply_all(rig: Rig, ops: list[tuple[object, ...]]) -> None:
    for o in ops:
        rig.apply(o)


@pytest.mark.parametrize(("mode", "ops"), FINDINGS)
def test_a_proxy_xsub_counting_forwarded_subscriptions_leaves_a_stale_one(
    mode: str, ops: list[tuple[object, ...]], tmp_path: Path
) -> None:
    """Finding 1: the proxy's XSUB counts the subscriptions it forwarded, but its XPUB
    forwards duplicates (verbose, verboser, manual) and not every matching unsubscription,
    so the count never reaches zero: the publisher keeps a subscription nobody holds."""
    rig = Rig(2, mode)
    try:
        with pytest.raises(Mismatch) as caught:
            apply_all(rig, ops)
        model_verdict = check(attrs.evolve(rig.topo, observed=None), rig.model.records)
        libzmq_verdict = rig.judge_from_file(tmp_path / "libzmq.jsonl")
    finally:
        rig.close()
    missing_upstream = caught.value.model_only
    assert missing_upstream[("unsubscribe", b"A")] == 1
    assert {kind for kind, _ in missing_upstream} == {"unsubscribe"}
    assert not caught.value.libzmq_only
    assert model_verdict == []
    assert [(v.invariant, v.subject) for v in libzmq_verdict] == [("subscription_consistency", "P")]
    assert "stale [('prefix', b'A')" in libzmq_verdict[0].message
    assert libzmq_verdict[0].message.endswith("missing []")


def test_default_mode_keeps_the_paper_on_the_same_sequences() -> None:
    """The same sequences in libzmq's default mode agree with the model."""
    for ops in (TWO_SUBSCRIBERS, ONE_SUBSCRIBER_TWICE, TWO_SUBSCRIBERS_GONE):
        rig = Rig(2, "default")
        try:
            apply_all(rig, ops)
            assert check(rig.topo, rig.records) == []
        finally:
            rig.close()
