"""The δ-fault-tolerant publish/subscribe protocol of Kazemzadeh & Jacobsen [DFT], sans-IO.

Modules, one concern each: :mod:`~gapless.impl.dft.config` (δ, Δ, DPT, DSEQ; the policy),
:mod:`~gapless.impl.dft.tree` (the primary tree by joins), :mod:`~gapless.impl.dft.messages`
(messages, pids, the wire summary), :mod:`~gapless.impl.dft.routing` (active sessions,
directions), :mod:`~gapless.impl.dft.partitions` (pids, partition tables, tags),
:mod:`~gapless.impl.dft.seqvec` (duplicate detection),
:mod:`~gapless.impl.dft.subscriptions` (Figure 5), :mod:`~gapless.impl.dft.publications`
(Figure 8), :mod:`~gapless.impl.dft.recovery` and :mod:`~gapless.impl.dft.healing`
(§VIII: partial and full recovery; partition recovery, notifiers and pid removal),
:mod:`~gapless.impl.dft.sessions` (the failure detector),
:mod:`~gapless.impl.dft.broker` (dispatch), :mod:`~gapless.impl.dft.naive` (the §I
baseline), :mod:`~gapless.impl.dft.role` (either, by policy) and
:mod:`~gapless.impl.dft.variants` (planted bugs). ``spec/dft.md`` maps the paper to them.
"""
