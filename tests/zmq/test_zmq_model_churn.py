"""Random churn on a two-level tree of devices: the correct protocol keeps every invariant
in every option mode and under both aggregation policies (Hypothesis)."""

from __future__ import annotations

import attrs
from _zmq_scenarios import MS, link, post, sub, unsub
from hypothesis import given
from hypothesis import strategies as st

from gapless.impl.zmq.policy import XpubOptions, ZmqPolicy
from gapless.impl.zmq.records import Edge, ZmqTopology
from gapless.invariants.zmq import check
from gapless.models.zmq_net import Action, run_script

TREE2 = ZmqTopology(
    edges=(
        Edge(up="P", down="D1"),
        Edge(up="D1", down="D2"),
        Edge(up="D1", down="S1"),
        Edge(up="D2", down="S2"),
        Edge(up="D2", down="S3"),
        Edge(up="P", down="S4"),
    ),
    subscribers=("S1", "S2", "S3", "S4"),
    publishers=("P",),
    devices=("D1", "D2"),
)
SUBS = ("S1", "S2", "S3", "S4")
TOPICS = (b"", b"A", b"AB", b"B")
PAYLOADS = (b"A1", b"AB2", b"B3", b"C4", b"ABC5")

step = st.one_of(
    st.tuples(st.just("sub"), st.sampled_from(SUBS), st.sampled_from(TOPICS)),
    st.tuples(st.just("unsub"), st.sampled_from(SUBS), st.sampled_from(TOPICS)),
    st.tuples(st.just("flap"), st.sampled_from(TREE2.edges), st.integers(0, 3)),
    st.tuples(st.just("restart"), st.sampled_from(TREE2.devices), st.just(0)),
    st.tuples(st.just("post"), st.sampled_from(PAYLOADS), st.just(0)),
)
modes = st.sampled_from(
    [
        ("default", {}, ZmqPolicy(), TREE2),
        (
            "verbose",
            {"D1": XpubOptions(verbose=True), "D2": XpubOptions(verbose=True)},
            ZmqPolicy(),
            TREE2,
        ),
        ("verboser", {"D1": XpubOptions(verboser=True)}, ZmqPolicy(), TREE2),
        (
            "manual",
            {"D2": XpubOptions(manual=True), "P": XpubOptions(manual=True)},
            ZmqPolicy(),
            TREE2,
        ),
        ("subsumption", {}, ZmqPolicy(subsumption=True), attrs.evolve(TREE2, subsumption=True)),
        ("fallback", {}, ZmqPolicy(fallback_limit=2), attrs.evolve(TREE2, fallback_limit=2)),
    ]
)


def script_of(steps: list[tuple[object, object, object]]) -> list[tuple[int, Action]]:
    out: list[tuple[int, Action]] = []
    for i, (kind, a, b) in enumerate(steps):
        t = 1 + i
        if kind == "sub":
            out.append(sub(t, str(a), bytes(b)))  # type: ignore[arg-type]
        elif kind == "unsub":
            out.append(unsub(t, str(a), bytes(b)))  # type: ignore[arg-type]
        elif kind == "flap":
            assert isinstance(a, Edge)
            out.append(link(t, a.up, a.down, False))
            out.append(((t * MS) + 200 + 300 * int(b), ("link", a.up, a.down, True)))  # type: ignore[call-overload]
        elif kind == "restart":
            out.append((t * MS, ("restart", a)))
        else:
            out.append(post(t, bytes(a)))  # type: ignore[arg-type]
    end = len(steps) + 20
    out += [post(end + i, p) for i, p in enumerate(PAYLOADS)]
    return out


@given(steps=st.lists(step, max_size=25), mode=modes)
def test_churn_then_settle_keeps_every_invariant(
    steps: list[tuple[object, object, object]],
    mode: tuple[str, dict[str, XpubOptions], ZmqPolicy, ZmqTopology],
) -> None:
    _, options, policy, topo = mode
    net = run_script(topo, script_of(steps), policy=policy, options=options)
    assert check(topo, net.records) == []
