"""Connection losses and additions disseminated into every node's connectivity graph
[GES "The connectivity graph", "Conclusion": "connection losses (or additions) are
incorporated into the connectivity graph hosted at the broker nodes"].

Theory of operation
-------------------
A node learns of its own links' failures and recoveries from ``LinkChanged``; it stamps the
change with a *version* ``(now, node)`` (virtual time, then the reporting node: a total
order, and a later report of the same link wins) and floods it to its live neighbours as
:class:`~gapless.impl.ges.messages.LinkNews`. A node that hears news newer than what it knows
about a link keeps it and passes only what was new to its other live neighbours, so the
flood ends. When a link comes up, each end also sends the other everything it knows (a
restarted node lost its table). A node avoids, when routing, the links it suspects itself
and every link the news says is down: a failed broker's links are reported by its
neighbours, so every node routes around it, not only the nodes next to it.
"""

from __future__ import annotations

from collections.abc import Iterable

from pyrsistent import PMap

__all__ = ["Entry", "News", "avoided", "merge_news"]

Version = tuple[int, int, str]
Entry = tuple[tuple[str, str], Version, bool]
"""One piece of news: a link, its version, whether it is up."""

News = PMap[tuple[str, str], tuple[Version, bool]]


def merge_news(news: News, entries: Iterable[Entry]) -> tuple[News, tuple[Entry, ...]]:
    """``news`` with every entry newer than what it holds; the entries that were new."""
    changed: list[Entry] = []
    for link, version, up in entries:
        old = news.get(link)
        if old is None or old[0] < version:
            news = news.set(link, (version, up))
            changed.append((link, version, up))
    return news, tuple(changed)


def avoided(suspected: frozenset[tuple[str, str]], news: News) -> frozenset[tuple[str, str]]:
    """The links routing avoids: suspected here, or down by the latest news."""
    return suspected | frozenset(link for link, (_v, up) in news.items() if not up)
