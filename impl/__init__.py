"""gapless.impl."""
