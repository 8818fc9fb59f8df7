"""An intermediate broker of durable subscriptions as a pure role [DUR §3].

Theory of operation
-------------------
Between a PHB and its SHBs an intermediate broker relays knowledge down and nacks up, and takes
part in the release protocol: per pubend it keeps the proved
:class:`~gapless.impl.durable.release.NodeRelease` — the highest ``(released, delivered)`` pair
each downstream child reported — and forwards its own pair, the pointwise minimum over its
children ("the minimum timestamp that all downstream SHBs have released, and the minimum of
all latestDelivered(p)" [DUR §3]), upstream whenever it rises, with a ``dur_report`` record.

* GD :class:`~gapless.impl.gd.messages.Knowledge` and :class:`Lost` from upstream go to every
  child (an SHB ignores what it already knows; the kit's GD roles do the curiosity-driven
  routing [GD §2.4], which this relay does not repeat);
* a :class:`~gapless.impl.gd.messages.Nack` from a child goes upstream;
* a :class:`~gapless.impl.durable.release.ReleaseReport` from a child is merged
  (:func:`~gapless.impl.durable.release.node_on_report`); a malformed one or one from a node
  that is not a child is rejected.

The broker has no stable storage: a crash restarts every view at ``(NONE, NONE)`` per child,
which is safe because reports are merged by maximum upstream and the pubend's ``Tr``/``Td``
never move down (``spec/durable.md``). Network input never raises; an ignored input returns the
same state and ``()``.
"""

from __future__ import annotations

from typing import Any, final

import attrs
from pyrsistent import PMap, pmap

from gapless.impl.durable.release import NodeRelease, ReleaseReport, node_on_report
from gapless.impl.durable.shb_inputs import Emit, Lost
from gapless.impl.effects import Rejected, Send
from gapless.impl.errors import ProtocolMisuse
from gapless.impl.gd.messages import Knowledge, Nack

__all__ = [
    "DurNodeConfig",
    "DurNodeState",
    "NodePolicy",
    "node_crash",
    "node_on_receive",
    "node_start",
]

Effects = tuple[Any, ...]


@final
@attrs.frozen(kw_only=True)
class NodePolicy:
    """The broker's rule for its own pair: the minimum over its children (the paper [DUR §3]);
    ``maximum`` True: the pointwise maximum (a planted bug that releases what a lagging SHB
    still needs)."""

    maximum: bool = False

    def pair(self, view: NodeRelease) -> ReleaseReport:
        """The pair this broker reports upstream."""
        if not self.maximum:
            return view.report()
        return ReleaseReport(
            node=view.node,
            pubend=view.pubend,
            released=max(r for r, _d in view.children.values()),
            delivered=max(d for _r, d in view.children.values()),
        )


@final
@attrs.frozen(kw_only=True)
class DurNodeConfig:
    """``node``, its ``upstream`` neighbour (toward the PHB), its downstream ``children``,
    the ``pubends`` it carries and its ``policy``."""

    node: str
    upstream: str
    children: tuple[str, ...]
    pubends: tuple[str, ...]
    policy: NodePolicy = attrs.field(factory=NodePolicy)

    def __attrs_post_init__(self) -> None:
        if not self.children or not self.pubends:
            raise ProtocolMisuse(
                f"DurNodeConfig {self.node!r}: children {self.children!r}, pubends "
                f"{self.pubends!r}; allowed: at least one of each"
            )


@final
@attrs.frozen(kw_only=True)
class DurNodeState:
    """The broker (module doc): per pubend its view of the children."""

    config: DurNodeConfig
    views: PMap[str, NodeRelease]


def node_start(config: DurNodeConfig) -> DurNodeState:
    """A fresh broker: no child has reported."""
    views = {p: NodeRelease.over(config.node, p, config.children) for p in config.pubends}
    return DurNodeState(config=config, views=pmap(views))


def node_crash(state: DurNodeState) -> DurNodeState:
    """A crash loses every view (soft state)."""
    return node_start(state.config)


def _report(state: DurNodeState, msg: ReleaseReport) -> tuple[DurNodeState, Effects]:
    view = state.views.get(msg.pubend)
    if view is None:
        why = f"release report at {state.config.node!r}: unknown pubend {msg.pubend!r}"
        return state, (Rejected(reason=why, input=msg),)
    pair = state.config.policy.pair
    before = pair(view)
    view2, rej = node_on_report(view, msg)
    if rej or view2 is view:
        return state, rej
    state = attrs.evolve(state, views=state.views.set(msg.pubend, view2))
    rep = pair(view2)
    if (rep.released, rep.delivered) == (before.released, before.delivered):
        return state, ()
    return state, (Send(to=state.config.upstream, msg=rep), Emit(kind="dur_report", detail=rep))


def node_on_receive(
    state: DurNodeState, msg: Any, sender: str, now: int
) -> tuple[DurNodeState, Effects]:
    """One message from a neighbour (module doc)."""
    cfg = state.config
    if type(msg) is ReleaseReport and sender in cfg.children:
        return _report(state, msg)
    if type(msg) is Nack and sender in cfg.children:
        return state, (Send(to=cfg.upstream, msg=msg),)
    if (type(msg) is Knowledge or type(msg) is Lost) and sender == cfg.upstream:
        return state, tuple(Send(to=c, msg=msg) for c in cfg.children)
    why = f"node {cfg.node!r}: {type(msg).__name__} from {sender!r} is not expected here"
    return state, (Rejected(reason=why, input=msg),)
