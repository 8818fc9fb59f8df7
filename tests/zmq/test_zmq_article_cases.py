"""The article's cases on the model [ZMQ]: uni-directional segments, several publishers, an
unknown matching kind, subsumption, the N-subscription fallback, options; and the sans-IO
contract (a no-op returns the same state, a caller's misuse raises)."""

from __future__ import annotations

import attrs
import pytest
from _zmq_scenarios import link, post, sub, unsub

from gapless.impl.errors import ProtocolMisuse
from gapless.impl.inputs import LinkChanged, Receive
from gapless.impl.zmq import handle
from gapless.impl.zmq.messages import Data, Install, Post, Subscription, Unsubscribe
from gapless.impl.zmq.policy import XpubOptions, ZmqPolicy
from gapless.impl.zmq.records import Edge, ZmqTopology
from gapless.impl.zmq.sub import SubState
from gapless.invariants.zmq import MinimalTraffic, check
from gapless.models.zmq_net import ZmqNet, build_states, run_script


def upstream_traffic(net: ZmqNet, frm: str, to: str) -> list[tuple[str, bytes]]:
    return [
        (r.detail.wire.kind, r.detail.wire.topic)
        for r in net.records
        if r.kind == "send" and r.node == frm and r.detail.to == to and r.detail.wire.kind != "data"
    ]


def delivered(net: ZmqNet, node: str) -> list[bytes]:
    return [r.detail.payload for r in net.records if r.kind == "deliver" and r.node == node]


def test_uni_directional_segments() -> None:
    # P -(multicast)-> D -> S1 ; P -> D2 -(multicast)-> S5
    topo = ZmqTopology(
        edges=(
            Edge(up="P", down="D", multicast=True),
            Edge(up="D", down="S1"),
            Edge(up="P", down="D2"),
            Edge(up="D2", down="S5", multicast=True),
        ),
        subscribers=("S1", "S5"),
        publishers=("P",),
        devices=("D", "D2"),
    )
    script = [
        sub(1, "S1", b"A"),
        sub(1, "S5", b"B"),
        *(post(10 + i, p) for i, p in enumerate([b"A1", b"B2", b"C3"])),
    ]
    net = run_script(topo, script)
    assert check(topo, net.records) == []
    assert upstream_traffic(net, "D", "P") == []  # nothing goes up a multicast segment
    assert upstream_traffic(net, "D2", "P") == [("subscribe", b"")]  # subscribe to all
    assert delivered(net, "S1") == [b"A1"]
    assert delivered(net, "S5") == [b"B2"]  # the SUB filters what the segment carries


def test_a_subscriber_with_several_publishers_subscribes_at_each() -> None:
    topo = ZmqTopology(
        edges=(Edge(up="P1", down="S"), Edge(up="P2", down="S")),
        subscribers=("S",),
        publishers=("P1", "P2"),
    )
    script = [sub(1, "S", b"A"), post(10, b"A1", "P1"), post(11, b"A2", "P2"), post(12, b"B", "P2")]
    net = run_script(topo, script)
    assert check(topo, net.records) == []
    assert (
        upstream_traffic(net, "S", "P1")
        == upstream_traffic(net, "S", "P2")
        == [("subscribe", b"A")]
    )
    assert delivered(net, "S") == [b"A1", b"A2"]


CHAIN = ZmqTopology(
    edges=(Edge(up="P", down="D"), Edge(up="D", down="S1"), Edge(up="D", down="S2")),
    subscribers=("S1", "S2"),
    publishers=("P",),
    devices=("D",),
)


def test_an_unknown_matching_kind_means_send_me_everything() -> None:
    script = [sub(1, "S1", b"9", kind="suffix"), post(10, b"A9"), post(11, b"B8")]
    net = run_script(CHAIN, script)
    assert check(CHAIN, net.records) == []
    assert upstream_traffic(net, "D", "P") == [("subscribe", b"9")]
    crossed = [r.detail.wire.payload for r in net.records if r.kind == "send" and r.node == "P"]
    assert crossed == [b"A9", b"B8"]  # P does not know "suffix": everything goes down
    assert delivered(net, "S1") == [b"A9"]  # the SUB knows it and filters


