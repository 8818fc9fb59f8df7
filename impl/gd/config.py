"""GDConfig: every number the GD roles use, in one documented frozen value (all times in µs).

The paper gives GCT=200 ms, NRT=600 ms, AET=10 s and DCT=infinity for its experiments
[GD §4.2] and attributes about 100 ms of latency to logging at the PHB [GD §4.1]. Everything
else it leaves open; our choices are documented field by field below and validated at
construction (a bad value raises :class:`GDConfigError` naming the field, the value and what is
allowed).

>>> GDConfig().gct_us, GDConfig().dct_us
(200000, None)
>>> GDConfig(gct_us=-1)
Traceback (most recent call last):
...
gapless.impl.gd.config.GDConfigError: GDConfig: gct_us=-1 is not allowed; allowed: an int >= 1 (µs)
"""

from __future__ import annotations

from typing import Any, final

import attrs

from gapless.impl.errors import GaplessError

__all__ = ["GDConfig", "GDConfigError"]


class GDConfigError(GaplessError, ValueError):
    """A GDConfig field outside its allowed domain."""


def _positive(inst: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise GDConfigError(
            f"GDConfig: {attribute.name}={value!r} is not allowed; allowed: an int >= 1 (µs)"
        )


def _non_negative(inst: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise GDConfigError(
            f"GDConfig: {attribute.name}={value!r} is not allowed; allowed: an int >= 0"
        )


def _optional_positive(inst: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if value is not None:
        _positive(inst, attribute, value)


def _flag(inst: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if not isinstance(value, bool):
        raise GDConfigError(
            f"GDConfig: {attribute.name}={value!r} is not allowed; allowed: True or False"
        )


@final
@attrs.frozen(kw_only=True)
class GDConfig:
    """The GD protocol's parameters [GD §3.2, §4]. All durations are virtual µs (= ticks)."""

    #: Gap curiosity threshold: a gap is nacked once it has been Q this long [GD §3.2, §4.2].
    gct_us: int = attrs.field(default=200_000, validator=_positive)
    #: Nack repetition threshold: the *initial* retransmission timeout of a subend's nacks;
    #: later estimated from round trips as TCP estimates its RTO [GD §3.1, §3.2, §4.2].
    nrt_us: int = attrs.field(default=600_000, validator=_positive)
    #: Ack expected threshold: the pubend expects ticks older than now - AET acked [GD §3.2].
    aet_us: int = attrs.field(default=10_000_000, validator=_positive)
    #: Delay curiosity threshold; ``None`` is the paper's infinity [GD §3.2, §4.2].
    dct_us: int | None = attrs.field(default=None, validator=_optional_positive)
    #: Minimum repetition interval: an istream forgets C after it, so repeated nacks look
    #: fresh [GD §3.1]. Also the RTO's floor, so a subend never repeats inside it.
    min_repetition_us: int = attrs.field(default=300_000, validator=_positive)
    #: RTO estimation (Jacobson [GD ref 7]): SRTT += (sample - SRTT) >> alpha_shift,
    #: RTTVAR += (|sample - SRTT| - RTTVAR) >> beta_shift, RTO = SRTT + rto_k * RTTVAR.
    rto_alpha_shift: int = attrs.field(default=3, validator=_non_negative)
    rto_beta_shift: int = attrs.field(default=2, validator=_non_negative)
    rto_k: int = attrs.field(default=4, validator=_positive)
    #: Exponential backoff cap of the nack repetition interval (pubends that are down).
    backoff_cap_us: int = attrs.field(default=5_000_000, validator=_positive)
    #: Nack chunk: a large nack range is chopped into pieces of at most this many ticks
    #: [GD §4.2] ("so that the effect of a nack message being lost is small").
    nack_chunk_us: int = attrs.field(default=250_000, validator=_positive)
    #: Logging delay of the pubend's stable storage, about 100 ms in [GD §4.1].
    logging_delay_us: int = attrs.field(default=100_000, validator=_non_negative)
    #: Period of the link-status messages between neighbouring brokers [GD §3.1].
    link_status_period_us: int = attrs.field(default=500_000, validator=_positive)
    #: Ack frequency: an SHB acks its delivered prefix at most once per this interval (acks only
    #: free upstream state and satisfy AET, so they can be lazy).
    ack_delay_us: int = attrs.field(default=100_000, validator=_non_negative)
    #: How often a pubend checks the AET condition and advances idle silence [GD §2.2, §3.2].
    ack_expected_period_us: int = attrs.field(default=1_000_000, validator=_positive)
    #: How often an idle pubend advances silence (Q -> F up to now) [GD §2.2].
    silence_period_us: int = attrs.field(default=100_000, validator=_positive)
    #: F pre-assigned to future ticks after each D, for total-order merges [GD §2.2];
    #: 0 (the default) leaves future ticks Q. Keep it below the pubend's mean publication
    #: interval (see ``spec/gd.md``).
    preassign_us: int = attrs.field(default=0, validator=_non_negative)
    #: Tick residues: pubend number k places its D ticks on t with t % tick_modulus == k, so
    #: pubends that are merged never share a tick [GD §2.2]. At most this many pubends.
    tick_modulus: int = attrs.field(default=64, validator=_positive)
    #: Best-effort mode [GD §4.1]: only D is forwarded; no accumulation, acks, nacks,
    #: logging or retransmission.
    best_effort: bool = attrs.field(default=False, validator=_flag)
    #: Take the roles' shortcuts for the common case (an SHB receiving the next message in
    #: order, ...): the same effects, states and coverage as the general rules, computed
    #: without them. ``False`` runs the general rules only (the differential tests run both).
    fast_paths: bool = attrs.field(default=True, validator=_flag)
    #: Group commit at the pubend: one stable-storage write per batch of messages instead of
    #: one per message, as a disk-backed broker at thousands of messages per second must write
    #: [GD §4.1] ("about 100 ms of latency" is the log). While a pubend's write is in flight
    #: its new messages wait; when the write completes they are written together, in one
    #: ``Persist`` of a :class:`gapless.impl.gd.state.LogBatch`. ``False`` (the default)
    #: writes each message on its own [GD §2.2].
    group_commit: bool = attrs.field(default=False, validator=_flag)
    #: Emit :class:`gapless.impl.gd.Observe` effects naming lattice transitions.
    coverage: bool = attrs.field(default=False, validator=_flag)
