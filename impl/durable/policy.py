"""The rules of a durable-subscription network as one policy value [DUR §2-4].

A run of the ``durable`` protocol takes one :class:`DurablePolicy`: the SHB's rules
(:class:`~gapless.impl.durable.shb.ShbPolicy`), the pubend's
(:class:`~gapless.impl.durable.pubend.PubendPolicy`), the subscribers' own
(:class:`ClientPolicy`) and the intermediate brokers'
(:class:`~gapless.impl.durable.node.NodePolicy`). :data:`PAPER_POLICY` is the paper's; each
planted bug of :mod:`gapless.impl.durable.variants` is another value.
"""

from __future__ import annotations

from typing import Final, final

import attrs

from gapless.impl.durable.ack_rule import CatchupAckRule
from gapless.impl.durable.node import NodePolicy
from gapless.impl.durable.pubend import PubendPolicy
from gapless.impl.durable.shb import ShbPolicy

__all__ = ["PAPER_POLICY", "ClientPolicy", "DurablePolicy"]


@final
@attrs.frozen(kw_only=True)
class ClientPolicy:
    """How a durable subscriber acknowledges [DUR §2]: it sends the CT of what it consumed
    (the paper); ``ack_ahead`` ticks past it (a planted bug: the CT advanced before the
    subscriber consumed what it covers)."""

    ack_ahead: int = 0

    def ack(self, consumed: int) -> int:
        """The ``CT(s, p)`` acknowledged after consuming through ``consumed``."""
        return consumed + self.ack_ahead if consumed >= 0 else consumed


@final
@attrs.frozen(kw_only=True)
class DurablePolicy:
    """The SHB's (with how it takes a catchup subscriber's ack), the pubend's, the
    subscribers' and the intermediate brokers' rules."""

    shb: ShbPolicy = attrs.field(factory=ShbPolicy)
    pubend: PubendPolicy = attrs.field(factory=PubendPolicy)
    client: ClientPolicy = attrs.field(factory=ClientPolicy)
    node: NodePolicy = attrs.field(factory=NodePolicy)
    catchup_ack: CatchupAckRule = attrs.field(factory=CatchupAckRule)


PAPER_POLICY: Final = DurablePolicy()
"""The paper's rules everywhere."""
