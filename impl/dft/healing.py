"""Partition recovery: step (iv)'s partition-recovery notifiers and step (v)'s removal of
recovered pids [DFT §VIII-A]. Our design for what the paper leaves open (``spec/dft.md``,
"Recovery").

Theory of operation
-------------------
When a sync-point S ends the partial recovery of R — every subscription it transferred is
confirmed — each pid S detected whose pnodes hold R has *recovered* (:func:`recovered`): S's
active session reaches into the partition again, and R, with everything downstream of it
that confirmed, now holds S's subscriptions. For each recovered pid p:

* *Notifier* (step iv). For every subscription s in S's SRT whose confirmation tags hold p
  (S put p there when it accepted s, Figure 5 lines 33-35), S replaces p by T' — the tags
  R's confirmation of s carried (barriers still standing downstream of R; none when R
  already had s) — and sends :class:`~gapless.impl.dft.messages.RecoveryNotifier` towards
  s's source over the active session on the primary path (the paper's p_rec "matches all
  subscriptions whose confirmation were tagged with pid_k"; we address them one by one,
  which is the same set). T' keeps only pids that exclude nothing p did not exclude: a
  notifier never widens an exclusion, since a source outside p's region was owed s's flow
  from the acceptance on (``spec/dft.md``, "Recovery"; the dft5 replay). Each broker on
  the way makes the same replacement in its SRT and passes it on (:func:`on_notifier`);
  at the source the SRT entry is written to stable storage again,
  ``Persist(("accepted", sid), tags)``: the *re-acceptance*. From then on publications
  from sources p excluded are delivered again. A notifier with no active
  session on its path is dropped: the source keeps the exclusion (safe, not live).
* *Removal* (step v). S removes p from its PT and sends
  :class:`~gapless.impl.dft.messages.PartitionHealed` to its established sessions within
  DPT; a broker holding p removes it and passes it on, as partition information travels
  [DFT §IV] (:func:`on_healed`). Healed pids are remembered (``healed``) so that a
  partition-information message overtaken by the removal does not bring p back.
* *A restarted detector* keeps its pids and its counter on stable storage; it recovers a
  pid only once its full recovery is over (its SRT, rebuilt from its sync-points, holds the
  subscriptions it confirmed with the pid again) (:func:`after_restart`).

Why the resumed flow has no hole: a publication of a source X that p excluded, published
after the re-acceptance at s's source Z, finds s accepted on all of P(X, Z) — R and its
downstream accepted s before R confirmed it to S, S confirmed to Z earlier, and S sent the
notifier only after R's confirmation — so it is routed to Z, and its tags (p at most, from a
broker that has not yet removed it) no longer meet Z's confirmation tags. Publications of X
published before the re-acceptance may be excluded or delivered; those excluded come first
(a broker tags every publication of X it processes until it removes p, and X's publications
pass it in order), so the delivered ones form a suffix. The invariants judge exactly this:
per source, the flow is owed from the first acceptance whose tags do not exclude it.
"""

from __future__ import annotations

from collections.abc import Mapping

import attrs

from gapless.impl.dft.messages import PartitionHealed, Pid, RecoveryNotifier
from gapless.impl.dft.routing import route
from gapless.impl.dft.state import Accepted, BrokerState
from gapless.impl.effects import Effect, Persist, Send

__all__ = ["after_restart", "on_healed", "on_notifier", "recovered"]

Step = tuple[BrokerState, tuple[Effect, ...]]


def _within_dpt(state: BrokerState, pid: Pid, skip: str | None) -> tuple[Effect, ...]:
    dpt = state.policy.dpt(state.config)
    tree = state.tree
    return tuple(
        Send(to=x, msg=PartitionHealed(pid=pid))
        for x in sorted(state.established)
        if x != skip and tree.distance(x, pid.detector) <= dpt
    )