def test_subsumption_sends_the_covered_prefix_before_removing_the_cover() -> None:
    script = [
        sub(1, "S1", b"A"),
        sub(2, "S2", b"AB"),
        unsub(3, "S1", b"A"),
        post(10, b"ABC"),
        post(11, b"AC"),
    ]
    policy = ZmqPolicy(subsumption=True)
    topo = attrs.evolve(CHAIN, subsumption=True)
    net = run_script(topo, script, policy=policy)
    assert check(topo, net.records) == []
    assert upstream_traffic(net, "D", "P") == [
        ("subscribe", b"A"),
        ("subscribe", b"AB"),
        ("unsubscribe", b"A"),
    ]
    assert delivered(net, "S2") == [b"ABC"]
    plain = run_script(CHAIN, script)
    assert upstream_traffic(plain, "D", "P")[:2] == [("subscribe", b"A"), ("subscribe", b"AB")]


def test_fallback_subscribes_to_everything_beyond_n_and_counts_the_excess() -> None:
    script = [sub(1, "S1", t) for t in (b"A", b"B", b"C")] + [post(10, b"A1"), post(11, b"Z2")]
    topo = attrs.evolve(CHAIN, fallback_limit=2)
    net = run_script(topo, script, policy=ZmqPolicy(fallback_limit=2))
    assert check(topo, net.records) == []
    assert upstream_traffic(net, "D", "P") == [
        ("subscribe", b"A"),
        ("subscribe", b"B"),
        ("subscribe", b""),  # the third prefix is one too many: everything, then
        ("unsubscribe", b"A"),
        ("unsubscribe", b"B"),
    ]
    mt = MinimalTraffic(topo)
    for r in net.records:
        mt.observe(r)
    assert not mt.finish()
    assert mt.excess == 1  # Z2 crossed P->D although nobody below wants it
    assert delivered(net, "S1") == [b"A1"]


def test_verbose_passes_duplicates_up_and_default_does_not() -> None:
    script = [sub(1, "S1", b"A"), sub(2, "S2", b"A"), unsub(3, "S1", b"A"), unsub(4, "S2", b"A")]
    default = run_script(CHAIN, script)
    verbose = run_script(CHAIN, script, options={"D": XpubOptions(verbose=True)})
    verboser = run_script(CHAIN, script, options={"D": XpubOptions(verboser=True)})
    once = [("subscribe", b"A"), ("unsubscribe", b"A")]
    assert upstream_traffic(default, "D", "P") == once
    assert upstream_traffic(verbose, "D", "P") == [once[0], *once]
    assert upstream_traffic(verboser, "D", "P") == [once[0], *once]
    for net in (default, verbose, verboser):
        assert check(CHAIN, net.records) == []


def test_welcome_message_reaches_each_new_connection_that_wants_it() -> None:
    script = [sub(0, "S1", b"W"), link(5, "D", "S1", False), link(6, "D", "S1", True)]
    net = run_script(CHAIN, script, options={"D": XpubOptions(welcome=b"Welcome")})
    welcomes = [(r.detail.payload, r.detail.connection) for r in net.records if r.kind == "deliver"]
    assert welcomes == [(b"Welcome", 1), (b"Welcome", 2)]
    assert delivered(net, "S2") == []  # S2 did not subscribe to it: its SUB drops it


def test_a_no_op_returns_the_same_state_and_misuse_raises() -> None:
    s = SubState(name="S", upstream=("P",))
    same, effects = handle(s, Unsubscribe(topic=b"never"), 0)
    assert same is s
    assert effects == ()
    up, _ = handle(s, LinkChanged(neighbour="P", up=True), 0)
    again, effects = handle(up, LinkChanged(neighbour="P", up=True), 0)
    assert again is up
    assert effects == ()
    with pytest.raises(ProtocolMisuse, match="allowed"):
        handle(s, Post(payload=b"x"), 0)
    _, rejected = handle(up, Receive(sender="P", msg=Subscription(subscribe=True, topic=b"")), 0)
    assert type(rejected[0]).__name__ == "Rejected"
    _, ok = handle(up, Receive(sender="P", msg=Data(origin="P", seq=1, payload=b"x")), 0)
    assert ok == ()  # not subscribed: the SUB filters it


def test_install_needs_manual_mode() -> None:
    pub = build_states(CHAIN)["P"]
    with pytest.raises(ProtocolMisuse, match="manual"):
        handle(pub, Install(peer="D", topic=b"A"), 0)


def test_a_gone_peers_prefix_is_withdrawn_though_an_unknown_kind_is_held_there() -> None:
    """Found by fuzzing: S2's "" and S1's suffix subscription are both held at b"" in D's
    trie; when S2 goes away, its "" must still be withdrawn upstream."""
    script = [sub(1, "S1", b"9", kind="suffix"), sub(1, "S2", b""), link(5, "D", "S2", False)]
    net = run_script(CHAIN, script)
    assert check(CHAIN, net.records) == []
    assert upstream_traffic(net, "D", "P")[-1] == ("unsubscribe", b"")
