"""Shared pytest configuration: Hypothesis profiles picked by HYPOTHESIS_PROFILE.

* ``ci`` (the default for ``make test``): derandomized, bounded, fast enough for CI.
* ``dev``: fewer examples, for quick local iterations.
* ``mutation``: the ``ci`` examples without shrinking (``make mutation``).
* ``thorough``: many more examples and steps; run it by hand or nightly.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, Phase, settings

settings.register_profile(
    "ci",
    max_examples=100,
    derandomize=True,
    deadline=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile("dev", max_examples=30, deadline=None)
# ``make mutation``: the ci profile without shrinking — a mutant is killed by the first failing
# example, so a minimal one is wasted time; the examples generated are the ci profile's.
settings.register_profile(
    "mutation",
    max_examples=100,
    derandomize=True,
    deadline=None,
    print_blob=False,
    phases=[Phase.explicit, Phase.generate],
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile(
    "thorough",
    max_examples=2000,
    stateful_step_count=200,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