def _retag(state: BrokerState, msg: RecoveryNotifier) -> Step:
    """Replace ``msg.pid`` by ``msg.tags`` in ``msg.sid``'s SRT entry; at the source write
    the entry again (the re-acceptance), elsewhere pass the notifier on."""
    entry = state.srt.get(msg.sid)
    effects: list[Effect] = []
    if entry is not None and msg.pid in entry.conf_tags:
        tags = (entry.conf_tags - {msg.pid}) | msg.tags
        entry = attrs.evolve(entry, conf_tags=tags)
        state = attrs.evolve(state, srt=state.srt.set(msg.sid, entry))
        if msg.sid in state.local:
            effects.append(Persist(key=("accepted", msg.sid), value=tags))
    if msg.source != state.me:
        hop = route(state.tree, state.me, state.active, msg.source)
        if hop is not None:
            effects.append(Send(to=hop, msg=msg))
    return state, tuple(effects)


def _narrower(state: BrokerState, q: Pid, p: Pid) -> bool:
    """Does ``q`` exclude only sources ``p`` excludes (every broker on or beyond ``q`` is on
    or beyond ``p``) [DFT §VI, Figure 8 l. 11]? A notifier never widens an exclusion: a
    source outside ``p`` was owed the subscription's flow since its acceptance."""
    tree = state.tree
    return all(
        tree.on_or_beyond(p.detector, p.pnodes, x)
        for x in tree.order
        if tree.on_or_beyond(q.detector, q.pnodes, x)
    )


def _replacements(
    state: BrokerState, pid: Pid, tags: Mapping[str, frozenset[Pid]] | None
) -> list[RecoveryNotifier] | None:
    """The notifiers for ``pid``: one per SRT entry whose confirmation tags hold it, with
    what replaces it — from ``tags`` (the recovering broker's confirmation or summary), or
    with ``tags`` None the entry's own tags but the pid (a full entry only). None when some
    entry's replacement is unknown: the pid does not recover yet."""
    notes: list[RecoveryNotifier] = []
    for sid in sorted(state.srt):
        entry: Accepted = state.srt[sid]
        if pid not in entry.conf_tags:
            continue
        if tags is None:
            rest = entry.conf_tags - {pid} if entry.full else None
        else:
            rest = tags.get(sid)
        if rest is None:
            return None
        rest = frozenset(q for q in rest if _narrower(state, q, pid))
        notes.append(RecoveryNotifier(pid=pid, sid=sid, source=entry.sub.source, tags=rest))
    return notes


def recovered(state: BrokerState, r: str, tags: Mapping[str, frozenset[Pid]] | None) -> Step:
    """Steps (iv) and (v) at sync-point ``state`` once the partial recovery of ``r`` is
    over; ``tags`` holds, per subscription ``r`` confirmed or reported in its summary, the
    tags of its confirmation (None: use this broker's own entries, :func:`after_restart`).
    A pid some entry of which has no known replacement stays (safe, not live). A restarted
    broker waits until its full recovery is over (its SRT is whole again)."""
    if not state.policy.recover_partitions or not state.restored:
        return state, ()
    pids = sorted(p for p in state.pt if p.detector == state.me and r in p.pnodes)
    effects: list[Effect] = []
    for pid in pids:
        notes = _replacements(state, pid, tags)
        if notes is None:
            continue
        for note in notes:
            state, more = _retag(state, note)
            effects += more
        state = attrs.evolve(state, pt=state.pt.remove(pid), healed=state.healed.add(pid))
        effects += _within_dpt(state, pid, None)
    return state, tuple(effects)


def after_restart(state: BrokerState) -> Step:
    """A restarted broker whose full recovery just ended: the partitions it detected before
    the crash (kept on stable storage) that hold a broker it forwards to again have
    recovered, each subscription's own entry (rebuilt through that broker) giving what
    replaces the pid [DFT §VIII-A, §VIII-B]."""
    effects: list[Effect] = []
    for x in sorted(state.fwd):
        state, more = recovered(state, x, None)
        effects += more
    return state, tuple(effects)


def on_notifier(state: BrokerState, sender: str, msg: RecoveryNotifier) -> Step:
    """A partition-recovery notifier on its way to the subscription's source."""
    return _retag(state, msg)


def on_healed(state: BrokerState, sender: str, msg: PartitionHealed) -> Step:
    """Step (v) at a broker within DPT: remove the pid and pass the news on."""
    pid = msg.pid
    if pid not in state.pt:
        if pid in state.healed:
            return state, ()
        return attrs.evolve(state, healed=state.healed.add(pid)), ()
    state = attrs.evolve(state, pt=state.pt.remove(pid), healed=state.healed.add(pid))
    return state, _within_dpt(state, pid, sender)
