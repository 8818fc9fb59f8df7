"""gapless.invariants."""
