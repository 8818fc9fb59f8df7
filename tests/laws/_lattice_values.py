"""Shared translation between the spec's plain strings and impl's values, and strategies."""

from __future__ import annotations

from hypothesis import strategies as st

from gapless.impl import curiosity as ic
from gapless.impl import knowledge as ik
from gapless.spec import lattices as sp

_PLAIN = {"Q": ik.Q, "L": ik.L, "F": ik.F, "S": ik.S, "E": ik.E}
_CUR = {"N": ic.N, "C": ic.C, "A": ic.A}


def to_impl(x: str) -> ik.Knowledge:
    kind, payload = sp.kind(x), sp.payload(x)
    if kind == "D":
        return ik.D(payload)
    if kind == "D*":
        return ik.DSTAR(payload)
    return _PLAIN[kind]


def to_spec(v: ik.Knowledge) -> str:
    return v.symbol if v.payload is None else f"{v.symbol}({v.payload})"


def cur(c: str) -> ic.Curiosity:
    return _CUR[c]


IMPL_KNOWLEDGE = [to_impl(x) for x in sp.KNOWLEDGE]
SAMPLES_3 = [*IMPL_KNOWLEDGE, ik.D("c"), ik.DSTAR("c")]
"""Every value with three payloads: enough for every three-variable law."""
CURIOSITIES = [ic.N, ic.C, ic.A]

payloads = st.sampled_from(["a", "b", "c"])
knowledge = st.one_of(
    st.sampled_from([ik.Q, ik.L, ik.F, ik.S, ik.E]),
    st.builds(ik.D, payloads),
    st.builds(ik.DSTAR, payloads),
)
curiosity = st.sampled_from(CURIOSITIES)
