"""The test loop of ``_dft_net`` with joins during a run [DFT §I, §II] (tests only)."""

from __future__ import annotations

from _dft_net import Net

from gapless.impl.dft.config import PAPER_POLICY, DFTConfig, DFTPolicy
from gapless.impl.dft.role import new_joiner
from gapless.impl.dft.tree import PrimaryTree
from gapless.impl.inputs import Restart
from gapless.impl.trace import Fault

__all__ = ["JoinNet"]


class JoinNet(Net):
    """:class:`Net` whose tree grows: :meth:`join` starts a newcomer attached to a broker
    already in the tree; the failure detectors learn of the new pairs (a report about the
    newcomer to a broker that has not heard of it is ignored by the role)."""

    def __init__(
        self, tree: PrimaryTree, config: DFTConfig | None = None, policy: DFTPolicy = PAPER_POLICY
    ) -> None:
        super().__init__(tree, config, policy)
        self.policy = policy
        self.arrivals: list[tuple[str, str]] = []

    def join(self, broker: str, attach_to: str) -> None:
        state = new_joiner(
            broker, attach_to, self.tree, tuple(self.arrivals), self.config, self.policy
        )
        self.tree = self.tree.join(broker, attach_to)
        self.arrivals.append((broker, attach_to))
        self.states[broker] = state
        radius = self.config.big_delta
        self.hood = {b: self.tree.neighbourhood(b, radius) for b in self.tree.order}
        for x in self.hood[broker]:
            self.view[(broker, x)] = False
            self.view[(x, broker)] = False
        self.alive.add(broker)
        self._record(broker, "fault", Fault(kind="join", target=f"{broker}|{attach_to}"))
        self.step(broker, Restart())
        self._detect()
