"""How an SHB takes the acknowledgement of a subscriber still in catchup [DUR §2, §4.1].

The paper's rule: an acknowledgement raises ``released(s, p)`` to the CT the subscriber sent,
whether it is on the constream or still in catchup (the SHB's ``on_ack``); nothing more.
:class:`CatchupAckRule` is the seam for the tempting shortcut a planted bug takes: treating the
ack of a subscriber in catchup as if it were on the constream, so ``released(s, p)`` jumps to
``latestDelivered(p)`` and the pubend may make L what that subscriber has not consumed yet.
The binding applies :meth:`CatchupAckRule.after_ack` after every acknowledgement.
"""

from __future__ import annotations

from typing import Any, final

import attrs

from gapless.impl.durable.release import shb_acknowledge
from gapless.impl.durable.shb import ShbState
from gapless.impl.durable.storage import Flush, PutReleased

__all__ = ["CatchupAckRule"]


@final
@attrs.frozen(kw_only=True)
class CatchupAckRule:
    """``to_latest_delivered`` False: the paper (nothing after an ack); True: the planted bug
    (see the module doc)."""

    to_latest_delivered: bool = False

    def after_ack(self, state: ShbState, sub: str) -> tuple[ShbState, tuple[Any, ...]]:
        """The state and storage effects after ``sub``'s acknowledgement was taken."""
        sess = state.sessions.get(sub)
        if not self.to_latest_delivered or sess is None or not sess.catchup:
            return state, ()
        views = state.views
        effects: list[Any] = []
        for p in sorted(sess.catchup):
            view = views[p]
            ld = view.release.latest_delivered
            rel, _rej = shb_acknowledge(view.release, sub, ld)
            if rel is view.release:
                continue
            views = views.set(p, attrs.evolve(view, release=rel))  # its kept minimum follows
            effects.append(PutReleased(subscriber=state.subs[sub].number, pubend=p, timestamp=ld))
        if not effects:
            return state, ()
        return attrs.evolve(state, views=views), (*effects, Flush())
