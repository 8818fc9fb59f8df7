"""Shared ZeroMQ model scenarios for the tests."""

from __future__ import annotations

from gapless.impl.zmq.messages import Post, Subscribe, Unsubscribe
from gapless.impl.zmq.records import Edge, ZmqTopology
from gapless.models.zmq_net import Action

MS = 1_000

TREE = ZmqTopology(
    edges=(
        Edge(up="P", down="D"),
        Edge(up="D", down="S1"),
        Edge(up="D", down="S2"),
        Edge(up="D", down="S4"),
        Edge(up="P", down="S3"),
    ),
    subscribers=("S1", "S2", "S3", "S4"),
    publishers=("P",),
    devices=("D",),
)


def sub(t: int, node: str, topic: bytes, kind: str = "prefix") -> tuple[int, Action]:
    return (t * MS, ("app", node, Subscribe(topic=topic, kind=kind)))


def unsub(t: int, node: str, topic: bytes) -> tuple[int, Action]:
    return (t * MS, ("app", node, Unsubscribe(topic=topic)))


def post(t: int, payload: bytes, node: str = "P") -> tuple[int, Action]:
    return (t * MS, ("app", node, Post(payload=payload)))


def link(t: int, up: str, down: str, is_up: bool) -> tuple[int, Action]:
    return (t * MS, ("link", up, down, is_up))


BASIC: list[tuple[int, Action]] = [
    sub(10, "S1", b"A"),
    sub(10, "S2", b"A"),
    sub(10, "S2", b"B"),
    sub(10, "S3", b"AB"),
    sub(10, "S4", b"C"),
    unsub(20, "S1", b"A"),
    link(30, "D", "S2", False),
    link(35, "D", "S4", False),  # S4 goes away for good
    link(40, "D", "S2", True),
    post(60, b"B-inflight"),
    unsub(60, "S2", b"B"),  # the post above is in flight across this unsubscription
    sub(63, "S2", b"B"),
    sub(70, "S1", b"A"),
    unsub(75, "S1", b"A"),  # S2 still holds A
    *(post(100 + i, p) for i, p in enumerate([b"A1", b"AB2", b"B3", b"C4", b"Z5"])),
]
