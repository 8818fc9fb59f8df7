"""``gapless bench zmq``'s measurements, at toy sizes: each runs and measures something."""

from __future__ import annotations

import random

import pytest

from gapless.benchmarks import zmq as bench


def test_trie_and_device_figures_are_positive() -> None:
    rng = random.Random(1)
    figures = bench._trie(rng, n=2_000)
    assert figures["trie_ops_per_s"] > 0
    assert figures["trie_ops_per_cpu_s"] > 0
    assert figures["trie_match_per_s"] > 0
    prefixes = bench._prefixes(rng, 100)
    subs = {f"peer{i}": prefixes[i * 10 : (i + 1) * 10] for i in range(10)}
    payloads = [rng.choice(prefixes) + b"-%d" % i for i in range(200)]
    assert bench._device(subs, payloads) > 0
    assert bench._expected_copies(subs, payloads) >= len(payloads)


def test_libzmq_device_delivers_every_copy() -> None:
    pytest.importorskip("zmq", reason="pyzmq is not installed (pip install 'gapless[zmq]')")
    rng = random.Random(2)
    prefixes = bench._prefixes(rng, 40)
    subs = {f"peer{i}": prefixes[i * 4 : (i + 1) * 4] for i in range(10)}
    payloads = [rng.choice(prefixes) + b"-%d" % i for i in range(300)]
    rate = bench._libzmq(subs, payloads)
    assert rate is not None
    assert rate > 0  # 0.0 would mean an expected copy never arrived
