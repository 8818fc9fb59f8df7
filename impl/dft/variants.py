"""DFT's planted bugs and the naive baseline, declared beside the rules they change
[DFT §I, §V-VIII] (DESIGN.md, "sans-IO").

Theory of operation
-------------------
Each entry of :data:`VARIANTS` is a :class:`~gapless.impl.variants.Variant` whose policy is
:data:`~gapless.impl.dft.config.PAPER_POLICY` with one rule changed; the roles only call the
policy. ``caught_by`` names the invariants of :mod:`gapless.invariants.dft` expected to catch
it, ``needs`` the fault kinds it needs to show; ``tests/dft/test_dft_variants.py`` runs each
on a small network where it shows and checks that one of those invariants catches it and
that the paper's policy passes the same run. ``dpt-delta`` (partition tables within δ
instead of 2δ) loses redundancy and the completeness of tables within δ, not safety, under
our reading of the tags (``spec/dft.md``, "Partition tables"); since dft8 the trace invariant
``partition_tables`` judges the tables themselves and catches it.
"""

from __future__ import annotations

from typing import Final

import attrs

from gapless.impl.dft.config import PAPER_POLICY
from gapless.impl.variants import Variant

__all__ = ["VARIANTS"]

VARIANTS: Final[dict[str, Variant]] = {
    v.name: v
    for v in (
        Variant(
            name="naive",
            policy=attrs.evolve(PAPER_POLICY, forwarding="naive"),
            caught_by=("gapless", "bounded_delivery"),
            needs=("link",),
            summary="Reverse-path forwarding with store-and-forward on link failure [DFT §I]: a "
            "broker cut off from a new subscription filters out a publication that matches "
            "only it, then forwards the stored ones after the heal — a gap.",
        ),
        Variant(
            name="dpt-delta",
            policy=attrs.evolve(PAPER_POLICY, dpt_factor=1),
            caught_by=("partition_tables",),
            needs=("link",),
            summary="Partition tables kept within DPT = δ of the detector instead of 2δ "
            "[DFT §IV, §VII 'Determining DPT']: brokers between δ + 1 and 2δ of a detector "
            "never learn its pid.",
        ),
        Variant(
            name="untagged-confirmations",
            policy=attrs.evolve(PAPER_POLICY, tag_confirmations=False),
            caught_by=("gapless", "safety"),
            needs=("link",),
            summary="A partition detector does not tag confirmations with its barriers "
            "[Figure 5 lines 33-35]: the subscriber's broker cannot exclude publications "
            "from a source that never accepted the subscription.",
        ),
        Variant(
            name="early-accept",
            policy=attrs.evolve(PAPER_POLICY, wait_for_all_confirmations=False),
            caught_by=("gapless", "safety"),
            topology="dft-slow-branch",
            summary="A subscription is accepted on its first confirmation, before all of "
            "Out_s confirmed [Figure 5 line 16]: a publisher in a slow subtree filters out "
            "matching publications published after acceptance.",
        ),
        Variant(
            name="drop-local-target",
            policy=attrs.evolve(PAPER_POLICY, keep_local_targets=False),
            caught_by=("gapless", "bounded_delivery"),
            needs=("crash",),
            summary="An unreachable broker with local matching subscribers is dropped from "
            "Out_p [Figure 8 lines 46-48]: the publication is lost to them.",
        ),
        Variant(
            name="short-seqvec",
            policy=attrs.evolve(PAPER_POLICY, dseq_factor=1, dseq_offset=0),
            caught_by=("exactly_once",),
            needs=("crash",),
            summary="Sequence vectors over δ brokers instead of 2δ + 1 [DFT §VII]: two "
            "legitimate copies bypassing different brokers share no stamp; a duplicate is "
            "delivered.",
        ),
        Variant(
            name="forget-stamps",
            policy=attrs.evolve(PAPER_POLICY, durable_stamps=False),
            caught_by=("bounded_delivery", "gapless"),
            needs=("crash",),
            summary="A restarted broker restarts its sequence-vector stamps at zero "
            "[DFT §VII, §VIII-B]: brokers that remember its old stamps take its new "
            "publications for duplicates and drop them.",
        ),
        Variant(
            name="no-sync",
            policy=attrs.evolve(PAPER_POLICY, sync_on_activation=False),
            caught_by=("bounded_delivery",),
            needs=("crash",),
            summary="No partial recovery on session activation [DFT §VIII]: a restarted "
            "broker comes back with an empty SRT and filters out the publications it should "
            "forward.",
        ),
        Variant(
            name="deliver-tagged",
            policy=attrs.evolve(PAPER_POLICY, check_tags_on_delivery=False),
            caught_by=("gapless", "safety"),
            needs=("link",),
            summary="A publication is delivered locally though its tags meet the "
            "confirmation tags [Figure 8 lines 32-38]: a flow from beyond a barrier with a "
            "hole in it reaches the subscriber.",
        ),
    )
}
