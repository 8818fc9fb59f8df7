"""Benchmarks anyone can run: ``gapless bench <name>`` or ``python -m gapless.benchmarks.<name>``.

Targets live here, never in timed tests. Every benchmark returns a dict with a ``targets``
entry built by :func:`target`.
"""
