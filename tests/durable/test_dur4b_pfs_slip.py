"""The planted bug ``back-pointer-off-by-one`` [DUR §4.2, Figure 2]: the PFS policy that writes
each back-pointer one record low, what a batch read then gets wrong, and the protocol run that
catches it (``durable_exactly_once``), beside the paper's back-pointers that never lead a
chain to a record not naming its subscriber.
"""

from __future__ import annotations

import random

from test_durbind_protocol import FAULTS, _spec

from gapless.impl.durable.pfs import PAPER_PFS, PfsPolicy, PfsStream
from gapless.impl.durable.storage import NO_INDEX
from gapless.impl.durable.variants import VARIANTS
from gapless.models.run import simulate

SLIP = PfsPolicy(back_pointer_slip=1)


def _stream(policy: PfsPolicy) -> PfsStream:
    """Subscriber 1 matches ticks 2, 4, 6, 8; subscriber 2 matches 1, 3, 5, 7 (interleaved,
    so one record below a back-pointer never names the same subscriber)."""
    pfs = PfsStream.empty("p0", policy)
    for t in range(1, 9):
        pfs, _fx = pfs.write(t, (1,) if t % 2 == 0 else (2,))
    return pfs


def test_paper_back_pointers_find_every_matching_tick() -> None:
    pfs = _stream(PAPER_PFS)
    assert pfs.read(1, after=0, upto=8).q == (2, 4, 6, 8)
    assert pfs.read(2, after=0, upto=8).q == (1, 3, 5, 7)


def test_a_slipped_back_pointer_loses_the_earlier_matching_ticks() -> None:
    pfs = _stream(SLIP)
    # lastIndex is right, so the latest record is found; its back-pointer is not
    assert pfs.read(1, after=0, upto=8).q == (8,)
    assert pfs.read(2, after=0, upto=8).q == (7,)
    # what was lost is read as known: silence over matching timestamps
    assert pfs.read(1, after=0, upto=8).known_upto == 8


def test_a_recovered_stream_takes_its_shbs_policy() -> None:
    pfs = _stream(PAPER_PFS)
    assert pfs.with_policy(PAPER_PFS) is pfs
    slipped = pfs.with_policy(SLIP)
    assert slipped.policy == SLIP
    later, _fx = slipped.write(10, (1,))
    assert later.read(1, after=0, upto=10).q == (10,)  # 10's pointer slipped below 8


def test_paper_chains_only_reach_records_naming_their_subscriber() -> None:
    """The read's guard (a record not naming the subscriber ends its chain) never fires on the
    paper's writes: every back-pointer names a record of the same subscriber."""
    rng = random.Random(7)
    pfs = PfsStream.empty("p0")
    for t in range(1, 400):
        pfs, _fx = pfs.write(t, rng.sample(range(12), rng.randint(0, 4)))
    names = {i: {s for s, _p in pfs.record(i).entries} for i in range(pfs.next_index)}
    pointers = 0
    for i in range(pfs.next_index):
        for s, prev in pfs.record(i).entries:
            if prev != NO_INDEX:
                pointers += 1
                assert prev < i
                assert s in names[prev]
    assert pointers > 300


def test_the_variant_is_declared_and_caught_by_exactly_once() -> None:
    v = VARIANTS["back-pointer-off-by-one"]
    assert v.policy.shb.pfs == SLIP
    good = simulate(_spec(), FAULTS, 1)
    assert good.verdict == "pass", good.explanation
    bad = simulate(_spec("back-pointer-off-by-one"), FAULTS, 1)
    assert bad.invariant == "durable_exactly_once", bad.explanation
    assert "left out by SilenceMessage" in bad.explanation
