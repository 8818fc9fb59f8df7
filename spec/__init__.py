"""gapless.spec."""
