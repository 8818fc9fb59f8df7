"""The hot path's shortcuts change nothing observable: ``state.evolve`` is
``attrs.evolve`` for :class:`BrokerState`, which has no converters, validators or
post-init hook for it to skip."""

from __future__ import annotations

import random

import attrs
import pytest
from pyrsistent import PVector, pmap, pvector

from gapless.impl.dft import publications, seqvec
from gapless.impl.dft.messages import PubMsg
from gapless.impl.dft.state import BrokerState, QueuedPub, evolve, new_broker
from gapless.impl.dft.tree import complete_tree


def test_broker_state_has_nothing_evolve_would_skip() -> None:
    for a in attrs.fields(BrokerState):
        assert a.converter is None, a.name
        assert a.validator is None, a.name
        assert a.init, a.name
    assert not hasattr(BrokerState, "__attrs_post_init__")


def test_evolve_equals_attrs_evolve_and_refuses_unknown_fields() -> None:
    s = new_broker("B1", complete_tree(13, 3))
    changes = {"stamp": 7, "local": pmap({"S/0": ("S", 0)}), "restored": False}
    got = evolve(s, **changes)
    assert got == attrs.evolve(s, **changes)
    assert type(got) is BrokerState
    assert s.stamp == 0  # the original is untouched
    assert evolve(s) == s
    with pytest.raises(TypeError, match="no field"):
        evolve(s, stmp=1)


def _observe_unhurried(seen, vec):  # type: ignore[no-untyped-def]
    """``seqvec.observe`` without its in-order shortcut (the general fold only)."""
    for y, n, low in vec:
        key = (y, seqvec.epoch(n))
        s = seen.get(key, seqvec.Seen())
        mark = max(s.low, min(low, n) - 1)
        above = {m for m in s.above if m > mark}
        above.add(n)
        while mark + 1 in above:
            mark += 1
            above.discard(mark)
        seen = seen.set(key, seqvec.Seen(low=mark, above=frozenset(above)))
    return seen


def test_observe_with_its_in_order_shortcut_folds_as_the_general_rule() -> None:
    rng = random.Random(5)
    for _ in range(150):
        a = b = pmap()
        for _ in range(25):
            vec = tuple(
                (rng.choice("XYZ"), rng.randint(1, 20), rng.randint(0, 20))
                for _ in range(rng.randint(1, 3))
            )
            a, b = _observe_unhurried(a, vec), seqvec.observe(b, vec)
            assert a == b, vec


def test_queue_columns_follow_every_step_and_find_the_first_entry() -> None:
    """``publications._find`` on queues derived by append, replace and delete (the columns
    carried over) answers as a plain scan for the first entry, duplicates of a key
    included; ``low_water`` on the stamps tuple answers as on a generator."""
    rng = random.Random(7)
    queue: PVector[QueuedPub] = pvector()
    stamp = (1 << 32) + 1
    for _ in range(300):
        op = rng.random()
        if op < 0.5 or not queue:
            key = (rng.choice("PQ"), rng.randint(1, 12))  # repeats: duplicate keys occur
            stamp += 1
            q = QueuedPub(
                msg=PubMsg(source=key[0], number=key[1]),
                stamp=stamp,
                senders=frozenset(),
                hops=pmap(),
            )
            queue = publications._appended(queue, q)
        elif op < 0.75:
            i = rng.randrange(len(queue))
            queue = publications._replaced(
                queue, i, attrs.evolve(queue[i], senders=frozenset({"X"}))
            )
        else:
            queue = publications._deleted(queue, rng.randrange(len(queue)))
        for key in (("P", rng.randint(1, 12)), ("Q", 3), ["P", 1], "junk"):
            want = next((i for i, q in enumerate(queue) if q.msg.key == key), None)
            assert publications._find(queue, key) == want  # type: ignore[arg-type]
        stamps = publications._columns(queue)[1]
        assert stamps == tuple(q.stamp for q in queue)
        for mine in (stamp, stamp + 1, 5):
            assert seqvec.low_water(mine, stamps, stamp) == seqvec.low_water(
                mine, iter(stamps), stamp
            )
    mixed = (3, (1 << 32) + 5, (1 << 32) + 9)  # an earlier life's stamp among them
    assert seqvec.low_water((1 << 32) + 7, mixed, (1 << 32) + 9) == (1 << 32) + 5
