"""``safety`` at a publication's source [DFT §VI, §VIII-B]: the source forwards a
publication when it first sends it, not when it was published — a broker that is not
restored (a newcomer before its first sync, a restarted broker) holds what is published
until its SRT is complete. Hand-built traces of two brokers, A (the source) and B (the
subscriber's broker): forwarding before accepting is caught, holding until after is not."""

from __future__ import annotations

from gapless.impl.dft.messages import DFTWire, PubMsg, SubConfirm, wire
from gapless.impl.dft.tree import PrimaryTree
from gapless.impl.effects import Deliver, Persist
from gapless.impl.inputs import Connect
from gapless.impl.trace import Published, Received, Sent, TraceRecord
from gapless.invariants.dft import DFTContext, check_dft_trace
from gapless.spec.filters import reference_matcher

_TREE = PrimaryTree.build([("B", None), ("A", "B")])
_PUB = PubMsg(source="A", number=1, attributes={"x": 1}, trail=("A",))


def _w(msg: object) -> DFTWire:
    got = wire(msg)
    assert got is not None
    return got


def _trace(*, confirm_at: int, send_at: int) -> list[TraceRecord]:
    """S subscribes at B (accepted at 10); A publishes at 20, confirms S at ``confirm_at``
    and sends the publication at ``send_at``; B delivers it at 100."""
    conf = SubConfirm(sid="S/0")
    steps = [
        (0, "B", "connect", Connect(subscriber="S", filter="true", connection=0)),
        (10, "B", "persist", Persist(key=("accepted", "S/0"), value=frozenset())),
        (20, "A", "publish", Published(pubend="A", index=0, attributes={"x": 1})),
        (confirm_at, "A", "send", Sent(to="B", msg=conf, wire=_w(conf))),
        (send_at, "A", "send", Sent(to="B", msg=_PUB, wire=_w(_PUB))),
        (90, "B", "receive", Received(sender="A", msg=_PUB, wire=_w(_PUB))),
        (
            100,
            "B",
            "deliver",
            Deliver(subscriber="S", connection=0, pubend="A", tick=1, payload={"x": 1}),
        ),
    ]
    steps.sort(key=lambda s: s[0])
    return [
        TraceRecord(seq=i, time=t, node=n, kind=k, detail=d) for i, (t, n, k, d) in enumerate(steps)
    ]


def _ctx() -> DFTContext:
    return DFTContext(tree=_TREE, delta=1, matches=reference_matcher())


def test_a_source_that_forwards_before_it_accepts_is_caught() -> None:
    v, _ = check_dft_trace(_trace(confirm_at=60, send_at=40), _ctx(), ("safety",))
    assert v is not None
    assert v.invariant == "safety"
    assert "forwarded by A at t=40 before A accepted S/0 (accepted: 60)" in v.message


def test_a_source_that_holds_a_publication_until_it_accepts_is_safe() -> None:
    """Published at 20, before A accepted S at 30 — held, first sent at 40: the flow is
    safe (the newcomer of ``campaigns/dft-demo.toml``, seed 1097: its first publication
    came 2 ms after its join, before its first sync)."""
    v, _ = check_dft_trace(_trace(confirm_at=30, send_at=40), _ctx(), ("safety",))
    assert v is None, v.explain() if v else ""


def test_a_restarted_source_re_sending_its_publication_after_accepting_is_safe() -> None:
    """The default zoo's ``dft-fig1`` swarm campaign, seed 29 (dft8's first zoo run, a false
    alarm on the correct protocol): B1 publishes (B1, 159) at 6.32 s and crashes 1 µs later
    (the copy in flight is lost); S at B3 reconnects (a new subscription, accepted while B1
    is down); B1 restarts, accepts it in its sync, and re-sends (B1, 159) — processed afresh
    against its rebuilt SRT [DFT §VIII-B]. Its forwarding counts from its restart: safe."""
    from gapless.spark_fuzz.config import load_config
    from gapless.spark_fuzz.runner_backend import RunnerBackend

    backend = RunnerBackend("dft")
    base = {"protocol": "dft", "topology": "dft-fig1", "faults": {"profile": "swarm"}}
    spec = backend.make_spec(load_config(None, {**base, "variant": "none"}))
    out = backend.run(spec, backend.generate_schedule(spec, 29), 29)
    assert out.verdict in ("pass", "out_of_budget"), out.explanation
