"""DFTConfig and DFTPolicy: δ and every number derived from it, and the rules a bug may change.

Theory of operation
-------------------
The δ-fault-tolerant protocol has one configuration parameter, δ, the number of concurrent
broker or link failures it tolerates on any primary sub-path [DFT §I, Table I]. Everything
else follows from it: a broker knows its Δ-neighbourhood with Δ = δ + 1 (so it can bypass up
to δ unreachable brokers) [DFT §I, §IV]; partition information travels within DPT = 2δ of its
detector [DFT §VIII, "Determining DPT"]; sequence vectors cover the last DSEQ = 2δ + 1
brokers of a message's path [DFT §VII]. :class:`DFTConfig` holds δ and derives the three.

:class:`DFTPolicy` holds the places where an implementer makes a decision the paper
specifies (how far partition information travels, how long sequence vectors are, whether a
detector tags confirmations, ...). The roles call the policy; a planted bug
(:mod:`gapless.impl.dft.variants`) is another policy value. ``forwarding="naive"`` selects
the §I baseline: reverse-path forwarding with store-and-forward on link failure.

>>> c = DFTConfig(delta=2)
>>> (c.delta, c.big_delta, c.dpt, c.dseq)
(2, 3, 4, 5)
>>> DFTConfig(delta=-1)
Traceback (most recent call last):
...
gapless.impl.dft.config.DFTConfigError: DFTConfig: delta=-1 is not allowed; allowed: an int >= 0
"""

from __future__ import annotations

from typing import Any, Final, final

import attrs

from gapless.impl.errors import GaplessError

__all__ = ["PAPER_POLICY", "DFTConfig", "DFTConfigError", "DFTPolicy"]


class DFTConfigError(GaplessError, ValueError):
    """A DFTConfig or DFTPolicy field outside its allowed domain."""


def _delta(inst: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise DFTConfigError(
            f"DFTConfig: {attribute.name}={value!r} is not allowed; allowed: an int >= 0"
        )


@final
@attrs.frozen(kw_only=True)
class DFTConfig:
    """δ and its derived parameters [DFT Table I]."""

    #: The number of concurrent failures tolerated on any primary sub-path [DFT §I].
    delta: int = attrs.field(default=1, validator=_delta)

    @property
    def big_delta(self) -> int:
        """Δ = δ + 1: the radius of a broker's neighbourhood knowledge [DFT §I, §IV]."""
        return self.delta + 1

    @property
    def dpt(self) -> int:
        """DPT = 2δ: how far from its detector a pid is kept in partition tables [DFT §VIII]."""
        return 2 * self.delta

    @property
    def dseq(self) -> int:
        """DSEQ = 2δ + 1: the length of sequence vectors [DFT §V, §VII]."""
        return 2 * self.delta + 1


FORWARDING_KINDS: Final = ("dft", "naive")


def _forwarding(inst: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if value not in FORWARDING_KINDS:
        raise DFTConfigError(
            f"DFTPolicy: forwarding={value!r} is not allowed; "
            f"allowed: {', '.join(FORWARDING_KINDS)}"
        )


@final
@attrs.frozen(kw_only=True)
class DFTPolicy:
    """The DFT roles' rules; :data:`PAPER_POLICY` is the paper's. Distances are expressed as
    functions of δ so one policy serves every configuration."""

    #: ``"dft"``: Figures 5 and 8; ``"naive"``: the §I baseline.
    forwarding: str = attrs.field(default="dft", validator=_forwarding)
    #: DPT as a multiple of δ plus a constant: ``dpt_factor * δ`` [DFT §VIII] (paper: 2).
    dpt_factor: int = 2
    #: DSEQ as ``dseq_factor * δ + dseq_offset`` [DFT §VII] (paper: 2δ + 1).
    dseq_factor: int = 2
    dseq_offset: int = 1
    #: A detector tags the confirmations of subscriptions its partitions did not confirm
    #: [DFT §V-C, Figure 5 lines 33-35].
    tag_confirmations: bool = True
    #: A broker accepts a subscription only once its outgoing set is empty [Figure 5 l. 16].
    wait_for_all_confirmations: bool = True
    #: A broker with a local matching subscriber keeps the unreachable neighbour towards it
    #: in Out_p instead of dropping it [DFT §VI, Figure 8 lines 46-48].
    keep_local_targets: bool = True
    #: Local delivery only when the publication's tags and the confirmation tags are
    #: disjoint [Figure 8 lines 32-38].
    check_tags_on_delivery: bool = True
    #: A newly activated session starts a partial recovery, the broker acting as sync-point
    #: [DFT §VIII-A]; a restarted broker is brought back by its neighbours' [DFT §VIII-B].
    sync_on_activation: bool = True
    #: A restarted broker's stamps continue above every stamp of its earlier incarnations
    #: (the incarnation number is kept on stable storage) [DFT §VII, §VIII-B].
    durable_stamps: bool = True
    #: When a sync-point's partial recovery of a broker inside one of its partitions ends,
    #: the partition's pid is replaced in confirmation tags (notifiers) and removed from
    #: partition tables within DPT [DFT §VIII-A steps (iv), (v)]. False keeps pids forever:
    #: safe, but a subscription accepted during a partition never hears from it again.
    recover_partitions: bool = True
    #: A sync-point tells a broker it activates a session to the pids of its partition
    #: table within DPT of it, before the sync (our addition, ``spec/dft.md``, "Partition
    #: tables"): a restarted or newly joined broker relearns the pids it must tag with.
    relearn_partitions: bool = True
    #: A publication is matched for a subscription only if the broker it came from had
    #: accepted the subscription before processing it, as that broker's confirmation
    #: stamp shows (our addition, ``spec/dft.md``, "Releases after recovery"; the safety
    #: condition of [DFT §VI]). False is the pre-dft7 rule: a publication that waited
    #: upstream and was released after a recovery matched newer subscriptions too.
    match_after_acceptance: bool = True

    def dpt(self, config: DFTConfig) -> int:
        """The partition-table radius this policy uses."""
        return self.dpt_factor * config.delta

    def dseq(self, config: DFTConfig) -> int:
        """The sequence-vector length this policy uses."""
        return self.dseq_factor * config.delta + self.dseq_offset


PAPER_POLICY: Final = DFTPolicy()
"""The paper's rules [DFT §IV-VIII]."""
